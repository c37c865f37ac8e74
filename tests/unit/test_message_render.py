"""Unit tests of `domain.messages.transcripts`: merge, bounded windows, rendering, chunking, manifest diff."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime

import pytest

from unified_kg_rag.domain.messages.manifest import (
    ManifestEntry,
    chunk_transcript,
    diff_manifest,
    message_ref,
    parse_spans_record,
    respanned,
    spans_record,
)
from unified_kg_rag.domain.messages.transcripts import (
    SourceMessage,
    Tapback,
    TranscriptDoc,
    bound_messages,
    merge_messages,
    message_line_spans,
    messages_in_span,
    render_transcripts,
    transcript_hash,
)

pytestmark = pytest.mark.unit

HEADER = "Thread: Family\n"


def at(stamp: str) -> datetime:
    """``"2024-05-01 09:05"`` as a UTC datetime."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def msg(
    guid: str,
    stamp: str | None,
    text: str = "hi",
    *,
    thread: str = "chat-1",
    thread_name: str = "Family",
    sender: str = "Bob",
    handle: str = "+15550001",
    me: bool = False,
    tapbacks: tuple[Tapback, ...] = (),
) -> SourceMessage:
    return SourceMessage(
        guid=guid,
        thread_id=thread,
        thread_name=thread_name,
        sender_handle="" if me else handle,
        sender_name="Me" if me else sender,
        is_from_me=me,
        timestamp=None if stamp is None else at(stamp),
        text=text,
        tapbacks=tapbacks,
    )


