"""The synthetic iMessage corpus: deterministic, complete, and filler clear of golden terms."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.chat_corpus import (
    ChatCorpus,
    generate_chat_corpus,
    golden_blocklist,
    write_handles_yaml,
)
from tests.support.chat_script import THREADS
from tests.support.chatdb import schema_available

pytestmark = pytest.mark.unit

SCHEMA = "macos" if schema_available("macos") else "minimal"
SMALL = {"messages": 600, "threads": 12}
APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)


def _small(path: Path, **kwargs: object) -> ChatCorpus:
    return generate_chat_corpus(path, schema=SCHEMA, **{**SMALL, **kwargs})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> ChatCorpus:
    return _small(tmp_path_factory.mktemp("small") / "chat.db")


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> ChatCorpus:
    return generate_chat_corpus(tmp_path_factory.mktemp("full") / "chat.db", schema=SCHEMA)


# ----------------------------------------------------------------------------- reading back


def _rows(path: Path) -> list[dict[str, Any]]:
    """Every message row with its sender address and chat guids, ordered by guid."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        chats: dict[int, list[str]] = {}
        for message_id, chat_guid in conn.execute(
            "SELECT j.message_id, c.guid FROM chat_message_join j JOIN chat c "
            "ON c.ROWID = j.chat_id ORDER BY c.guid"
        ):
            chats.setdefault(message_id, []).append(chat_guid)
        rows = conn.execute(
            """
            SELECT m.ROWID AS rowid, m.guid, m.text, m.attributedBody AS body, m.date,
                   m.is_from_me, h.id AS address, m.associated_message_type AS assoc_type,
                   m.associated_message_guid AS assoc_guid
            FROM message m LEFT JOIN handle h ON h.ROWID = m.handle_id
            ORDER BY m.guid
            """
        ).fetchall()
    finally:
        conn.close()
    return [
        {**dict(row), "chats": "|".join(chats.get(row["rowid"], [])) or None} for row in rows
    ]


