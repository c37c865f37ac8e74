"""Connection URLs as users type them: where they point, without the password.

`masked_location` names a server in messages and ``ukr status``; `scrub` removes a password
from any message a driver wrote (psycopg quotes the connection string it could not parse), and
`scrub_exception` from a driver exception kept as the cause of a store error (``--verbose``
prints it). All work on input that is not a valid URL, since that is when messages are written.

What counts as the password (`password_spellings`): the URL's password as typed, percent-
decoded and percent-encoded, a ``password=`` keyword or query parameter, and ``PGPASSWORD``
(libpq's fallback). An empty password is no secret: masking "" would put ``***`` between every
character of the message.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from urllib.parse import quote, unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict

__all__ = ["masked_location", "password_spellings", "scrub", "scrub_exception"]

_URL = re.compile(r"^\s*(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$", re.S)
_URL_USERINFO = re.compile(r"(://[^:/@\s]*):[^\s]+@")
"""The password of a URL quoted in a message (``://user:PASSWORD@``), when not empty."""
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)+'|(?!''(?!\S))\S+)", re.I)
"""A ``password=`` keyword (also ``PGPASSWORD=``, ``?password=``), when not empty."""
_MASK = "***"


def masked_location(url: str) -> str:
    """Return where ``url`` points as ``scheme://user@host:port/dbname``, without the password.

    Works on what users type even when it is not a valid URL (a password with ``/`` or ``@``
    in it, a SQLAlchemy ``postgresql+psycopg://`` URL): everything before the last ``@`` but
    the user name, and every query parameter, are left out. A ``key=value`` connection string
    shows its host, port, user and database. The password never appears.
    """
    match = _URL.match(url)
    if match is not None:
        rest = match["rest"]
        user = ""
        if "@" in rest:
            userinfo, rest = rest.rsplit("@", 1)
            user = userinfo.split(":", 1)[0].split("?", 1)[0] + "@"
        return f"{match['scheme']}://{user}{rest.split('?', 1)[0]}"
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "postgresql://(unparsable connection string)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"


def password_spellings(
    url: str, *, environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """Return every spelling of the password ``url`` connects with, longest first.

    Args:
        url: a libpq connection URL or ``key=value`` string (valid or not).
        environ: the environment libpq reads ``PGPASSWORD`` from (default: ``os.environ``).

    Returns:
        The distinct non-empty spellings: the URL's password as typed and percent-decoded,
        the percent-encoded form of the decoded one, a ``password`` keyword or query
        parameter, and ``PGPASSWORD``. Empty when there is no password.
    """
    found: list[str] = []
    match = _URL.match(url)
    if match is not None and "@" in match["rest"]:
        userinfo = match["rest"].rsplit("@", 1)[0]
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    with contextlib.suppress(psycopg.Error):
        found.append(str(conninfo_to_dict(url).get("password") or ""))
    found.append((os.environ if environ is None else environ).get("PGPASSWORD", ""))
    spellings = {s for raw in found for s in (raw, unquote(raw), quote(unquote(raw), safe=""))}
    spellings.discard("")
    return tuple(sorted(spellings, key=lambda s: (-len(s), s)))


def _public_words(url: str) -> set[str]:
    """Return the words of the user, host, port and database name ``url`` names."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return set()
    values = (str(parts.get(key) or "") for key in ("user", "host", "hostaddr", "port", "dbname"))
    return {word for value in values for word in (value, *re.split(r"\W+", value)) if word}


def _standalone(secret: str) -> re.Pattern[str]:
    """Return a pattern matching ``secret`` where it is not part of a longer word."""
    before = r"(?<!\w)" if re.match(r"\w", secret) else ""
    after = r"(?!\w)" if re.search(r"\w$", secret) else ""
    return re.compile(before + re.escape(secret) + after)


def scrub(text: str, url: str, *, environ: Mapping[str, str] | None = None) -> str:
    """Return ``text`` (an error message) with the password of ``url`` replaced by ``***``.

    Where a message gives the password its place (``://user:PASSWORD@``, ``password=...``)
    it is masked whatever it is. Elsewhere each spelling (`password_spellings`) is masked
    where it stands as a word of its own, so a password found inside a longer word leaves the
    word alone. A password that is also the user, host, port or database name (or a word of
    one) is masked only in its place: the location printed with every message shows those
    names anyway, and masking them would only hide which user or database failed.

    Args:
        text: the message.
        url: the connection URL or ``key=value`` string the message is about.
        environ: where ``PGPASSWORD`` is read (default: ``os.environ``).

    Returns:
        The message; unchanged when the connection has no password.
    """
    public = _public_words(url)
    for secret in password_spellings(url, environ=environ):
        if secret not in public:
            text = _standalone(secret).sub(_MASK, text)
    text = _URL_USERINFO.sub(rf"\1:{_MASK}@", text)
    return _KEYWORD_PASSWORD.sub(rf"\1{_MASK}", text)


def scrub_exception(
    exc: BaseException, url: str, *, environ: Mapping[str, str] | None = None
) -> None:
    """Scrub the messages of ``exc`` and of the exceptions it was raised from, in place.

    A store error keeps the driver's exception as its cause; a traceback (``--verbose``)
    prints the cause's message, which may quote the connection string. Each string argument
    of every exception in the ``__cause__``/``__context__`` chain goes through `scrub`.

    Args:
        exc: the exception (its chain is followed, each exception once).
        url: the connection URL or ``key=value`` string.
        environ: where ``PGPASSWORD`` is read (default: ``os.environ``).
    """
    if not password_spellings(url, environ=environ) and not _URL_USERINFO.search(url):
        return
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.args = tuple(
            scrub(a, url, environ=environ) if isinstance(a, str) else a for a in current.args
        )
        pending += [current.__cause__, current.__context__]