def whitespace_tokens(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def block_of(doc: TranscriptDoc, guid: str) -> str:
    (span,) = [m for m in doc.messages if m.guid == guid]
    return doc.text[span.start : span.end]


def body_chars(doc: TranscriptDoc) -> int:
    """Characters of a transcript's message lines (the size `max_chars` bounds)."""
    return len(doc.text) - len(f"Thread: {doc.thread_name}\n")


# ----------------------------------------------------------------------------- merge


def test_merge_of_overlapping_exports_never_duplicates_a_message() -> None:
    a = [msg("g1", "2024-05-01 09:00"), msg("g2", "2024-05-01 10:00"), msg("g3", "2024-05-02 08:00")]
    b = [msg("g2", "2024-05-01 10:00"), msg("g3", "2024-05-02 08:00"), msg("g4", "2024-05-03 07:00")]

    merged = merge_messages([a, b])

    assert [m.guid for m in merged] == ["g1", "g2", "g3", "g4"]


def test_merge_keeps_the_first_occurrence_of_a_guid() -> None:
    first = msg("g1", "2024-05-01 09:00", "original text")
    second = msg("g1", "2024-05-01 09:00", "re-exported text")

    assert [m.text for m in merge_messages([[first], [second]])] == ["original text"]
    assert [m.text for m in merge_messages([[second], [first]])] == ["re-exported text"]


def test_merge_order_is_undated_first_then_time_then_guid_whatever_the_input_order() -> None:
    messages = [
        msg("z", "2024-05-01 09:00"),
        msg("a", "2024-05-01 09:00"),  # same time as "z": the guid breaks the tie
        msg("m", "2024-04-30 23:59"),
        msg("u2", None, "undated two"),
        msg("u1", None, "undated one"),
    ]
    expected = ["u1", "u2", "m", "a", "z"]

    assert [m.guid for m in merge_messages([messages])] == expected
    assert [m.guid for m in merge_messages([messages[::-1]])] == expected
    assert [m.guid for m in merge_messages([messages[3:], messages[:3]])] == expected


def test_source_message_normalizes_timestamps_to_utc_and_rejects_naive_ones() -> None:
    from zoneinfo import ZoneInfo

    local = datetime(2024, 5, 1, 9, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    message = SourceMessage(
        guid="g", thread_id="t", thread_name="T", sender_name="Bob", timestamp=local, text="x"
    )
    assert message.timestamp == datetime(2024, 5, 1, 7, 0, tzinfo=UTC)
    assert message.timestamp is not None and message.timestamp.utcoffset() is not None
    with pytest.raises(ValueError, match="timezone-aware"):
        SourceMessage(
            guid="g", thread_id="t", thread_name="T", sender_name="Bob",
            timestamp=datetime(2024, 5, 1, 9, 0), text="x",
        )


# ----------------------------------------------------------------------------- render


def test_render_exact_text_of_a_small_thread() -> None:
    reactions = (Tapback(kind="loved", sender_name="Ann"), Tapback(kind="liked", sender_name="Bob"))
    messages = [
        msg("m3", "2024-05-02 18:00", "Dinner at 7", sender="Ann", handle="ann@example.com"),
        msg("m1", "2024-05-01 09:05", "Morning all  "),
        msg("m2", "2024-05-01 09:07", "Coffee?\nI'm buying\n\n  bring cups", me=True,
            tapbacks=reactions),
    ]

    (doc,) = render_transcripts(messages)

    expected_blocks = {
        "m1": "[2024-05-01 09:05] Bob: Morning all",
        "m2": (
            "[2024-05-01 09:07] Me: Coffee?\n"
            "    I'm buying\n"
            "\n"
            "      bring cups\n"
            "    (reactions: liked by Bob, loved by Ann)"
        ),
        "m3": "[2024-05-02 18:00] Ann: Dinner at 7",
    }
    assert doc.text == HEADER + "".join(expected_blocks[g] + "\n" for g in ("m1", "m2", "m3"))
    assert doc.doc_key == "chat-1::2024-05-01..2024-05-02"
    assert doc.span == "2024-05-01..2024-05-02"
    assert doc.thread_id == "chat-1"
    assert doc.title == "Family (2024-05-01..2024-05-02)"
    assert doc.message_guids == ("m1", "m2", "m3")
    for guid, block in expected_blocks.items():
        assert block_of(doc, guid) == block
    spans = {m.guid: m for m in doc.messages}
    assert spans["m2"].is_from_me and spans["m2"].sender_handle == "" and spans["m2"].sender_name == "Me"
    assert spans["m3"].sender_handle == "ann@example.com"
    assert spans["m3"].timestamp == "2024-05-02T18:00:00+00:00"


def test_render_spans_locate_every_message_block_exactly() -> None:
    messages = [
        msg(f"g{i}", f"2024-05-0{1 + i % 3} 1{i}:00", f"line {i}\nmore {i}" if i % 2 else f"one {i}",
            tapbacks=(Tapback(kind="laughed", sender_name="Ann"),) if i == 4 else ())
        for i in range(8)
    ]

    docs = render_transcripts(messages, max_chars=60)

    assert len(docs) > 1
    for doc in docs:
        assert doc.text.startswith(HEADER)
        blocks = [doc.text[m.start : m.end] for m in doc.messages]
        assert doc.text == HEADER + "".join(b + "\n" for b in blocks)
        for span, block in zip(doc.messages, blocks, strict=True):
            source = next(m for m in messages if m.guid == span.guid)
            first_line = source.text.splitlines()[0]
            assert block.startswith(f"[{source.timestamp:%Y-%m-%d %H:%M}] Bob: {first_line}")
            assert block.count("\n") == source.text.count("\n") + (1 if source.tapbacks else 0)


def test_render_packs_consecutive_days_up_to_the_cap_and_never_splits_a_day() -> None:
    messages = [
        msg("d1a", "2024-05-01 09:00", "first day, first message"),
        msg("d1b", "2024-05-01 10:00", "first day, second"),
        msg("d2a", "2024-05-02 09:00", "second day"),
        msg("d3a", "2024-05-03 09:00", "third day"),
    ]
    day_size = {
        day: body_chars(render_transcripts([m for m in messages if m.guid.startswith(day)])[0])
        for day in ("d1", "d2", "d3")
    }

    exact = render_transcripts(messages, max_chars=day_size["d1"] + day_size["d2"])
    assert [d.doc_key for d in exact] == ["chat-1::2024-05-01..2024-05-02", "chat-1::2024-05-03"]
    assert [d.message_guids for d in exact] == [("d1a", "d1b", "d2a"), ("d3a",)]

    one_short = render_transcripts(messages, max_chars=day_size["d1"] + day_size["d2"] - 1)
    assert [d.doc_key for d in one_short] == [
        "chat-1::2024-05-01", "chat-1::2024-05-02..2024-05-03",
    ]

    # a cap smaller than a day's lines: each day whole in a transcript of its own
    tiny = render_transcripts(messages, max_chars=1)
    assert [d.message_guids for d in tiny] == [("d1a", "d1b"), ("d2a",), ("d3a",)]
    assert body_chars(tiny[0]) == day_size["d1"] > 1

    everything = render_transcripts(messages)
    assert [d.doc_key for d in everything] == ["chat-1::2024-05-01..2024-05-03"]


def test_render_keeps_a_single_oversized_day_whole_between_its_neighbours() -> None:
    big_day = [msg(f"big{i}", f"2024-05-02 1{i}:00", "word " * 20) for i in range(5)]
    messages = [
        msg("before", "2024-05-01 09:00", "short"),
        *big_day,
        msg("after", "2024-05-03 09:00", "short"),
    ]

    docs = render_transcripts(messages, max_chars=200)

    assert [d.doc_key for d in docs] == [
        "chat-1::2024-05-01", "chat-1::2024-05-02", "chat-1::2024-05-03",
    ]
    assert docs[1].message_guids == tuple(m.guid for m in big_day)
    assert body_chars(docs[1]) > 200


def test_render_orders_threads_by_first_message_and_days_within_a_thread() -> None:
    messages = [
        msg("a1", "2024-05-02 09:00", thread="alpha", thread_name="Alpha"),
        msg("b1", "2024-05-01 09:00", thread="beta", thread_name="Beta"),
        msg("a2", "2024-05-04 09:00", thread="alpha", thread_name="Alpha"),
        msg("b2", "2024-05-03 09:00", thread="beta", thread_name="Beta"),
    ]

    docs = render_transcripts(messages, max_chars=1)

    assert [d.doc_key for d in docs] == [
        "beta::2024-05-01", "beta::2024-05-03", "alpha::2024-05-02", "alpha::2024-05-04",
    ]
    assert [d.thread_name for d in docs] == ["Beta", "Beta", "Alpha", "Alpha"]
    assert docs[2].text.startswith("Thread: Alpha\n")


def test_render_puts_undated_messages_first_under_an_undated_day() -> None:
    messages = [
        msg("dated", "2024-05-01 09:00", "dated one"),
        msg("u2", None, "second undated"),
        msg("u1", None, "first undated"),
    ]

    split = render_transcripts(messages, max_chars=1)
    assert [d.doc_key for d in split] == ["chat-1::undated", "chat-1::2024-05-01"]
    assert split[0].text == HEADER + "[undated] Bob: first undated\n[undated] Bob: second undated\n"
    assert [m.timestamp for m in split[0].messages] == ["", ""]

    (packed,) = render_transcripts(messages)
    assert packed.doc_key == "chat-1::undated..2024-05-01"
    assert packed.message_guids == ("u1", "u2", "dated")


def test_render_in_a_time_zone_moves_messages_across_the_day_boundary() -> None:
    messages = [
        msg("morning", "2024-03-09 15:00", "morning"),  # 10:00 EST on 2024-03-09
        msg("late", "2024-03-10 03:30", "late night"),  # 22:30 EST, still 2024-03-09 in New York
        msg("next", "2024-03-10 12:00", "next day"),  # 08:00 EDT: clocks went forward overnight
    ]

    utc = render_transcripts(messages, max_chars=1)
    assert [d.doc_key for d in utc] == ["chat-1::2024-03-09", "chat-1::2024-03-10"]
    assert utc[1].message_guids == ("late", "next")

    ny = render_transcripts(messages, max_chars=1, tz="America/New_York")
    assert [d.doc_key for d in ny] == ["chat-1::2024-03-09", "chat-1::2024-03-10"]
    assert ny[0].message_guids == ("morning", "late")
    assert ny[0].text == (
        HEADER + "[2024-03-09 10:00] Bob: morning\n[2024-03-09 22:30] Bob: late night\n"
    )
    assert ny[1].text == HEADER + "[2024-03-10 08:00] Bob: next day\n"
    # provenance stays in UTC whatever the render zone
    assert ny[0].messages[1].timestamp == "2024-03-10T03:30:00+00:00"


@pytest.mark.parametrize("max_chars", [0, -5])
def test_render_rejects_a_non_positive_cap(max_chars: int) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        render_transcripts([msg("g", "2024-05-01 09:00")], max_chars=max_chars)


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "America", "../etc/passwd", ""])
def test_render_and_bound_reject_an_unknown_time_zone(zone: str) -> None:
    with pytest.raises(ValueError, match="time zone"):
        render_transcripts([msg("g", "2024-05-01 09:00")], tz=zone)
    with pytest.raises(ValueError, match="time zone"):
        bound_messages([msg("g", "2024-05-01 09:00")], tz=zone)


