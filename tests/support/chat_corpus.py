"""A deterministic, realistic synthetic iMessage ``chat.db`` with golden questions.

`generate_chat_corpus` writes a real ``chat.db`` (`tests.support.chatdb.ChatDb`, Apple's
macOS schema by default) holding:

* the hand-scripted conversations of `tests.support.chat_script` (fixed text and dates, every
  golden anchor, tapbacks with one removal, attributedBody-only rows, a message joined to two
  chats, one joined to none), present in every profile;
* everyday filler (`tests.support.chat_filler`) up to ``messages``, spread over ``threads``
  chats and the ``start``..``end`` days; filler is re-drawn until it contains no golden term
  (`golden_blocklist`), so only scripted messages can answer a golden question.

Dates before 2017 are stored in Apple seconds, from 2017 on in Apple nanoseconds (the era
switch real archives carry). Randomness comes only from ``random.Random`` seeded by the
``seed`` argument (one stream for scripted guids, one for filler), so the same arguments give
the same guids, texts and dates; scripted guids do not depend on the profile size.

Usage::

    corpus = generate_chat_corpus(tmp_path / "chat.db", messages=600, threads=12)
    write_handles_yaml(corpus, tmp_path / "handles.yaml")
    for q in corpus.questions: ...

Source: seed 004 (ADR-017's bake-off corpus: seed 13, 10,001 messages over 50 threads from
2013-01-02 to 2024-12-26, scripted anchors plus blocklisted filler, AND-of-OR-group facts).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from tests.support.chat_filler import Blocklist, FillerWriter
from tests.support.chat_script import (
    BODY_ONLY,
    EXTRA_CHATS,
    KEY_TERMS,
    ME,
    PEOPLE,
    QUESTIONS,
    SCENES,
    THREADS,
)
from tests.support.chatdb import ChatDb, apple_nanos, apple_seconds, typedstream_body

__all__ = [
    "NANOS_FROM_YEAR",
    "OWNER_LABEL",
    "TAPBACK_TYPES",
    "ChatCorpus",
    "GoldenQuestion",
    "generate_chat_corpus",
    "golden_blocklist",
    "index_chat_corpus",
    "write_handles_yaml",
]

OWNER_LABEL = "Me"
"""Display name of the archive owner (``is_from_me`` rows)."""

NANOS_FROM_YEAR = 2017
"""Messages from this year on store ``date`` in nanoseconds, earlier ones in seconds."""

TAPBACK_TYPES = {"loved": 0, "liked": 1, "disliked": 2, "laughed": 3, "emphasized": 4,
                 "questioned": 5}
"""Tapback kind -> offset from ``associated_message_type`` 2000 (add) / 3000 (remove)."""

_CIRCLES: tuple[tuple[str, ...], ...] = (
    ("mom", "dad", "jordan", "rachel", "carol"),
    ("priya", "marcus", "dana", "bea", "owen", "theo", "nadia", "sophie", "ines", "sunil"),
    ("grace", "kenji", "hector", "ruth", "lucy"),
)
"""Family, Bay Area friends, Seattle people: filler group chats draw from one circle."""

_ADD_VERB = {"loved": "Loved", "liked": "Liked", "disliked": "Disliked",
             "laughed": "Laughed at", "emphasized": "Emphasized", "questioned": "Questioned"}
_REMOVE_NOUN = {"loved": "a heart", "liked": "a like", "disliked": "a dislike",
                "laughed": "a laugh", "emphasized": "an exclamation",
                "questioned": "a question mark"}


@dataclass(frozen=True)
class GoldenQuestion:
    """A golden question and what a correct, grounded answer must show.

    Attributes:
        id: stable id (``agg-…``, ``ver-…``, ``rel-…``).
        kind: ``aggregation`` | ``verification`` | ``relation`` (never shown to a system).
        question: phrased as a user would ask it.
        required_guids: exactly the scripted messages carrying the evidence.
        facts: AND of OR-groups; an answer passes a group when it contains (case-insensitive
            substring) any alternative of it.
    """

    id: str
    kind: str
    question: str
    required_guids: tuple[str, ...]
    facts: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class ChatCorpus:
    """A generated ``chat.db`` and its golden questions.

    Attributes:
        path: the database file.
        handles: address (phone or e-mail) -> display name (the ``--handles`` mapping).
        owner_label: display name of ``is_from_me`` messages.
        questions: the golden questions.
        messages: real message rows (tapback rows not counted).
        threads: chats in the database.
        scripted_guids: guids of the scripted messages, in script order.
        first_day: UTC day of the oldest message.
        last_day: UTC day of the newest message.
    """

    path: Path
    handles: dict[str, str]
    owner_label: str
    questions: tuple[GoldenQuestion, ...]
    messages: int
    threads: int
    scripted_guids: tuple[str, ...]
    first_day: date
    last_day: date


@dataclass
class _Chat:
    key: str
    guid: str
    name: str | None
    members: tuple[str, ...]  # person keys, owner excluded
    address: dict[str, str]  # person key -> address used in this chat
    service: str = "iMessage"
    weight: float = 1.0
    first: date = date.min
    last: date = date.max


@dataclass
class _Row:
    at: datetime
    guid: str
    text: str
    sender: str  # person key or ME
    chats: tuple[str, ...]  # chat keys; () = joined to no chat
    body_only: bool = False
    assoc_type: int = 0
    assoc_guid: str | None = None


def golden_blocklist() -> Blocklist:
    """Return the blocklist filler is kept clear of: every fact alternative plus `KEY_TERMS`."""
    facts = {alt for q in QUESTIONS for group in q.facts for alt in group}
    return Blocklist(facts | KEY_TERMS)


def generate_chat_corpus(
    path: Path,
    *,
    seed: int = 13,
    messages: int = 10_000,
    threads: int = 50,
    start: date = date(2013, 1, 2),
    end: date = date(2024, 12, 26),
    schema: str = "macos",
) -> ChatCorpus:
    """Write a synthetic ``chat.db`` at ``path`` and return its description.

    Args:
        path: the database file to create (must not exist).
        seed: seeds every random choice (guids, filler, chat ids).
        messages: real messages in all, scripted ones included (tapbacks come on top).
        threads: chats in all, the scripted ones included.
        start: first day filler may use (the oldest filler message is on it).
        end: last day filler may use (the newest filler message is on it).
        schema: a `tests.support.chatdb.SCHEMAS` key (``minimal`` when the dumps are absent).

    Returns:
        The corpus: path, handle names, golden questions, counts and day range.

    Raises:
        ValueError: ``messages``/``threads`` below the scripted counts, or ``start``..``end``
            does not cover the scripted days.
        FileExistsError: ``path`` exists.
    """
    n_scripted = sum(len(scene.lines) for scene in SCENES)
    if messages < n_scripted:
        raise ValueError(f"messages must be at least {n_scripted} (the scripted ones)")
    if threads < len(THREADS):
        raise ValueError(f"threads must be at least {len(THREADS)} (the scripted ones)")
    if not start <= SCENES[0].at.date() or not SCENES[-1].at.date() <= end:
        raise ValueError(f"start..end must cover {SCENES[0].at.date()}..{SCENES[-1].at.date()}")
    script_rng = random.Random(f"chat-corpus:{seed}:script")
    filler_rng = random.Random(f"chat-corpus:{seed}:filler")
    chats = _scripted_chats(script_rng, start, end)
    scripted, labels = _scripted_rows(script_rng)
    writer = FillerWriter(filler_rng, golden_blocklist())
    chats.update(_filler_chats(filler_rng, writer, threads - len(chats), start, end))
    busy = {(key, row.at.date()) for row in scripted for key in row.chats}
    filler = _filler_rows(filler_rng, writer, chats, messages - n_scripted, busy, start, end)
    _write(path, schema, chats, [*scripted, *filler])
    questions = tuple(
        GoldenQuestion(q.id, q.kind, q.question, tuple(labels[x] for x in q.labels), q.facts)
        for q in QUESTIONS
    )
    real = [row for row in [*scripted, *filler] if not row.assoc_type]
    return ChatCorpus(
        path=path,
        handles={a: p.name for p in PEOPLE for a in p.addresses},
        owner_label=OWNER_LABEL,
        questions=questions,
        messages=len(real),
        threads=len(chats),
        scripted_guids=tuple(row.guid for row in scripted if not row.assoc_type),
        first_day=min(row.at for row in real).date(),
        last_day=max(row.at for row in real).date(),
    )


def write_handles_yaml(corpus: ChatCorpus, path: Path) -> Path:
    """Write ``corpus.handles`` as a YAML mapping ``"address": "name"`` (the ``--handles`` file).

    Returns:
        ``path``.
    """
    lines = ["# handle -> display name (synthetic iMessage corpus)"]
    lines += [f"{json.dumps(a)}: {json.dumps(n)}" for a, n in corpus.handles.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def index_chat_corpus(work: Path, *, schema: str, messages: int = 300) -> tuple[ChatCorpus, Path]:
    """Generate the corpus (12 threads) in ``work/chat.db`` and index it with ``ukr index
    --source imessage`` into the project ``work/p`` (no ``UKR_`` variable of this process
    reaches the CLI); return the corpus and the project folder."""
    import os

    from typer.testing import CliRunner

    from unified_kg_rag.cli.app import app

    corpus = generate_chat_corpus(work / "chat.db", messages=messages, threads=12, schema=schema)
    handles = write_handles_yaml(corpus, work / "handles.yaml")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("UKR_")}
    result = CliRunner(env=env).invoke(app, [
        "index", str(corpus.path), "--source", "imessage", "--handles", str(handles),
        "-C", str(work / "p")])  # fmt: skip
    assert result.exit_code == 0, result.output
    return corpus, work / "p"


# ----------------------------------------------------------------------------- chats


def _guid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()


def _group_guid(rng: random.Random) -> str:
    return f"iMessage;+;chat{rng.randrange(10**17, 10**18)}"


def _primary(key: str) -> str:
    return next(p.addresses[0] for p in PEOPLE if p.key == key)


def _scripted_chats(rng: random.Random, start: date, end: date) -> dict[str, _Chat]:
    chats: dict[str, _Chat] = {}
    for spec in THREADS:
        if spec.address is not None:
            guid = f"{spec.service};-;{spec.address}"
            address = {spec.members[0]: spec.address}
        else:
            guid = _group_guid(rng)
            address = {m: _primary(m) for m in spec.members}
        chats[spec.key] = _Chat(spec.key, guid, spec.name, spec.members, address, spec.service,
                                weight=3.0, first=start, last=end)
    return chats


def _filler_chats(
    rng: random.Random, writer: FillerWriter, count: int, start: date, end: date
) -> dict[str, _Chat]:
    """1:1 chats with contacts who have none scripted (Dad over SMS), then group chats."""
    have_direct = {s.members[0] for s in THREADS if s.address is not None}
    singles = [p for p in PEOPLE if p.key not in have_direct]
    chats: dict[str, _Chat] = {}
    seen_groups: set[frozenset[str]] = {frozenset(s.members) for s in THREADS}
    while len(chats) < count:
        if singles:
            person = singles.pop(0)
            service = "SMS" if person.key == "dad" else "iMessage"
            address = person.addresses[0]
            chat = _Chat(f"direct-{person.key}", f"{service};-;{address}", None, (person.key,),
                         {person.key: address}, service, weight=rng.uniform(0.5, 3.0))
        else:
            members = _group_members(rng)
            if frozenset(members) in seen_groups:
                continue
            seen_groups.add(frozenset(members))
            chat = _Chat(f"group-{len(chats)}", _group_guid(rng), writer.group_name(), members,
                         {m: _primary(m) for m in members}, weight=rng.uniform(0.3, 2.0))
        span = (end - start).days
        width = min(365, span)  # a chat is active for at least a year
        a, b = sorted(rng.randint(0, span) for _ in range(2))
        if b - a < width:
            a = max(0, b - width)
            b = a + width
        chat.first, chat.last = start + timedelta(days=a), start + timedelta(days=b)
        chats[chat.key] = chat
    return chats


def _group_members(rng: random.Random) -> tuple[str, ...]:
    """2-5 people from one social circle, now and then with one outsider."""
    circle = rng.choices(_CIRCLES, [len(c) for c in _CIRCLES])[0]
    members = set(rng.sample(circle, rng.randint(2, min(5, len(circle)))))
    if rng.random() < 0.15:
        members.add(rng.choice([p.key for p in PEOPLE if p.key not in circle]))
    return tuple(sorted(members))


# ----------------------------------------------------------------------------- rows


def _scripted_rows(rng: random.Random) -> tuple[list[_Row], dict[str, str]]:
    """Scripted messages (fixed texts and times; guids from ``rng``) and their tapbacks."""
    rows: list[_Row] = []
    labels: dict[str, str] = {}
    for scene in SCENES:
        at = scene.at
        by_label: dict[str, _Row] = {}
        for i, line in enumerate(scene.lines):
            if i:
                at += timedelta(minutes=1 + len(scene.lines[i - 1].text) // 40 + i % 3)
            stamp = at.replace(second=len(line.text) * 7 % 60,
                               microsecond=len(line.text) * 7919 % 1_000_000)
            chats = () if scene.thread is None else (scene.thread, *EXTRA_CHATS.get(line.label, ()))
            row = _Row(stamp, _guid(rng), line.text, line.sender, chats,
                       body_only=line.label in BODY_ONLY)
            rows.append(row)
            if line.label:
                labels[line.label] = row.guid
                by_label[line.label] = row
        for j, reaction in enumerate(scene.reactions):
            target = by_label[reaction.target]
            when = target.at + timedelta(minutes=2 + j, seconds=11 * j)
            rows.append(_tapback(rng, target, reaction.by, reaction.kind, when, remove=False))
            if reaction.removed_after_min is not None:
                later = when + timedelta(minutes=reaction.removed_after_min)
                rows.append(_tapback(rng, target, reaction.by, reaction.kind, later, remove=True))
    return rows, labels


def _tapback(
    rng: random.Random, target: _Row, by: str, kind: str, at: datetime, *, remove: bool
) -> _Row:
    quoted = f"“{target.text}”"
    text = (f"Removed {_REMOVE_NOUN[kind]} from {quoted}" if remove
            else f"{_ADD_VERB[kind]} {quoted}")
    prefix = "p:0/" if target.at.year >= NANOS_FROM_YEAR else "bp:"
    return _Row(at, _guid(rng), text, by, target.chats,
                assoc_type=(3000 if remove else 2000) + TAPBACK_TYPES[kind],
                assoc_guid=prefix + target.guid)


def _filler_rows(
    rng: random.Random, writer: FillerWriter, chats: dict[str, _Chat], count: int,
    busy: set[tuple[str, date]], start: date, end: date,
) -> list[_Row]:
    """``count`` filler messages in exchanges; every chat gets one exchange first."""
    rows: list[_Row] = []
    keys = list(chats)
    weights = [chats[k].weight for k in keys]
    made = 0
    exchange = 0
    while made < count:
        key = keys[exchange] if exchange < len(keys) else rng.choices(keys, weights)[0]
        chat = chats[key]
        day = _filler_day(rng, chat, busy, start, end, exchange)
        lines = writer.exchange()
        speakers = _speakers(rng, chat)
        lines = [(role, text) for role, text in lines if role in speakers][: count - made]
        at = datetime.combine(day, time(14), UTC) + timedelta(minutes=rng.randint(0, 510))
        part: list[_Row] = []
        for role, text in lines:
            at += timedelta(minutes=rng.randint(0, 9), seconds=rng.randint(5, 59),
                            microseconds=rng.randint(0, 999_999))
            part.append(_Row(at, _guid(rng), text, speakers[role], (key,)))
        if len(part) > 1 and rng.random() < 0.06:
            target = rng.choice(part)
            others = [s for s in (ME, *chat.members) if s != target.sender]
            kind = rng.choice(("loved", "liked", "laughed", "laughed", "emphasized"))
            when = part[-1].at + timedelta(minutes=1)
            part.append(_tapback(rng, target, rng.choice(others), kind, when, remove=False))
        rows.extend(part)
        made += len(lines)
        exchange += 1
    return rows


def _filler_day(
    rng: random.Random, chat: _Chat, busy: set[tuple[str, date]], start: date, end: date,
    exchange: int,
) -> date:
    if exchange == 0:
        return start  # the oldest message sits on `start`,
    if exchange == 1:
        return end  # the newest on `end`
    day = chat.first
    for _ in range(50):
        day = chat.first + timedelta(days=rng.randint(0, (chat.last - chat.first).days))
        if (chat.key, day) not in busy:
            break
    return day


def _speakers(rng: random.Random, chat: _Chat) -> dict[str, str]:
    """Map roles A/B(/C) to senders: the owner and the peer, or up to three group members."""
    if len(chat.members) == 1:
        pair = [ME, chat.members[0]]
        rng.shuffle(pair)
        return {"A": pair[0], "B": pair[1]}
    pool = [ME, *chat.members]
    chosen = rng.sample(pool, 3)
    return dict(zip("ABC", chosen, strict=True))


# ----------------------------------------------------------------------------- writing


def _write(path: Path, schema: str, chats: dict[str, _Chat], rows: list[_Row]) -> None:
    db = ChatDb(path, schema=schema)
    handle_ids: dict[tuple[str, str], int] = {}

    def handle(address: str, service: str = "iMessage") -> int:
        if (address, service) not in handle_ids:
            handle_ids[address, service] = db.handle(address, service=service)
        return handle_ids[address, service]

    for person in PEOPLE:
        for address in person.addresses:
            handle(address)
    chat_ids = {
        key: db.chat(chat.guid, display_name=chat.name,
                     handles=[handle(chat.address[m], chat.service) for m in chat.members])
        for key, chat in chats.items()
    }
    for row in sorted(rows, key=lambda r: r.at):
        home = chats[row.chats[0]] if row.chats else None
        if row.sender == ME:
            sender = handle(home.address[home.members[0]], home.service) if (
                home is not None and len(home.members) == 1) else 0
        elif home is not None:
            sender = handle(home.address[row.sender], home.service)
        else:
            sender = handle(_primary(row.sender))
        raw = apple_nanos(row.at) if row.at.year >= NANOS_FROM_YEAR else apple_seconds(row.at)
        db.message(
            row.guid,
            text=None if row.body_only else row.text,
            body=typedstream_body(row.text) if row.body_only else None,
            chats=[chat_ids[k] for k in row.chats],
            handle=sender,
            is_from_me=row.sender == ME,
            date=raw,
            associated_type=row.assoc_type,
            associated_guid=row.assoc_guid,
        )
    db.close()