def _chats(path: Path) -> list[tuple[str, str | None, int]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT c.guid, c.display_name, (SELECT count(*) FROM chat_handle_join j "
            "WHERE j.chat_id = c.ROWID) FROM chat c ORDER BY c.guid"
        ).fetchall()
    finally:
        conn.close()


def _content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    for row in _rows(path):
        digest.update(repr(sorted((k, v) for k, v in row.items() if k != "rowid")).encode())
    for chat in _chats(path):
        digest.update(repr(chat).encode())
    return digest.hexdigest()


def _when(raw: int) -> datetime:
    if raw >= 100_000_000_000:
        return APPLE_EPOCH + timedelta(microseconds=raw // 1000)
    return APPLE_EPOCH + timedelta(seconds=raw)


def _body(row: dict[str, Any]) -> str:
    if row["text"]:
        return str(row["text"])
    return bytes(row["body"] or b"").decode("utf-8", "replace")


def _real(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if not r["assoc_type"]]


def _filler_texts(corpus: ChatCorpus) -> list[str]:
    scripted = set(corpus.scripted_guids)
    return [_body(r) for r in _real(_rows(corpus.path)) if r["guid"] not in scripted]


# ----------------------------------------------------------------------------- determinism


def test_same_arguments_give_the_same_content(small: ChatCorpus, tmp_path: Path) -> None:
    again = _small(tmp_path / "again.db")
    assert _content_hash(again.path) == _content_hash(small.path)
    assert again.path.read_bytes() == small.path.read_bytes()  # even the file is identical
    assert again == ChatCorpus(**{**vars(small), "path": again.path})


def test_another_seed_gives_other_guids_and_filler(small: ChatCorpus, tmp_path: Path) -> None:
    other = _small(tmp_path / "other.db", seed=14)
    assert _content_hash(other.path) != _content_hash(small.path)
    assert not set(other.scripted_guids) & set(small.scripted_guids)
    assert Counter(_filler_texts(other)) != Counter(_filler_texts(small))


def test_scripted_guids_do_not_depend_on_the_profile(small: ChatCorpus, full: ChatCorpus) -> None:
    assert small.scripted_guids == full.scripted_guids
    assert [q.required_guids for q in small.questions] == [
        q.required_guids for q in full.questions
    ]


# ----------------------------------------------------------------------------- counts


def test_full_profile_counts_and_range(full: ChatCorpus) -> None:
    rows = _rows(full.path)
    real = _real(rows)
    assert full.messages == len(real) == 10_000
    assert full.threads == len(_chats(full.path)) == 50
    days = sorted(_when(r["date"]).date() for r in real)
    assert (days[0], days[-1]) == (full.first_day, full.last_day)
    assert (full.first_day, full.last_day) == (date(2013, 1, 2), date(2024, 12, 26))
    assert 220 <= len(full.scripted_guids) <= 300
    assert len(set(r["guid"] for r in rows)) == len(rows)
    # every chat holds messages, and the years are all populated
    chats_used = {c for r in real if r["chats"] for c in r["chats"].split("|")}
    assert len(chats_used) == 50
    assert {_when(r["date"]).year for r in real} == set(range(2013, 2025))


def test_small_profile_has_every_scripted_message_and_question(small: ChatCorpus) -> None:
    guids = {r["guid"] for r in _real(_rows(small.path))}
    assert small.messages == len(guids) == 600
    assert small.threads == len(_chats(small.path)) == 12
    assert set(small.scripted_guids) <= guids
    assert len(small.questions) == 30
    assert {g for q in small.questions for g in q.required_guids} <= guids


def test_too_small_a_profile_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="messages must be at least"):
        generate_chat_corpus(tmp_path / "a.db", messages=100, schema=SCHEMA)
    with pytest.raises(ValueError, match="threads must be at least"):
        generate_chat_corpus(tmp_path / "b.db", threads=5, schema=SCHEMA)
    with pytest.raises(ValueError, match="must cover"):
        generate_chat_corpus(tmp_path / "c.db", start=date(2015, 1, 1), schema=SCHEMA)


# ----------------------------------------------------------------------------- questions


def test_question_kinds_and_evidence_sizes(small: ChatCorpus) -> None:
    kinds = Counter(q.kind for q in small.questions)
    assert kinds == {"aggregation": 10, "verification": 10, "relation": 10}
    assert len({q.id for q in small.questions}) == 30
    by_guid = {r["guid"]: r for r in _rows(small.path)}
    for q in small.questions:
        n = len(q.required_guids)
        assert (3 <= n <= 6) if q.kind == "aggregation" else (1 <= n <= 2), q.id
        assert q.facts and all(q.facts), q.id
        if q.kind == "aggregation":  # spread over the years
            years = {_when(by_guid[g]["date"]).year for g in q.required_guids}
            assert len(years) >= 3, q.id


def test_required_messages_exist_with_a_body(small: ChatCorpus) -> None:
    by_guid = {r["guid"]: r for r in _rows(small.path)}
    for q in small.questions:
        for guid in q.required_guids:
            row = by_guid[guid]
            assert not row["assoc_type"]
            assert row["text"] or row["body"], (q.id, guid)
            assert guid in small.scripted_guids


def test_every_fact_is_in_the_required_evidence(small: ChatCorpus) -> None:
    """Each OR-group is met by the required messages: text, sender, date, or reactors."""
    rows = _rows(small.path)
    by_guid = {r["guid"]: r for r in rows}
    reactors: dict[str, list[str]] = {}
    for r in rows:
        if 2000 <= (r["assoc_type"] or 0) < 2006:
            target = r["assoc_guid"].split("/")[-1].removeprefix("bp:")
            reactors.setdefault(target, []).append(
                small.owner_label if r["is_from_me"] else small.handles[r["address"]]
            )
    for q in small.questions:
        parts = []
        for guid in q.required_guids:
            row = by_guid[guid]
            when = _when(row["date"])
            sender = small.owner_label if row["is_from_me"] else small.handles[row["address"]]
            parts += [_body(row), sender, f"{when:%B %Y}", *reactors.get(guid, [])]
        evidence = "\n".join(parts).lower()
        for group in q.facts:
            assert any(alt.lower() in evidence for alt in group), (q.id, group)


def test_filler_never_contains_a_golden_term(full: ChatCorpus) -> None:
    facts = {alt.lower() for q in full.questions for group in q.facts for alt in group}
    pattern = re.compile(
        r"(?<!\w)(?:" + "|".join(re.escape(f) for f in sorted(facts, key=len, reverse=True))
        + r")(?!\w)",
        re.IGNORECASE,
    )
    blocklist = golden_blocklist()
    filler = _filler_texts(full)
    assert len(filler) == 10_000 - len(full.scripted_guids)
    for text in filler:
        assert not pattern.search(text), text
        assert not blocklist.hits(text), text
    scripted_names = {t.name for t in THREADS}
    for _, name, _ in _chats(full.path):
        assert name is None or name in scripted_names or not blocklist.hits(name), name
    # the blocklist really bites on golden text
    assert blocklist.hits("Back from Lisbon in March") == ["lisbon"]
    assert blocklist.hits("my Computers hate me") == ["computers"]


# ----------------------------------------------------------------------------- iMessage shape


def test_both_epoch_eras_and_the_switch(full: ChatCorpus) -> None:
    rows = _rows(full.path)
    nanos = [r for r in rows if r["date"] >= 100_000_000_000]
    seconds = [r for r in rows if r["date"] < 100_000_000_000]
    assert nanos and seconds
    assert all(_when(r["date"]).year >= 2017 for r in nanos)
    assert all(_when(r["date"]).year < 2017 for r in seconds)


def test_tapbacks_attributed_bodies_and_joins(small: ChatCorpus) -> None:
    rows = _rows(small.path)
    by_guid = {r["guid"]: r for r in rows}
    scripted = set(small.scripted_guids)
    taps = [r for r in rows if r["assoc_type"]]
    scripted_taps = [
        r for r in taps if r["assoc_guid"].split("/")[-1].removeprefix("bp:") in scripted
    ]
    assert len([r for r in scripted_taps if r["assoc_type"] < 3000]) >= 6
    removals = [r for r in scripted_taps if r["assoc_type"] >= 3000]
    assert len(removals) == 1
    added = {(r["assoc_guid"], r["address"], r["assoc_type"]) for r in scripted_taps}
    removal = removals[0]
    assert (removal["assoc_guid"], removal["address"], removal["assoc_type"] - 1000) in added
    for r in taps:  # every tapback points at a real message, with Apple's prefixes
        assert re.fullmatch(r"(p:0/|bp:)[0-9A-F-]{36}", r["assoc_guid"])
        assert r["assoc_guid"].split("/")[-1].removeprefix("bp:") in by_guid
    required = {g for q in small.questions for g in q.required_guids}
    body_only = [r for r in rows if r["text"] is None and r["body"]]
    assert len([r for r in body_only if r["guid"] in required]) >= 2
    for r in body_only:
        assert bytes(r["body"]).startswith(b"\x04\x0bstreamtyped")
    joins = Counter(len(r["chats"].split("|")) if r["chats"] else 0 for r in _real(rows))
    assert joins[0] == 1 and joins[2] == 1  # one message in no chat, one in two chats
    assert {r["guid"] for r in _real(rows) if not r["chats"]} <= required


def test_people_chats_and_handles_file(small: ChatCorpus, tmp_path: Path) -> None:
    names = Counter(small.handles.values())
    assert 18 <= len(names) <= 22
    assert max(names.values()) >= 2  # someone has two addresses
    chats = _chats(small.path)
    groups = [c for c in chats if c[2] > 1]
    assert any(name is None for _, name, _ in groups)
    assert any(name for _, name, _ in groups)
    assert sum(1 for c in chats if c[2] == 1) >= 6
    from_me = [r for r in _real(_rows(small.path)) if r["is_from_me"]]
    assert len(from_me) > 50
    path = write_handles_yaml(small, tmp_path / "handles.yaml")
    assert yaml.safe_load(path.read_text(encoding="utf-8")) == small.handles