def test_render_of_nothing_is_nothing() -> None:
    assert render_transcripts([]) == []


def test_transcript_hash_follows_the_text() -> None:
    (doc,) = render_transcripts([msg("g", "2024-05-01 09:00", "hello")])
    (same,) = render_transcripts([msg("g", "2024-05-01 09:00", "hello")])
    (edited,) = render_transcripts([msg("g", "2024-05-01 09:00", "hello!")])

    assert transcript_hash(doc) == transcript_hash(same)
    assert transcript_hash(doc) != transcript_hash(edited)
    assert re.fullmatch(r"[0-9a-f]{64}", transcript_hash(doc))


# ----------------------------------------------------------------------------- bounded window


def test_bound_messages_since_limit_and_undated() -> None:
    messages = merge_messages([[
        msg("u", None),
        msg("a", "2024-05-01 09:00"),
        msg("b", "2024-05-02 03:00"),  # 2024-05-01 23:00 in New York
        msg("c", "2024-05-02 09:00"),
        msg("d", "2024-05-03 09:00"),
    ]])

    assert [m.guid for m in bound_messages(messages)] == ["u", "a", "b", "c", "d"]
    assert [m.guid for m in bound_messages(messages, since=date(2024, 5, 2))] == ["b", "c", "d"]
    assert [
        m.guid for m in bound_messages(messages, since=date(2024, 5, 2), tz="America/New_York")
    ] == ["c", "d"]
    # a limit window is widened to whole days: c's day (UTC) also holds b
    assert [m.guid for m in bound_messages(messages, limit=2)] == ["b", "c", "d"]
    assert [m.guid for m in bound_messages(messages, limit=1)] == ["d"]
    # an undated message is outside any window
    assert [m.guid for m in bound_messages(messages, limit=99)] == ["a", "b", "c", "d"]
    assert [m.guid for m in bound_messages(messages, since=date(2024, 5, 1), limit=10)] == [
        "a", "b", "c", "d",
    ]
    assert [m.guid for m in bound_messages(messages, since=date(2024, 5, 2), limit=1)] == ["d"]
    assert bound_messages(messages, since=date(2030, 1, 1)) == []
    with pytest.raises(ValueError, match="limit"):
        bound_messages(messages, limit=0)


