"""Masking a PostgreSQL password in what the product shows (``adapters/postgres/urls.py``).

Every message a driver writes goes through `scrub` before it reaches a user: an empty password
must leave the message as it was, and every spelling of a real one (as typed, percent-decoded,
percent-encoded, in ``key=value`` form, from ``PGPASSWORD``) must be gone.
"""

from __future__ import annotations

import pytest

from unified_kg_rag.adapters.postgres.urls import password_spellings, scrub, scrub_exception

pytestmark = pytest.mark.unit

REFUSED = (
    'connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused'
)
AUTH = 'FATAL:  password authentication failed for user "postgres"'


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres:@/postgres?host=/tmp/ukr-pg",  # the guide's pgserver URL
        "postgresql://postgres@/postgres?host=/tmp/ukr-pg",
        "postgresql:///postgres?host=/tmp/ukr-pg&password=",
        "host=/tmp/ukr-pg user=postgres password='' dbname=postgres",
        "host=/tmp/ukr-pg user=postgres dbname=postgres",
    ],
)
def test_an_empty_password_leaves_messages_readable(url: str) -> None:
    assert password_spellings(url) == ()
    assert scrub(REFUSED, url) == REFUSED
    assert scrub(AUTH, url) == AUTH
    assert scrub("", url) == ""


def test_an_empty_password_in_a_quoted_url_is_not_shown_as_masked() -> None:
    url = "postgresql://postgres:@/postgres?host=/tmp/x"
    text = f'missing "=" after "{url}" in connection info string'
    assert scrub(text, url) == text


def test_an_empty_pgpassword_is_no_secret() -> None:
    assert scrub(REFUSED, "postgresql://u@h/d", environ={"PGPASSWORD": ""}) == REFUSED


def test_every_occurrence_of_the_password_is_masked() -> None:
    url = "postgresql://ukr:hunter2@db.example/ukr"
    text = "tried hunter2 twice: 'hunter2', then (hunter2)"
    assert scrub(text, url) == "tried *** twice: '***', then (***)"


def test_a_password_given_twice_in_one_url_is_masked_everywhere() -> None:
    url = "postgresql://ukr:hunter2@db.example/ukr?password=hunter2"
    text = f'invalid URI query parameter in "{url}"'
    scrubbed = scrub(text, url)
    assert "hunter2" not in scrubbed
    assert "postgresql://ukr:***@db.example/ukr" in scrubbed


@pytest.mark.parametrize(
    ("url", "message", "expected"),
    [
        # the password is the user name: the user name stays (the location shows it anyway)
        ("postgresql://postgres:postgres@/postgres?host=/tmp/x", AUTH, AUTH),
        # a password inside the user, host or database name does not cut those names up
        ("postgresql://postgres:post@db.example/postgres", AUTH, AUTH),
        ("postgresql://reader:db@db.example/shop",
         'could not translate host name "db.example" to address',
         'could not translate host name "db.example" to address'),
        ("postgresql://u:shop@db.example/shopdata",
         'FATAL:  database "shopdata" does not exist',
         'FATAL:  database "shopdata" does not exist'),
        # ... nor any other word that merely contains it
        ("postgresql://u:ass@h/d", "password authentication failed",
         "password authentication failed"),
    ],
)
def test_a_password_inside_other_names_keeps_them_readable(
    url: str, message: str, expected: str
) -> None:
    assert scrub(message, url) == expected


def test_a_password_equal_to_the_user_is_still_masked_where_it_stands_as_the_password() -> None:
    url = "postgresql://postgres:postgres@/postgres?host=/tmp/x"
    text = f'missing "=" after "{url}" in connection info string'
    assert scrub(text, url) == (
        'missing "=" after "postgresql://postgres:***@/postgres?host=/tmp/x" in connection '
        "info string"
    )
    assert scrub("user=postgres password=postgres", url) == "user=postgres password=***"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ukr:p%40ss@db/ukr", ("p%40ss", "p@ss")),
        ("postgresql://ukr:p%2Fss%20w@db/ukr", ("p%2Fss%20w", "p/ss w")),
        ("host=db user=ukr password=p@ss", ("p%40ss", "p@ss")),
    ],
)
def test_both_spellings_of_an_encoded_password_are_masked(
    url: str, shown: tuple[str, str]
) -> None:
    for spelling in shown:
        text = f"server said: {spelling} is wrong"
        assert scrub(text, url) == "server said: *** is wrong"
    assert set(shown) <= set(password_spellings(url))


def test_a_unicode_password_is_masked_in_every_spelling() -> None:
    url = "postgresql://ukr:p%C3%A4ssw%C3%B6rt@db/ukr"
    for spelling in ("pässwört", "p%C3%A4ssw%C3%B6rt"):
        assert scrub(f"got {spelling}!", url) == "got ***!"
    # a longer word that only contains it is not a match
    assert scrub("pässwörter", url) == "pässwörter"


def test_a_password_in_key_value_form_is_masked() -> None:
    url = "host=db user=ukr password='s3 cret' dbname=ukr"
    assert scrub("password='s3 cret' host=db", url) == "password=*** host=db"
    assert scrub("the value s3 cret was refused", url) == "the value *** was refused"


def test_pgpassword_is_masked() -> None:
    text = "password authentication failed; PGPASSWORD=fromenv123 was used (fromenv123)"
    scrubbed = scrub(text, "postgresql://u@h/d", environ={"PGPASSWORD": "fromenv123"})
    assert "fromenv123" not in scrubbed


def test_the_longest_spelling_is_masked_first() -> None:
    # "p%40ss" contains neither spelling's remains after masking
    url = "postgresql://ukr:p%40ss@db/ukr"
    assert scrub("p%40ss and p@ss", url) == "*** and ***"


def test_an_exception_chain_is_scrubbed_in_place() -> None:
    url = "postgresql://ukr:hunter2@db/ukr"
    inner = ValueError("bad conninfo 'postgresql://ukr:hunter2@db/ukr'")
    outer = RuntimeError("while connecting with hunter2")
    outer.__cause__ = inner
    scrub_exception(outer, url)
    assert "hunter2" not in str(outer) and "hunter2" not in repr(outer)
    assert "hunter2" not in str(inner) and "postgresql://ukr:***@db/ukr" in str(inner)


def test_an_exception_chain_with_an_empty_password_is_left_alone() -> None:
    exc = RuntimeError(REFUSED)
    scrub_exception(exc, "postgresql://postgres:@/postgres?host=/tmp/x")
    assert str(exc) == REFUSED


def test_an_unparsable_key_value_string_still_has_its_password_masked() -> None:
    url = "host=h password='unterminated"
    assert scrub(f"bad conninfo: {url}", url) == "bad conninfo: host=h password=***"
    assert scrub("password='' host=h", "host=h password=''") == "password='' host=h"
