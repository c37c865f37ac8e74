"""The imessage source over synthetic chat.db files built from Apple's real schemas.

Every scenario runs over each schema whose columns it needs: the iOS 6.1.6, 9.2.1, 10.2,
11.2 and 2025 macOS dumps in /work/shared/data/imessage/schemas (skipped with a reason when
absent) and the hand-written ``minimal`` schema (always runs).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.chatdb import (
    SCHEMAS,
    ChatDb,
    RawText,
    apple_nanos,
    apple_seconds,
    schema_available,
    summary_info,
    typedstream_body,
)

from unified_kg_rag.adapters.builtins import register_all
from unified_kg_rag.adapters.messages import (
    IMessageSource,
    JsonLinesSource,
    find_message_source,
    load_message_sources,
)
from unified_kg_rag.adapters.messages.imessage import apple_timestamp, tapback_target
from unified_kg_rag.adapters.registry import MESSAGE_SOURCES
from unified_kg_rag.domain.messages.transcripts import (
    UNTHREADED_ID,
    UNTHREADED_NAME,
    MessageSourceOptions,
    SourceMessage,
    Tapback,
)
from unified_kg_rag.util.errors import InputError
from unified_kg_rag.util.registry import Registry

pytestmark = pytest.mark.unit

ALL_SCHEMAS = list(SCHEMAS)
SOURCE = IMessageSource()
OPTIONS = MessageSourceOptions(
    handle_names={"+15551230001": "Ann", "ann@example.com": "Ann", "+15551230002": "Bob"},
    owner_label="Me",
)
BASE = datetime(2019, 6, 1, 12, 30, 15, tzinfo=UTC)


def _schema(name: str) -> str:
    if not schema_available(name):
        pytest.skip(f"schema {name!r} needs /work/shared/data/imessage/schemas (absent here)")
    return name


@pytest.fixture(params=ALL_SCHEMAS)
def schema(request: pytest.FixtureRequest) -> str:
    return _schema(str(request.param))


@dataclass
class Scenario:
    path: Path
    tapbacks: bool
    named_chat: bool
    ids: dict[str, int] = field(default_factory=dict)


def build_scenario(path: Path, schema: str) -> Scenario:
    """Every case the issue names, in one database (tapbacks only where columns exist)."""
    db = ChatDb(path, schema)
    sc = Scenario(
        path,
        tapbacks=db.has_column("message", "associated_message_type"),
        named_chat=db.has_column("chat", "display_name"),
    )
    ann_phone = db.handle("+15551230001")
    ann_mail = db.handle("ann@example.com", service="iMessage")
    bob = db.handle("+15551230002", service="SMS")
    carol = db.handle("carol@example.com")
    dm = db.chat("iMessage;-;+15551230001", handles=[ann_phone])
    group = db.chat("iMessage;+;chat111", handles=[carol, bob, ann_phone, ann_mail])
    if sc.named_chat:
        club = db.chat("iMessage;+;chat222", display_name="Book club", handles=[bob, carol])
        db.message("N1", text="Chapter 3 tonight", chats=[club], handle=carol,
                   date=apple_nanos(BASE + timedelta(hours=5)))
    long_body = "Ünïcode body that is long. " * 12  # > 255 UTF-8 bytes
    db.message("M1", text="Hi, it's Ann", chats=[dm], handle=ann_phone,
               date=apple_seconds(BASE))
    db.message("M2", text="nanosecond era", chats=[dm], handle=ann_phone,
               date=apple_nanos(BASE + timedelta(days=900, microseconds=123456)) + 789)
    db.message("M3", text="seconds era, same day", chats=[dm], is_from_me=True,
               date=apple_seconds(BASE + timedelta(days=900)))
    db.message("M4", text=None, body=typedstream_body("Grüße aus Köln 🎉"), chats=[group],
               handle=ann_mail, date=apple_nanos(BASE + timedelta(days=1)))
    db.message("M5", text=None, body=typedstream_body(long_body), chats=[group], handle=bob,
               date=apple_nanos(BASE + timedelta(days=2)))
    db.message("M6", text="posted to two chats", chats=[group, dm], handle=carol,
               date=apple_nanos(BASE + timedelta(days=3)))
    db.message("M7", text="in no chat at all", handle=bob,
               date=apple_seconds(BASE + timedelta(days=4)))
    db.message("M8", text="zero date", chats=[dm], handle=ann_phone, date=0)
    db.message("M9", text="null date", chats=[dm], handle=ann_phone, date=None)
    db.message("M10", text="text\ufffc with an attachment", chats=[dm], is_from_me=True,
               date=apple_seconds(BASE + timedelta(days=5)))
    db.message("X1", text=None, chats=[dm], handle=ann_phone, date=apple_seconds(BASE))
    db.message("X2", text="\ufffc", chats=[dm], handle=ann_phone, date=apple_seconds(BASE))
    db.message("X3", text="   ", body=b"\x00garbage", chats=[dm], handle=bob,
               date=apple_seconds(BASE))
    if sc.tapbacks:
        db.message("T1", text="Loved “Hi, it's Ann”", chats=[dm], handle=bob,
                   associated_type=2000, associated_guid="p:0/M1")
        db.message("T2", text=None, chats=[dm], handle=bob, associated_type=2000,
                   associated_guid="bp:M1")  # a second add: still one reaction
        db.message("T3", text=None, chats=[dm], handle=carol, associated_type=2001,
                   associated_guid="bp:M1")
        db.message("T4", text=None, chats=[dm], handle=carol, associated_type=3001,
                   associated_guid="bp:M1")  # removes T3
        db.message("T5", text=None, chats=[group], is_from_me=True, associated_type=2003,
                   associated_guid="p:0/M4")
        db.message("T6", text=None, chats=[dm], handle=ann_mail, associated_type=2004,
                   associated_guid="p:1/M1")
        db.message("T7", text=None, chats=[dm], handle=bob, associated_type=2000,
                   associated_guid="p:0/NOT-IN-THIS-FILE")
        db.message("T8", text=None, chats=[dm], handle=carol, associated_type=3002,
                   associated_guid="bp:M1")  # removes what was never added
    db.close()
    sc.ids = {"dm": dm, "group": group}
    return sc


def _by_guid(messages: tuple[SourceMessage, ...]) -> dict[str, SourceMessage]:
    return {m.guid: m for m in messages}


# ----------------------------------------------------------------------------- scenario


def test_scenario_over_every_schema(tmp_path: Path, schema: str) -> None:
    sc = build_scenario(tmp_path / "chat.db", schema)
    assert SOURCE.matches(sc.path)
    archive = SOURCE.parse(sc.path, OPTIONS)
    got = _by_guid(archive.messages)

    expected = {"M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8", "M9", "M10"}
    if sc.named_chat:
        expected.add("N1")
    assert set(got) == expected  # tapbacks never emitted; X1-X3 skipped
    assert archive.source == "imessage"
    # every row not emitted is counted under its reason (T7 reacts to a message not here)
    reasons = {"no text": 2, "attachment only": 1}
    if sc.tapbacks:
        reasons["reaction to a message not in the archive"] = 1
    assert archive.skipped_reasons == reasons
    assert archive.skipped == sum(reasons.values())

    dm, group = "iMessage;-;+15551230001", "iMessage;+;chat111"
    assert (got["M1"].thread_id, got["M1"].thread_name) == (dm, "Ann")
    # An unnamed group is named by its participants' sorted display names (Ann's two
    # addresses count once).
    assert (got["M4"].thread_id, got["M4"].thread_name) == (group, "Ann, Bob, carol@example.com")
    if sc.named_chat:
        assert got["N1"].thread_name == "Book club"
    # A message joined to two chats is emitted once, under the lower chat ROWID.
    assert [m.guid for m in archive.messages].count("M6") == 1
    assert got["M6"].thread_id == dm
    assert (got["M7"].thread_id, got["M7"].thread_name) == (UNTHREADED_ID, UNTHREADED_NAME)

    # Senders: both of Ann's addresses map to one name; the owner has no handle.
    assert (got["M1"].sender_handle, got["M1"].sender_name) == ("+15551230001", "Ann")
    assert (got["M4"].sender_handle, got["M4"].sender_name) == ("ann@example.com", "Ann")
    assert (got["M6"].sender_handle, got["M6"].sender_name) == (
        "carol@example.com", "carol@example.com",
    )
    assert (got["M3"].sender_handle, got["M3"].sender_name, got["M3"].is_from_me) == (
        "", "Me", True,
    )
    assert got["M1"].is_from_me is False

    # Bodies: attributedBody-only rows (non-ASCII, > 255 bytes) decode whole.
    assert got["M4"].text == "Grüße aus Köln 🎉"
    assert got["M5"].text == "Ünïcode body that is long. " * 12
    assert got["M10"].text == "text with an attachment"

    # Dates: both eras exact; 0 and NULL are undated.
    assert got["M1"].timestamp == BASE
    assert got["M2"].timestamp == BASE + timedelta(days=900, microseconds=123456)
    assert got["M3"].timestamp == BASE + timedelta(days=900)
    assert got["M8"].timestamp is None
    assert got["M9"].timestamp is None

    # Order: undated first, then by timestamp, then guid.
    order = [m.guid for m in archive.messages]
    assert order[:2] == ["M8", "M9"]
    stamps = [m.timestamp for m in archive.messages[2:]]
    assert stamps == sorted(s for s in stamps if s is not None)

    if sc.tapbacks:
        assert got["M1"].tapbacks == (
            Tapback(kind="emphasized", sender_name="Ann"),
            Tapback(kind="loved", sender_name="Bob"),
        )
        assert got["M4"].tapbacks == (Tapback(kind="laughed", sender_name="Me"),)
        assert archive.tapbacks_folded == 3
        assert archive.tapbacks_orphaned == 1
    else:
        assert archive.tapbacks_folded == archive.tapbacks_orphaned == 0
    assert all(not m.tapbacks for g, m in got.items() if g not in {"M1", "M4"})


def test_nanosecond_and_second_eras_agree(tmp_path: Path, schema: str) -> None:
    instants = [
        datetime(2001, 1, 2, 0, 0, 1, tzinfo=UTC),  # nanos: 8.6e13, still above the cut
        datetime(2009, 2, 13, 23, 31, 30, tzinfo=UTC),
        datetime(2017, 9, 25, 8, 0, 0, tzinfo=UTC),
        datetime(2031, 12, 31, 23, 59, 59, tzinfo=UTC),
    ]
    db = ChatDb(tmp_path / "chat.db", schema)
    for i, when in enumerate(instants):
        db.message(f"S{i}", text="s", date=apple_seconds(when))
        db.message(f"N{i}", text="n", date=apple_nanos(when + timedelta(microseconds=999_999)))
    db.close()
    got = _by_guid(SOURCE.parse(tmp_path / "chat.db", OPTIONS).messages)
    for i, when in enumerate(instants):
        assert got[f"S{i}"].timestamp == when
        assert got[f"N{i}"].timestamp == when + timedelta(microseconds=999_999)


def test_empty_database_has_no_messages(tmp_path: Path, schema: str) -> None:
    db = ChatDb(tmp_path / "chat.db", schema)
    db.close()
    assert SOURCE.matches(tmp_path / "chat.db")
    archive = SOURCE.parse(tmp_path / "chat.db", OPTIONS)
    assert archive.messages == ()
    assert (archive.skipped, archive.tapbacks_folded, archive.problems) == (0, 0, ())


def test_parse_never_writes(tmp_path: Path, schema: str) -> None:
    path = build_scenario(tmp_path / "chat.db", schema).path
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    time.sleep(0.01)
    SOURCE.parse(path, OPTIONS)
    SOURCE.matches(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.db"]


def test_wal_database_with_live_writer(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    db = ChatDb(path, _schema("macos"))
    db.message("OLD", text="checkpointed", date=apple_seconds(BASE))
    db.close()
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        assert writer.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute(
            "INSERT INTO message (guid, text, date) VALUES ('NEW', 'only in the WAL', ?)",
            (apple_nanos(BASE + timedelta(days=1)),),
        )
        wal = Path(f"{path}-wal")
        assert wal.stat().st_size > 0
        before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (path, wal)}
        time.sleep(0.01)
        archive = SOURCE.parse(path, OPTIONS)
        assert [m.guid for m in archive.messages] == ["OLD", "NEW"]
        assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (path, wal)} == before
        # A copy taken with its sidecars (how a live chat.db is exported) reads the WAL too.
        copy = tmp_path / "copy"
        copy.mkdir()
        for suffix in ("", "-wal", "-shm"):
            shutil.copy2(f"{path}{suffix}", copy / f"chat.db{suffix}")
    finally:
        writer.close()
    archive = SOURCE.parse(copy / "chat.db", OPTIONS)
    assert [m.guid for m in archive.messages] == ["OLD", "NEW"]


_RO_PROBE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from unified_kg_rag.adapters.messages import IMessageSource
    from unified_kg_rag.domain.messages.transcripts import MessageSourceOptions
    archive = IMessageSource().parse(Path(sys.argv[1]), MessageSourceOptions())
    print(",".join(m.guid for m in archive.messages))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_wal_database_in_read_only_folder(tmp_path: Path) -> None:
    # With its -wal and -shm the read-only open works; without a -shm (SQLite cannot create
    # one in a read-only folder) the source falls back to immutable=1 and reads the main file.
    as_root = os.geteuid() == 0
    if as_root and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot make a folder read-only")
    src = tmp_path / "src" / "chat.db"
    src.parent.mkdir()
    db = ChatDb(src, "minimal")
    db.message("OLD", text="checkpointed", date=apple_seconds(BASE))
    db.close()
    base = Path(tempfile.mkdtemp(prefix="ukr-ro-"))
    try:
        base.chmod(0o755)
        writer = sqlite3.connect(src, isolation_level=None)
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("INSERT INTO message (guid, text, date) VALUES ('NEW', 'wal', ?)",
            (apple_seconds(BASE) + 5,),
        )
        cases = {"full": ("", "-wal", "-shm"), "noshm": ("", "-wal")}
        for case, suffixes in cases.items():
            folder = base / case
            folder.mkdir()
            for suffix in suffixes:
                shutil.copy2(f"{src}{suffix}", folder / f"chat.db{suffix}")
                (folder / f"chat.db{suffix}").chmod(0o444)
            folder.chmod(0o555)
        writer.close()
        results = {}
        for case in cases:
            command = [sys.executable, "-c", _RO_PROBE, str(base / case / "chat.db")]
            if as_root:
                command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           *command]
            env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
            done = subprocess.run(command, capture_output=True, text=True, env=env,
                                  timeout=60, check=False)
            assert done.returncode == 0, done.stderr
            results[case] = done.stdout.strip()
            assert sorted(p.name for p in (base / case).iterdir()) == sorted(
                f"chat.db{s}" for s in cases[case]
            )
        assert results == {"full": "OLD,NEW", "noshm": "OLD"}
    finally:
        for folder in [base, *base.iterdir()]:
            folder.chmod(0o755)
        shutil.rmtree(base)


def test_apple_triggers_make_the_file_unwritable_but_readable(tmp_path: Path) -> None:
    path = build_scenario(tmp_path / "chat.db", _schema("macos")).path
    conn = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.OperationalError, match="no such function"):
            conn.execute("DELETE FROM message WHERE guid = 'M1'")
    finally:
        conn.close()
    assert "M1" in _by_guid(SOURCE.parse(path, OPTIONS).messages)


# ----------------------------------------------------------------------------- bad files


def test_sqlite_file_without_message_table(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('hello')")
    conn.commit()
    conn.close()
    assert SOURCE.matches(path) is False
    with pytest.raises(InputError, match="no message table") as info:
        SOURCE.parse(path, OPTIONS)  # what --source imessage does with it
    assert info.value.path == str(path)
    assert "\n" not in str(info.value)


def test_locked_database(tmp_path: Path) -> None:
    path = build_scenario(tmp_path / "chat.db", "minimal").path
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        assert SOURCE.matches(path) is True  # cannot probe; a .db file goes to parse
        with pytest.raises(InputError, match="locked") as info:
            SOURCE.parse(path, OPTIONS)
        assert time.monotonic() - started < 5
        assert str(path) in str(info.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(SOURCE.parse(path, OPTIONS).messages) == 11  # M1-M10 and N1


def test_corrupt_databases(tmp_path: Path) -> None:
    good = build_scenario(tmp_path / "good.db", "minimal").path.read_bytes()
    garbage = b"SQLite format 3\x00" + bytes((i * 37 + 11) % 256 for i in range(8000))
    cases = {
        "garbage.db": garbage,
        "scrambled.db": good[:100] + b"\xa5" * (len(good) - 100),
        "truncated.db": good[: len(good) // 3],
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert SOURCE.matches(path) is False, name
        with pytest.raises(InputError) as info:
            SOURCE.parse(path, OPTIONS)
        assert str(path) in str(info.value)
        assert "\n" not in str(info.value)


def test_file_that_is_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    path.write_text("just some text, not a database\n" * 10)
    assert SOURCE.matches(path) is False
    with pytest.raises(InputError, match="not a SQLite database"):
        SOURCE.parse(path, OPTIONS)


def test_parse_of_missing_path_or_directory(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.db", tmp_path, Path("bad\x00name.db")):
        with pytest.raises(InputError) as info:
            SOURCE.parse(path, OPTIONS)
        assert str(path) in str(info.value)


def _odd_paths(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "folder.db"
    folder.mkdir()
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    paths = [folder, fifo, tmp_path / "missing.db", Path("bad\x00name.db")]
    unreadable = tmp_path / "unreadable.db"
    shutil.copy2(build_scenario(tmp_path / "x.db", "minimal").path, unreadable)
    unreadable.chmod(0)
    paths.append(unreadable)
    if Path("/proc/self/mem").exists():  # a regular file whose read fails, even for root
        mem = tmp_path / "mem.db"
        mem.symlink_to("/proc/self/mem")
        paths.append(mem)
    return paths


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_matches_never_raises(tmp_path: Path) -> None:
    for path in _odd_paths(tmp_path):
        if path.name == "unreadable.db" and os.geteuid() == 0:
            continue  # root reads mode-000 files; /proc/self/mem covers unreadable
        assert SOURCE.matches(path) is False, path
        assert JsonLinesSource().matches(path) is False, path


# ----------------------------------------------------------------------------- edges


def test_handle_names_match_loosely(tmp_path: Path) -> None:
    db = ChatDb(tmp_path / "chat.db", "minimal")
    phone = db.handle("+15551230001")
    mail = db.handle("Ann@Example.COM")
    db.message("A", text="a", handle=phone, date=1)
    db.message("B", text="b", handle=mail, date=2)
    db.close()
    options = MessageSourceOptions(
        handle_names={"+1 (555) 123-0001": "Ann", "ann@example.com": "Ann"}
    )
    got = _by_guid(SOURCE.parse(tmp_path / "chat.db", options).messages)
    assert (got["A"].sender_name, got["B"].sender_name) == ("Ann", "Ann")
    assert got["B"].sender_handle == "Ann@Example.COM"


def test_out_of_range_date_is_kept_undated(tmp_path: Path) -> None:
    # Any 64-bit integer decodes (int64 nanoseconds end in 2293); a REAL column value can
    # exceed what a datetime holds.
    db = ChatDb(tmp_path / "chat.db", "minimal")
    db.message("FAR", text="far future", date=None)
    db.message("MAX", text="int64 max", date=2**63 - 1)
    db.close()
    conn = sqlite3.connect(tmp_path / "chat.db")
    conn.execute("UPDATE message SET date = 1e30 WHERE guid = 'FAR'")
    conn.commit()
    conn.close()
    archive = SOURCE.parse(tmp_path / "chat.db", OPTIONS)
    assert [(m.guid, m.timestamp) for m in archive.messages] == [
        ("FAR", None),
        ("MAX", datetime(2293, 4, 11, 23, 47, 16, 854775, tzinfo=UTC)),
    ]
    assert len(archive.problems) == 1 and "FAR" in archive.problems[0]


def test_apple_timestamp_values() -> None:
    assert apple_timestamp(None) is None
    assert apple_timestamp(0) is None
    assert apple_timestamp(1) == datetime(2001, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert apple_timestamp(-86400) == datetime(2000, 12, 31, tzinfo=UTC)
    assert apple_timestamp(1_000_000_000_000_000_000) == datetime(
        2032, 9, 9, 1, 46, 40, tzinfo=UTC
    )
    assert apple_timestamp(1_000_000_000_999) == datetime(
        2001, 1, 1, 0, 16, 40, 0, tzinfo=UTC
    ) + timedelta(microseconds=0)
    with pytest.raises(ValueError, match="out of range"):
        apple_timestamp(10**30)


@pytest.mark.parametrize(
    ("raw", "target"),
    [
        ("p:0/ABC-1", "ABC-1"),
        ("p:12/ABC-1", "ABC-1"),
        ("bp:ABC-1", "ABC-1"),
        ("ABC-1", "ABC-1"),
        ("p:0", None),
        ("p:0/", None),
        ("bp:", None),
        ("", None),
        (None, None),
    ],
)
def test_tapback_target(raw: str | None, target: str | None) -> None:
    assert tapback_target(raw) == target


def test_big_database_parses_fast(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    db = ChatDb(path, "minimal")
    handles = [db.handle(f"+1555000{i:04d}") for i in range(20)]
    chats = [db.chat(f"iMessage;-;chat{i}", handles=[handles[i]]) for i in range(20)]
    for i in range(10_000):
        when = BASE + timedelta(minutes=i)
        db.message(
            f"G{i:05d}",
            text=None if i % 2 else f"message {i}",
            body=typedstream_body(f"body of message {i} ✓") if i % 2 else None,
            chats=[chats[i % 20]],
            handle=handles[i % 20],
            date=apple_nanos(when) if i % 3 else apple_seconds(when),
        )
    db.close()
    started = time.perf_counter()
    archive = SOURCE.parse(path, OPTIONS)
    elapsed = time.perf_counter() - started
    assert len(archive.messages) == 10_000
    assert archive.messages[-1].text == "body of message 9999 ✓"
    assert elapsed < 4.0, f"10,000 rows took {elapsed:.2f}s"


# ----------------------------------------------------------------------------- registry


def test_registry_dispatch_order_and_find(tmp_path: Path) -> None:
    register_all()
    assert MESSAGE_SOURCES.in_order() == ["imessage", "jsonl"]
    sources = load_message_sources()
    assert [s.name for s in sources] == ["imessage", "jsonl"]
    chat = build_scenario(tmp_path / "chat.db", "minimal").path
    export = tmp_path / "export.jsonl"
    export.write_text('{"thread_id": "t", "text": "hi", "sender": "Bob"}\n')
    document = tmp_path / "notes.jsonl"
    document.write_text('{"title": "a note", "text": "not a message"}\n')
    assert find_message_source(chat, sources) is sources[0]
    assert find_message_source(export, sources) is sources[1]
    assert find_message_source(document, sources) is None
    assert find_message_source(tmp_path, sources) is None
    assert [s.name for s in load_message_sources(["jsonl"])] == ["jsonl"]


def test_registry_in_order_is_registration_order() -> None:
    registry: Registry[int] = Registry("thing")
    for name, value in (("zeta", 1), ("alpha", 2), ("mid", 3)):
        registry.register(name, value)
    registry.register("alpha", 4, replace=True)
    assert registry.in_order() == ["zeta", "alpha", "mid"]
    assert registry.names() == ["alpha", "mid", "zeta"]
    assert registry.get("alpha") == 4


def test_invalid_utf8_is_repaired_per_row_with_a_problem_line(tmp_path: Path, schema: str) -> None:
    """Issue 15 item 6(a), the iMessage path: SQLite does not check that text is UTF-8, and one
    undecodable ``text`` value failed the whole database ("Could not decode to UTF-8"). Every
    text value (message text, handle, chat name) is decoded leniently, with one problem line
    per repaired value; an ``attributedBody`` string that is not UTF-8 is repaired too."""
    db = ChatDb(tmp_path / "chat.db", schema)
    ann = db.handle(RawText(b"+1555123\xff0001"))
    bob = db.handle("+15551230002")
    named = db.has_column("chat", "display_name")
    dm = db.chat("iMessage;-;ann", handles=[ann])
    trip = db.chat("iMessage;+;chat9", handles=[ann, bob],
                   display_name=RawText(b"Trip to K\xf6ln") if named else None)
    db.message("M1", text=RawText(b"caf\xe9 at noon"), chats=[dm], handle=ann,
               date=apple_seconds(BASE))
    db.message("M2", text=RawText(b"smile \xed\xa0\xbd\xed\xb8\x80"), chats=[dm],
               handle=ann, date=apple_seconds(BASE + timedelta(minutes=1)))
    db.message("M3", text=None, body=typedstream_body(b"bad \xc3 byte in the body"),
               chats=[trip], handle=bob, date=apple_seconds(BASE + timedelta(minutes=2)))
    db.message("M4", text="clean text", chats=[trip], is_from_me=True,
               date=apple_seconds(BASE + timedelta(minutes=3)))
    db.close()
    archive = SOURCE.parse(tmp_path / "chat.db", OPTIONS)
    got = _by_guid(archive.messages)
    assert set(got) == {"M1", "M2", "M3", "M4"}
    assert got["M1"].text == "caf\ufffd at noon"
    assert got["M1"].sender_handle == "+1555123\ufffd0001"
    assert got["M1"].sender_name == "Ann"  # the handle's digits still find its name
    assert got["M2"].text == "smile \U0001f600"  # CESU-8 halves joined into the character
    assert got["M3"].text == "bad \ufffd byte in the body"
    assert got["M3"].thread_name == ("Trip to K\ufffdln" if named else "Ann, Bob")
    repaired = "repaired (U+FFFD where no character could be read)"
    expected = {
        f"handle ROWID {ann}: invalid UTF-8 in 'id' {repaired}",
        f"message ROWID 1: invalid UTF-8 in 'text' {repaired}",
        f"message ROWID 2: invalid UTF-8 in 'text' {repaired}",
        f"message ROWID 3: invalid UTF-8 in 'attributedBody' {repaired}",
    }
    if named:
        expected.add(f"chat ROWID {trip}: invalid UTF-8 in 'display_name' {repaired}")
    assert set(archive.problems) == expected
    assert archive.skipped == 0


def test_edits_unsends_attachments_and_skip_reasons(tmp_path: Path, schema: str) -> None:
    """Issue 15 item 10: nothing read ``date_edited``, ``date_retracted`` or
    ``message_summary_info``: an edited message had no mark and no history, an unsent one was
    counted as "no text" like an attachment, and an attachment placeholder between two words
    glued them together ("seethis")."""
    db = ChatDb(tmp_path / "chat.db", schema)
    if not db.has_column("message", "date_edited"):
        db.close()
        pytest.skip(f"schema {schema!r} predates edits and unsends")
    ann = db.handle("+15551230001")
    dm = db.chat("iMessage;-;+15551230001", handles=[ann])
    sent, first, last = BASE, BASE + timedelta(minutes=1), BASE + timedelta(minutes=3)
    history = summary_info(edits={0: [(apple_seconds(sent), "Dinner at 7?"),
                                      (apple_seconds(first), "Dinner at 7:30?"),
                                      (apple_seconds(last), "Dinner at 8?")]})
    db.message("E1", text=None, body=typedstream_body("Dinner at 8?"), chats=[dm],
               handle=ann, date=apple_nanos(sent), date_edited=apple_nanos(last),
               summary=history)
    db.message("E2", text="fixed the typo", chats=[dm], is_from_me=True,
               date=apple_nanos(sent + timedelta(minutes=5)),
               date_edited=apple_nanos(sent + timedelta(minutes=6)))  # no history kept
    db.message("E3", text="history is damaged", chats=[dm], handle=ann,
               date=apple_nanos(sent + timedelta(minutes=7)),
               date_edited=apple_nanos(sent + timedelta(minutes=8)), summary=b"not a plist")
    db.message("U1", text=None, chats=[dm], handle=ann, date=apple_nanos(sent),
               date_edited=apple_nanos(first), date_retracted=apple_nanos(first),
               summary=summary_info(unsent=[0]))
    db.message("U2", text=None, chats=[dm], handle=ann, date=apple_nanos(sent),
               summary=summary_info(unsent=[0]))  # unsent, told by the plist alone
    db.message("A1", text="\ufffc", chats=[dm], handle=ann, date=apple_nanos(sent),
               has_attachments=True)
    db.message("A2", text=None, chats=[dm], handle=ann, date=apple_nanos(sent),
               has_attachments=True)
    db.message("N1", text=None, chats=[dm], handle=ann, date=apple_nanos(sent))
    db.message("P1", text="see\ufffcthis", chats=[dm], handle=ann, date=apple_nanos(sent))
    db.message("P2", text="\ufffc\ufffcphotos from the trip \ufffc", chats=[dm], handle=ann,
               date=apple_nanos(sent))
    db.message("P3", text="two\ufffc\ufffcpictures\ufffc\nand a line", chats=[dm],
               handle=ann, date=apple_nanos(sent))
    db.close()

    archive = SOURCE.parse(tmp_path / "chat.db", OPTIONS)
    got = _by_guid(archive.messages)
    assert set(got) == {"E1", "E2", "E3", "P1", "P2", "P3"}
    assert archive.skipped_reasons == {"unsent": 2, "attachment only": 2, "no text": 1}
    assert archive.skipped == 5

    e1 = got["E1"]
    assert (e1.text, e1.edited, e1.edited_at) == ("Dinner at 8?", True, last)
    assert [(e.timestamp, e.text) for e in e1.edits] == [
        (sent.isoformat(), "Dinner at 7?"), (first.isoformat(), "Dinner at 7:30?")]
    e2 = got["E2"]
    assert (e2.edited, e2.edited_at, e2.edits) == (True, sent + timedelta(minutes=6), ())
    assert got["E3"].edited and got["E3"].edits == ()
    assert any(p.startswith("message ROWID 3: unreadable message_summary_info")
               for p in archive.problems)
    assert not any(m.edited for g, m in got.items() if g.startswith("P"))

    assert got["P1"].text == "see this"
    assert got["P2"].text == "photos from the trip"
    assert got["P3"].text == "two pictures\nand a line"