# ----------------------------------------------------------------------------- chunking


def _chunk_doc() -> TranscriptDoc:
    (doc,) = render_transcripts([
        msg("m1", "2024-05-01 09:00", "one two three"),  # 6 tokens with stamp and sender
        msg("m2", "2024-05-01 09:01", "four five six"),
        msg("m3", "2024-05-01 09:02", "seven eight nine ten"),
        msg("m4", "2024-05-01 09:03", "eleven"),
    ])
    return doc


def test_chunk_transcript_packs_whole_messages_greedily() -> None:
    doc = _chunk_doc()
    tokens = whitespace_tokens(doc.text)
    blocks = message_line_spans(doc)
    per_block = [sum(1 for s, _ in tokens if a <= s < b) for a, b in blocks]
    assert per_block == [2 + 6, 6, 7, 4]  # "Thread: Family" rides with the first block

    chunks = chunk_transcript(doc, tokens, size_tokens=14)

    # 8+6 fits 14; 7+4 fits; together they would not
    assert [(c.start_char, c.end_char, c.n_tokens) for c in chunks] == [
        (0, blocks[1][1], 14), (blocks[2][0], blocks[3][1], 11),
    ]
    assert [[m.guid for m in messages_in_span(doc.messages, c.start_char, c.end_char)]
            for c in chunks] == [["m1", "m2"], ["m3", "m4"]]


