"""The jsonl message source: the generic one-JSON-message-per-line format."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from unified_kg_rag.adapters.messages import JsonLinesSource
from unified_kg_rag.domain.messages.transcripts import MessageSourceOptions, Tapback
from unified_kg_rag.util.errors import InputError
from unified_kg_rag.util.hashing import sha256_text

pytestmark = pytest.mark.unit

SOURCE = JsonLinesSource()
OPTIONS = MessageSourceOptions(
    handle_names={"+15551230001": "Ann", "ann@example.com": "Ann", "U024BE7LH": "Bob"},
    owner_label="Owner",
)


def _write(path: Path, records: list[object]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_good_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "export.jsonl", [
        {"guid": "w1", "thread_id": "family", "thread_name": "Family", "sender": "+15551230001",
         "timestamp": "2024-03-01T18:04:00Z", "text": "Dinner at 7?",
         "reactions": [{"kind": "liked", "sender": "ann@example.com"},
                       {"kind": "loved", "is_from_me": True},
                       {"kind": "liked", "sender": "+15551230001"}]},
        {"guid": "w2", "thread_id": "family", "is_from_me": True, "timestamp": 1709316300,
         "text": "Yes!"},
        {"guid": "s1", "thread_id": 42, "sender_handle": "U024BE7LH", "sender": "bob.smith",
         "timestamp": "2024-03-01T20:00:00+02:00", "text": "from Slack"},
        {"guid": "s2", "thread_id": "42", "sender": "Dana", "timestamp": "2024-03-01T17:00:00",
         "text": "naive means UTC"},
        {"guid": "u1", "thread_id": "family", "sender": "Eve", "text": "undated"},
        {"guid": "u0", "thread_id": "family", "sender": "Eve", "timestamp": None,
         "text": "also undated", "extra": {"ignored": True}},
        {"guid": "f1", "thread_id": "family", "sender": "Eve", "timestamp": 1709316000.25,
         "text": "float epoch"},
    ])
    assert SOURCE.matches(path)
    archive = SOURCE.parse(path, OPTIONS)
    assert archive.source == "jsonl"
    assert (archive.skipped, archive.problems) == (0, ())
    assert [m.guid for m in archive.messages] == ["u0", "u1", "s2", "s1", "f1", "w1", "w2"]
    got = {m.guid: m for m in archive.messages}

    w1 = got["w1"]
    assert (w1.thread_id, w1.thread_name) == ("family", "Family")
    assert (w1.sender_name, w1.sender_handle, w1.is_from_me) == ("Ann", "", False)
    assert w1.timestamp == datetime(2024, 3, 1, 18, 4, tzinfo=UTC)
    # Ann's two handles give one reaction; the owner's reaction is named by owner_label.
    assert w1.tapbacks == (
        Tapback(kind="liked", sender_name="Ann"),
        Tapback(kind="loved", sender_name="Owner"),
    )
    assert archive.tapbacks_folded == 2
    w2 = got["w2"]
    assert (w2.sender_name, w2.sender_handle, w2.is_from_me) == ("Owner", "", True)
    assert w2.timestamp == datetime(2024, 3, 1, 18, 5, tzinfo=UTC)
    s1 = got["s1"]
    assert (s1.thread_id, s1.thread_name) == ("42", "42")
    assert (s1.sender_name, s1.sender_handle) == ("Bob", "U024BE7LH")  # mapped handle wins
    assert s1.timestamp == datetime(2024, 3, 1, 18, 0, tzinfo=UTC)
    assert got["s2"].timestamp == datetime(2024, 3, 1, 17, 0, tzinfo=UTC)
    assert got["s2"].sender_name == "Dana"
    assert got["u1"].timestamp is None and got["u0"].timestamp is None
    assert got["f1"].timestamp == datetime(2024, 3, 1, 18, 0, 0, 250000, tzinfo=UTC)
    assert all(m.timestamp is None or m.timestamp.tzinfo is not None for m in archive.messages)


def test_derived_guid_is_stable_and_content_based(tmp_path: Path) -> None:
    line = {"thread_id": "t", "sender": "Ann", "timestamp": "2024-01-01T10:00:00+00:00",
            "text": "hello"}
    same_instant = {**line, "timestamp": "2024-01-01T12:00:00+02:00"}
    other_text = {**line, "text": "hello!"}
    first = SOURCE.parse(_write(tmp_path / "a.jsonl", [line, other_text]), OPTIONS)
    second = SOURCE.parse(_write(tmp_path / "b.jsonl", [other_text, same_instant]), OPTIONS)
    assert {m.guid for m in first.messages} == {m.guid for m in second.messages}
    guids = {m.text: m.guid for m in first.messages}
    assert guids["hello"] != guids["hello!"]
    assert guids["hello"] == sha256_text(
        "t", "Ann", "", "", datetime(2024, 1, 1, 10, tzinfo=UTC).isoformat(), "hello"
    )
    # An identical line repeated (the same "ok" twice in a minute) is a second message, and
    # its guid is stable too (numbered by its order in the file).
    again = SOURCE.parse(_write(tmp_path / "c.jsonl", [line, same_instant]), OPTIONS)
    assert len(again.messages) == 2 and again.skipped == 0
    assert again.messages[0].guid == guids["hello"] != again.messages[1].guid
    # a repeated explicit guid keeps the first line only
    dup = SOURCE.parse(_write(tmp_path / "d.jsonl", [{**line, "guid": "x"},
                                                     {**other_text, "guid": "x"}]), OPTIONS)
    assert len(dup.messages) == 1 and dup.problems[0].startswith("line 2: duplicate guid")


def test_bad_lines_are_counted_and_described(tmp_path: Path) -> None:
    good = {"thread_id": "t", "sender": "Ann", "text": "fine", "guid": "g-ok"}
    path = _write(tmp_path / "mixed.jsonl", [
        good,                                                        # line 1
        "{not json",                                                 # 2
        "[1, 2, 3]",                                                 # 3
        {"sender": "Ann", "text": "no thread"},                      # 4
        {"thread_id": "t", "sender": "Ann"},                         # 5
        {"thread_id": "t", "sender": "Ann", "text": "   "},          # 6
        {"thread_id": "t", "sender": "Ann", "text": "x", "timestamp": "yesterday"},  # 7
        {"thread_id": "t", "sender": "Ann", "text": "x", "is_from_me": "yes"},       # 8
        {"thread_id": "t", "text": "who sent this"},                 # 9
        {"thread_id": "t", "sender": "Ann", "text": "x", "timestamp": True},         # 10
        {"thread_id": "t", "sender": "Ann", "text": "x", "timestamp": 1e300},        # 11
        {"thread_id": "t", "sender": "Ann", "text": "x", "guid": ""},                # 12
        "",                                                          # 13 blank: ignored
        {"thread_id": "t", "sender": "Ann", "text": "kept", "guid": "g-2",
         "reactions": [{"kind": "hugged", "sender": "Bob"}, {"kind": "liked"}, "x"]},  # 14
    ])
    archive = SOURCE.parse(path, OPTIONS)
    assert [m.guid for m in archive.messages] == ["g-2", "g-ok"]
    assert archive.messages[0].tapbacks == ()
    assert archive.skipped == 11
    problems = list(archive.problems)
    assert [p.split(":")[0] for p in problems] == [
        "line 2", "line 3", "line 4", "line 5", "line 6", "line 7", "line 8", "line 9",
        "line 10", "line 11", "line 12", "line 14", "line 14", "line 14",
    ]
    assert "not JSON" in problems[0]
    assert "not a JSON object" in problems[1]
    assert "thread_id" in problems[2]
    assert "'text'" in problems[3] and "'text'" in problems[4]
    assert "timestamp" in problems[5]
    assert "is_from_me" in problems[6]
    assert "sender" in problems[7]
    assert "unknown kind 'hugged'" in problems[11]
    assert all("\n" not in p for p in problems)


def test_problem_list_is_capped(tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.jsonl", [{"thread_id": "t", "text": "ok", "sender": "A"}]
                  + ["garbage"] * 30)
    archive = SOURCE.parse(path, OPTIONS)
    assert archive.skipped == 30
    assert len(archive.problems) == 21
    assert archive.problems[19].startswith("line 21:")
    assert archive.problems[20] == "... and 10 more problem(s) not listed"


def test_not_utf8_raises_input_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes('{"thread_id": "t", "sender": "A", "text": "café"}\n'.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8") as info:
        SOURCE.parse(path, OPTIONS)
    assert info.value.path == str(path)
    assert "\n" not in str(info.value)


def test_unreadable_paths_raise_input_error(tmp_path: Path) -> None:
    for path in (tmp_path / "gone.jsonl", tmp_path, Path("nul\x00.jsonl")):
        with pytest.raises(InputError) as info:
            SOURCE.parse(path, OPTIONS)
        assert info.value.path == str(path)
        assert "\n" not in str(info.value)


def test_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.ndjson"
    body = '{"thread_id": "t", "sender": "A", "text": "one", "guid": "1"}\r\n' \
           '{"thread_id": "t", "sender": "A", "text": "two", "guid": "2"}\r\n'
    path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    assert SOURCE.matches(path)
    assert [m.text for m in SOURCE.parse(path, OPTIONS).messages] == ["one", "two"]


def test_offset_timestamps_are_converted_to_utc(tmp_path: Path) -> None:
    path = _write(tmp_path / "tz.jsonl", [
        {"guid": "a", "thread_id": "t", "sender": "A", "text": "x",
         "timestamp": "2024-06-30T23:30:00-05:00"},
    ])
    stamp = SOURCE.parse(path, OPTIONS).messages[0].timestamp
    assert stamp == datetime(2024, 6, 30, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert stamp is not None and stamp.utcoffset() == timedelta(0)
    assert (stamp.day, stamp.hour) == (1, 4)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("chat.jsonl", '{"thread_id": "t", "text": "hi"}\n', True),
        ("chat.ndjson", '{"thread_id": "t", "text": "hi"}\n', True),
        ("CHAT.JSONL", '{"thread_id": "t", "text": "hi"}\n', True),
        ("lead.jsonl", '\n   \n{"thread_id": "t", "text": "hi"}\n', True),
        ("docs.jsonl", '{"title": "t", "text": "a document"}\n', False),
        # a first message without text is still a message archive (that line is skipped)
        ("half.jsonl", '{"thread_id": "t"}\n{"thread_id": "t", "text": "hi"}\n', True),
        ("array.jsonl", '[{"thread_id": "t", "text": "hi"}]\n', False),
        ("broken.jsonl", '{"thread_id": "t", "text": \n', False),
        ("empty.jsonl", "", False),
        ("blank.jsonl", "\n\n  \n", False),
        ("chat.json", '{"thread_id": "t", "text": "hi"}\n', False),
        ("chat.txt", '{"thread_id": "t", "text": "hi"}\n', False),
    ],
)
def test_matches(tmp_path: Path, name: str, content: str, expected: bool) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert SOURCE.matches(path) is expected


def test_matches_never_raises(tmp_path: Path) -> None:
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 8)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    paths = [folder, binary, deep, tmp_path / "missing.jsonl", Path("nul\x00.jsonl")]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.jsonl")
        paths.append(tmp_path / "pipe.jsonl")
    if Path("/proc/self/mem").exists():
        (tmp_path / "mem.jsonl").symlink_to("/proc/self/mem")
        paths.append(tmp_path / "mem.jsonl")
    for path in paths:
        assert SOURCE.matches(path) is False, path


def test_line_separators_inside_strings_and_extreme_timestamps(tmp_path: Path) -> None:
    """Found by the break-it run: U+2028/U+0085 inside a JSON string split the line (the
    message was lost); an offset pushing a timestamp past year 1 or 9999 crashed the run."""
    rows = [
        '{"thread_id": "f", "sender": "Alice", "timestamp": "2024-03-01T18:05:00Z", '
        '"text": "one\u2028two pineapple"}',
        '{"thread_id": "f", "sender": "Carol", "timestamp": "2024-03-01T18:06:00Z", '
        '"text": "a\u0085b mango"}',
        '{"thread_id": "f", "sender": "Bob", "timestamp": "0001-01-01T00:30:00+01:00", '
        '"text": "too early"}',
        '{"thread_id": "f", "sender": "Bob", "timestamp": "9999-12-31T23:30:00-05:00", '
        '"text": "too late"}',
        '{"thread_id": "f", "sender": "Bob", "timestamp": "0001-01-01T00:00:00Z", '
        '"text": "go zero time"}',
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    archive = SOURCE.parse(path, OPTIONS)
    texts = {m.text: m.timestamp for m in archive.messages}
    assert set(texts) == {"one\u2028two pineapple", "a\u0085b mango", "go zero time"}
    assert texts["go zero time"] is None  # Go's "unknown" time reads as undated
    assert archive.skipped == 2
    assert [p.split(":")[0] for p in archive.problems] == ["line 3", "line 4"]


def test_lone_surrogates_are_repaired_with_one_problem_line_per_line(tmp_path: Path) -> None:
    """Issue 15 item 6(a): one ``\\ud83d`` escape failed the whole run (exit 1, nothing
    indexed). Every string of a line is repaired (pairs joined, lone halves U+FFFD), the line
    kept with one problem line naming its fields; a text left with nothing valid is a bad
    line."""
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join([
        '{"guid": "g1", "thread_id": "t", "sender": "Ann", "text": "hello \\ud83d there"}',
        '{"guid": "g2", "thread_id": "t", "sender": "Bob \\udc00", "thread_name": "Trip \\ud800",'
        ' "text": "a pair \\ud83d\\ude00 is fine", "reactions": [{"kind": "liked", '
        '"sender": "Cy\\udfff"}]}',
        '{"guid": "g\\ud83d", "thread_id": "t\\udc80", "sender": "Cy", "text": "odd ids"}',
        '{"guid": "g4", "thread_id": "t", "sender": "Ann", "text": " \\ud83d "}',
        '{"guid": "g5", "thread_id": "t", "sender": "Ann", "text": "clean \\ud83d\\ude00"}',
    ]) + "\n", encoding="utf-8")
    archive = SOURCE.parse(path, OPTIONS)
    got = {m.guid: m for m in archive.messages}
    assert set(got) == {"g1", "g2", "g\ufffd", "g5"}
    assert got["g1"].text == "hello \ufffd there"
    assert (got["g2"].sender_name, got["g2"].thread_name) == ("Bob \ufffd", "Trip \ufffd")
    assert got["g2"].text == "a pair \U0001f600 is fine"
    assert got["g2"].tapbacks == (Tapback(kind="liked", sender_name="Cy\ufffd"),)
    assert got["g\ufffd"].thread_id == "t\ufffd"
    assert got["g5"].text == "clean \U0001f600"  # a valid pair is no problem
    assert archive.skipped == 1
    assert archive.problems == (
        "line 1: invalid Unicode (a lone surrogate escape) in 'text' replaced by U+FFFD",
        "line 2: invalid Unicode (a lone surrogate escape) in 'reactions[0].sender', "
        "'sender', 'thread_name' replaced by U+FFFD",
        "line 3: invalid Unicode (a lone surrogate escape) in 'guid', 'thread_id' replaced "
        "by U+FFFD",
        "line 4: 'text' holds no valid text (only invalid Unicode)",
    )
    for message in archive.messages:  # every field encodes: a store or terminal takes it
        message.model_dump_json().encode("utf-8")


def test_offset_less_timestamps_are_read_in_the_configured_zone(tmp_path: Path) -> None:
    """Issue 15 item 9: a timestamp without an offset was read as UTC even with
    ``messages.timezone`` set. It is read in the configured zone; ``Z``, offsets and epoch
    numbers are unaffected, and derived guids do not depend on the zone."""
    path = _write(tmp_path / "export.jsonl", [
        {"thread_id": "t", "sender": "Ann", "timestamp": "2024-03-02T01:00:00", "text": "naive"},
        {"thread_id": "t", "sender": "Ann", "timestamp": "2024-03-01T22:30:00Z", "text": "zulu"},
        {"thread_id": "t", "sender": "Ann", "timestamp": "2024-03-01T22:30:00+02:00",
         "text": "offset"},
        {"thread_id": "t", "sender": "Ann", "timestamp": 1709316000, "text": "epoch"},
        # 02:30 does not exist in New York that night (clocks jump 02:00 → 03:00): read with
        # the offset before the jump, as zoneinfo does (fold=0)
        {"thread_id": "t", "sender": "Ann", "timestamp": "2024-03-10T02:30:00", "text": "gap"},
    ])
    zoned = MessageSourceOptions(timezone="America/New_York")
    utc = SOURCE.parse(path, OPTIONS.model_copy(update={"timezone": "UTC"}))
    new_york = SOURCE.parse(path, zoned)
    by_text = {m.text: m.timestamp for m in new_york.messages}
    assert by_text == {
        "naive": datetime(2024, 3, 2, 6, 0, tzinfo=UTC),
        "zulu": datetime(2024, 3, 1, 22, 30, tzinfo=UTC),
        "offset": datetime(2024, 3, 1, 20, 30, tzinfo=UTC),
        "epoch": datetime(2024, 3, 1, 18, 0, tzinfo=UTC),
        "gap": datetime(2024, 3, 10, 7, 30, tzinfo=UTC),
    }
    assert {m.text: m.timestamp for m in utc.messages}["naive"] == datetime(
        2024, 3, 2, 1, 0, tzinfo=UTC)  # UTC stays the default reading
    assert OPTIONS.timezone == "UTC"
    # the derived guid hashes the timestamp as written (naive read as UTC, as before), so a
    # message keeps its id when the zone changes and indexes built before keep theirs
    assert {m.guid for m in utc.messages} == {m.guid for m in new_york.messages}
    naive_guid = next(m.guid for m in new_york.messages if m.text == "naive")
    assert naive_guid == sha256_text("t", "Ann", "", "", "2024-03-02T01:00:00+00:00", "naive")
    with pytest.raises(ValueError, match="unknown time zone"):
        MessageSourceOptions(timezone="Mars/Olympus")