def test_chunk_transcript_units_end_on_message_boundaries_and_cover_all_messages() -> None:
    messages = [msg(f"g{i:02d}", f"2024-05-01 09:{i:02d}", " ".join(["w"] * (i % 5 + 1)))
                for i in range(20)]
    (doc,) = render_transcripts(messages)
    tokens = whitespace_tokens(doc.text)
    starts = {s for s, _ in message_line_spans(doc)}
    ends = {e for _, e in message_line_spans(doc)}

    for size in (8, 10, 13, 40):  # the largest message block holds 8 tokens
        chunks = chunk_transcript(doc, tokens, size_tokens=size)
        covered: list[str] = []
        for chunk in chunks:
            assert chunk.start_char in starts and chunk.end_char in ends
            assert chunk.n_tokens == sum(1 for s, _ in tokens if chunk.start_char <= s < chunk.end_char)
            assert chunk.n_tokens <= size
            covered += [m.guid for m in messages_in_span(doc.messages, chunk.start_char, chunk.end_char)]
        assert covered == [m.guid for m in messages]


def test_chunk_transcript_cuts_an_oversized_message_alone() -> None:
    long_text = " ".join(f"word{i}" for i in range(30))
    (doc,) = render_transcripts([
        msg("short1", "2024-05-01 09:00", "hello there"),
        msg("long", "2024-05-01 09:01", long_text),
        msg("short2", "2024-05-01 09:02", "bye now"),
    ])
    tokens = whitespace_tokens(doc.text)
    span = {m.guid: m for m in doc.messages}

    chunks = chunk_transcript(doc, tokens, size_tokens=10)

    inside = [c for c in chunks if span["long"].start <= c.start_char and c.end_char <= span["long"].end]
    assert len(inside) >= 4  # 33 tokens in windows of 10
    assert all(c.n_tokens <= 10 for c in chunks)
    assert inside[0].start_char == span["long"].start and inside[-1].end_char == span["long"].end
    assert sum(c.n_tokens for c in inside) == 3 + 30
    for chunk in chunks:
        guids = [m.guid for m in messages_in_span(doc.messages, chunk.start_char, chunk.end_char)]
        assert guids in (["short1"], ["long"], ["short2"])
    assert [c.end_char for c in chunks] == sorted(c.end_char for c in chunks)


def test_chunk_transcript_counts_newline_tokens_between_messages() -> None:
    """A tokenizer may give the newline between two messages a token of its own."""
    doc = _chunk_doc()
    tokens = [(m.start(), m.end()) for m in re.finditer(r"\S+|\n", doc.text)]

    chunks = chunk_transcript(doc, tokens, size_tokens=14)

    for chunk in chunks:
        held = sum(1 for s, _ in tokens if chunk.start_char <= s < chunk.end_char)
        assert chunk.n_tokens == held <= 14


def test_chunk_transcript_rejects_a_window_below_one_token() -> None:
    doc = _chunk_doc()
    with pytest.raises(ValueError, match="size_tokens"):
        chunk_transcript(doc, whitespace_tokens(doc.text), size_tokens=0)


def test_message_line_spans_attach_the_header_to_the_first_block() -> None:
    doc = _chunk_doc()
    spans = message_line_spans(doc)

    assert spans[0] == (0, doc.messages[0].end)
    assert spans[1:] == [(m.start, m.end) for m in doc.messages[1:]]
    assert [m.guid for m in messages_in_span(doc.messages, spans[1][0], spans[2][1])] == ["m2", "m3"]
    assert messages_in_span(doc.messages, 0, doc.messages[0].start) == []


# ----------------------------------------------------------------------------- manifest


def _manifest(docs: list[TranscriptDoc]) -> dict[str, ManifestEntry]:
    return {
        d.doc_key: ManifestEntry(
            doc_key=d.doc_key, document_id=f"doc-{d.doc_key}", content_hash=transcript_hash(d),
            message_guids=d.message_guids,
        )
        for d in docs
    }


def test_diff_manifest_classifies_new_changed_unchanged_and_removed() -> None:
    old = render_transcripts([
        msg("a", "2024-05-01 09:00", "kept"),
        msg("b", "2024-05-02 09:00", "edited"),
        msg("c", "2024-05-03 09:00", "dropped"),
    ], max_chars=1)
    new = render_transcripts([
        msg("a", "2024-05-01 09:00", "kept"),
        msg("b", "2024-05-02 09:00", "edited, later"),
        msg("d", "2024-05-04 09:00", "brand new"),
        msg("z", "2024-05-01 09:00", "other thread", thread="chat-0"),
    ], max_chars=1)

    diff = diff_manifest(_manifest(old), new)

    assert diff.new == ("chat-1::2024-05-04", "chat-0::2024-05-01")
    assert diff.changed == ("chat-1::2024-05-02",)
    assert diff.unchanged == ("chat-1::2024-05-01",)
    assert diff.removed == ("chat-1::2024-05-03",)

    # a hash that folds in chunking settings reads every known key as changed
    settled = diff_manifest(_manifest(old), new, hash_of=lambda d: transcript_hash(d) + ":v2")
    assert settled.unchanged == ()
    assert settled.changed == ("chat-1::2024-05-01", "chat-1::2024-05-02")


def test_respanned_prunes_exactly_the_re_span_casualties_of_a_grown_window() -> None:
    """Seed 004, 2026-08-10: growing a bounded window backward re-keys later transcripts."""
    days = [f"2024-05-0{d}" for d in range(1, 7)]
    archive = merge_messages([
        [msg(f"{day}-{i}", f"{day} 1{i}:00", f"news of {day} part {i}") for day in days for i in range(2)],
        [msg("elsewhere", "2024-05-01 12:00", "another thread", thread="chat-2")],
    ])
    one_day = body_chars(render_transcripts([m for m in archive if m.guid.startswith(days[0])])[0])
    cap = 2 * one_day  # two days per transcript

    # an earlier full build: 01..02, 03..04, 05..06 (and the other thread)
    full = render_transcripts(archive, max_chars=cap)
    assert [d.doc_key for d in full] == [
        "chat-1::2024-05-01..2024-05-02", "chat-1::2024-05-03..2024-05-04",
        "chat-1::2024-05-05..2024-05-06", "chat-2::2024-05-01",
    ]
    indexed = _manifest(full)
    indexed["legacy::2024-04-01"] = ManifestEntry(
        doc_key="legacy::2024-04-01", document_id="doc-legacy", content_hash="0" * 64,
    )  # a record without guids proves nothing

    # the bounded window grows back to 2024-05-02: the pack boundaries shift by a day
    window = bound_messages(archive, since=date(2024, 5, 2))
    grown = render_transcripts(window, max_chars=cap)
    assert [d.doc_key for d in grown] == [
        "chat-1::2024-05-02..2024-05-03", "chat-1::2024-05-04..2024-05-05", "chat-1::2024-05-06",
    ]

    diff = diff_manifest(indexed, grown)
    assert diff.new == tuple(d.doc_key for d in grown)
    assert diff.changed == diff.unchanged == ()
    assert diff.removed == (
        "chat-1::2024-05-01..2024-05-02", "chat-1::2024-05-03..2024-05-04",
        "chat-1::2024-05-05..2024-05-06", "chat-2::2024-05-01", "legacy::2024-04-01",
    )

    pruned = respanned(indexed, diff.removed, grown)

    # 01..02 straddles the window's edge (01 is out of it), chat-2 is wholly out, the legacy
    # record has no guids: all kept
    assert pruned == ["chat-1::2024-05-03..2024-05-04", "chat-1::2024-05-05..2024-05-06"]
    assert respanned(indexed, ["not-in-manifest"], grown) == []
    assert respanned(indexed, list(reversed(diff.removed)), grown) == pruned[::-1]


def test_respanned_keeps_a_transcript_a_message_limit_cuts_through() -> None:
    archive = [msg(f"g{i}", f"2024-05-0{1 + i // 3} 1{i % 3}:00", f"message {i}") for i in range(9)]
    full = render_transcripts(archive, max_chars=1)  # one transcript per day, 3 messages each
    indexed = _manifest(full)

    # bound_messages widens a limit to whole days (g3..g8); a window cut inside a day
    # (here by hand, g4..g8) must still keep the transcript it cuts
    assert next(m.guid for m in bound_messages(archive, limit=5)) == "g3"
    window = archive[4:]
    docs = render_transcripts(window, max_chars=10_000)
    diff = diff_manifest(indexed, docs)

    assert [d.doc_key for d in docs] == ["chat-1::2024-05-02..2024-05-03"]
    assert diff.removed == ("chat-1::2024-05-01", "chat-1::2024-05-02", "chat-1::2024-05-03")
    assert respanned(indexed, diff.removed, docs) == ["chat-1::2024-05-03"]


# ----------------------------------------------------------------------------- provenance record


def test_spans_record_round_trip() -> None:
    (doc,) = render_transcripts([
        msg("g1", "2024-05-01 09:00", "héllo 東京", thread_name="Fämily"),
        msg("g2", "2024-05-01 09:05", "reply", me=True, thread_name="Fämily"),
    ])

    stored = parse_spans_record(spans_record(doc))

    assert stored.doc_key == doc.doc_key
    assert stored.thread_id == doc.thread_id
    assert stored.thread_name == "Fämily"
    assert stored.messages == doc.messages
    ref = message_ref(stored, stored.messages[1], block_of(doc, "g2"), label="3.2")
    assert ref.guid == "g2" and ref.is_from_me and ref.sender_name == "Me"
    assert ref.thread_id == "chat-1" and ref.thread_name == "Fämily" and ref.label == "3.2"
    assert ref.text == "[2024-05-01 09:05] Me: reply"
    assert ref.timestamp == "2024-05-01T09:05:00+00:00"


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "not json",
        "[]",
        "null",
        "42",
        '{"doc_key": "k", "thread_id": "t"}',
        '{"doc_key": "k", "thread_id": "t", "thread_name": "n", "messages": 5}',
        '{"doc_key": "k", "thread_id": "t", "thread_name": "n", "messages": ["x"]}',
        '{"doc_key": "k", "thread_id": "t", "thread_name": "n", "messages": [{"guid": "g"}]}',
        json.dumps({"doc_key": "k", "thread_id": "t", "thread_name": "n", "messages": [
            {"guid": "g", "start": "soon", "end": 3, "sender_name": "Bob"}]}),
    ],
)
def test_parse_spans_record_rejects_garbage(raw: str) -> None:
    with pytest.raises(ValueError, match="not a message spans record"):
        parse_spans_record(raw)



def test_names_cannot_forge_lines_and_extreme_dates_render() -> None:
    """Found by the break-it run: a line break in a sender name forged a message line; a
    time zone pushing year 1 below the calendar crashed the render; %Y did not pad years."""
    forged = msg("g1", "2024-03-01 09:00", sender="Bob\n[2024-03-01 09:00] Eve: I did it",
                 thread_name="Fam\u2028ily")
    assert forged.sender_name == "Bob [2024-03-01 09:00] Eve: I did it"
    (doc,) = render_transcripts([forged])
    assert doc.text.count("\n[") == 1 and doc.thread_name == "Fam ily"
    emoji = msg("g2", "2024-03-01 09:00", sender="\U0001f468\u200d\U0001f469 Kim")
    assert emoji.sender_name == "\U0001f468\u200d\U0001f469 Kim"  # a joiner is not a break
    early = SourceMessage(guid="g3", thread_id="t", thread_name="T", sender_name="Bob",
                          timestamp=datetime(1, 1, 1, tzinfo=UTC), text="very old")
    (doc,) = render_transcripts([early], tz="America/New_York")
    assert doc.doc_key == "t::0001-01-01" and "[0001-01-01 00:00] Bob: very old" in doc.text
    assert bound_messages([early], since=date(1, 1, 1), tz="America/New_York") == [early]


def test_source_message_strings_are_always_valid_unicode() -> None:
    """Issue 15 item 6: a source (or a handle name from the configuration) handing over a lone
    surrogate made the whole run fail: the model refused the text, or the store refused the
    transcript. The model repairs every string it holds."""
    from unified_kg_rag.domain.messages.transcripts import SourceMessage, Tapback

    message = SourceMessage(
        guid="g\ud83d", thread_id="t\udce9", thread_name="Trip \ud800", sender_name="Bob\udc00",
        sender_handle="+1\udfff", timestamp=None, text="hi \ud83d\ude00 and \ud83d",
        tapbacks=(Tapback(kind="liked", sender_name="Cy\ud83d"),),
    )
    assert (message.guid, message.thread_id, message.thread_name) == (
        "g\ufffd", "t\ufffd", "Trip \ufffd")
    assert (message.sender_name, message.sender_handle) == ("Bob\ufffd", "+1\ufffd")
    assert message.text == "hi \U0001f600 and \ufffd"
    assert message.tapbacks[0].sender_name == "Cy\ufffd"
    render_transcripts([message])[0].text.encode("utf-8")


def test_an_edited_message_is_marked_and_keeps_its_history() -> None:
    """Issue 15 item 10: an edited message rendered like any other; the mark follows its text
    (before the reactions), in the render zone, and the history rides on the spans record and
    the message's `MessageRef`, never in the indexed text."""
    from unified_kg_rag.domain.messages.evidence import message_body
    from unified_kg_rag.domain.messages.ref import MessageEdit

    earlier = (MessageEdit(timestamp="2024-05-01T09:05:00+00:00", text="Dinner at 7?"),)
    edited = SourceMessage(
        guid="e1", thread_id="fam", thread_name="Family", sender_name="Bob",
        timestamp=at("2024-05-01 09:05"), text="Dinner at 8?", edited=True,
        edited_at=at("2024-05-01 09:07"), edits=earlier,
        tapbacks=(Tapback(kind="liked", sender_name="Ann"),),
    )
    unknown = SourceMessage(guid="e2", thread_id="fam", thread_name="Family",
                            sender_name="Ann", timestamp=at("2024-05-01 09:10"),
                            text="typo fixed", edited=True)
    (doc,) = render_transcripts([edited, unknown], tz="Europe/Berlin")
    assert doc.text == (
        "Thread: Family\n"
        "[2024-05-01 11:05] Bob: Dinner at 8?\n"
        "    (edited 2024-05-01 11:07)\n"
        "    (reactions: liked by Ann)\n"
        "[2024-05-01 11:10] Ann: typo fixed\n"
        "    (edited)\n"
    )
    assert "Dinner at 7?" not in doc.text
    first = doc.messages[0]
    assert (first.edited, first.edited_at, first.edits) == (
        True, "2024-05-01T09:07:00+00:00", earlier)
    block = doc.text[first.start:first.end]
    assert message_body(block) == "Dinner at 8?"
    stored = parse_spans_record(spans_record(doc))
    assert stored.messages == doc.messages
    ref = message_ref(stored, stored.messages[0], block)
    assert (ref.edited, ref.edited_at, ref.edits) == (True, "2024-05-01T09:07:00+00:00", earlier)
    plain = SourceMessage(guid="p", thread_id="fam", thread_name="Family", sender_name="Bob",
                          timestamp=at("2024-05-01 09:05"), text="hi")
    record = json.loads(spans_record(render_transcripts([plain])[0]))
    assert "edited" not in record["messages"][0]  # defaults are not stored
