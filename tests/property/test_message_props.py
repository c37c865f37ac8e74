"""Property tests of `domain.messages.transcripts`: rendering, merging and chunking over generated archives."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from random import Random
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.messages.manifest import chunk_transcript
from unified_kg_rag.domain.messages.transcripts import (
    SourceMessage,
    Tapback,
    TranscriptDoc,
    merge_messages,
    message_line_spans,
    messages_in_span,
    render_transcripts,
    transcript_hash,
)

pytestmark = pytest.mark.unit

Spans = list[tuple[int, int]]
EPOCH = datetime(2024, 3, 8, tzinfo=UTC)
SETTINGS = settings(max_examples=60, deadline=None)

_line = st.text(alphabet="ab cé東!.?", min_size=1, max_size=25).filter(lambda s: s.strip() != "")
_text = st.lists(_line, min_size=1, max_size=3).map("\n".join)
_tapback = st.builds(
    Tapback, kind=st.sampled_from(["loved", "liked", "laughed"]), sender_name=st.sampled_from(["Ann", "Me"])
)


@st.composite
def archives(draw: st.DrawFn) -> list[SourceMessage]:
    """Messages with distinct guids over a few threads and days (some undated)."""
    n = draw(st.integers(min_value=1, max_value=25))
    guids = draw(st.lists(st.text(alphabet="0123456789abcdef", min_size=4, max_size=8),
                          min_size=n, max_size=n, unique=True))
    messages = []
    for guid in guids:
        minutes = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=4 * 24 * 60)))
        thread = draw(st.sampled_from(["t1", "t2", "t3"]))
        messages.append(SourceMessage(
            guid=guid,
            thread_id=thread,
            thread_name=f"Thread {thread}",
            sender_name=draw(st.sampled_from(["Ann", "Bob", "Me"])),
            timestamp=None if minutes is None else EPOCH + timedelta(minutes=minutes),
            text=draw(_text),
            tapbacks=tuple(draw(st.lists(_tapback, max_size=2))),
        ))
    return messages


def whitespace_tokens(text: str) -> Spans:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def newline_tokens(text: str) -> Spans:
    """Words, and every newline a token of its own (BPE tokenizers keep them)."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+|\n", text)]


TOKENIZERS: list[Callable[[str], Spans]] = [whitespace_tokens, newline_tokens]


def keys_and_hashes(docs: list[TranscriptDoc]) -> list[tuple[str, str]]:
    return [(d.doc_key, transcript_hash(d)) for d in docs]


def line_chars(doc: TranscriptDoc) -> int:
    return len(doc.text) - len(f"Thread: {doc.thread_name}\n")


@SETTINGS
@given(archives(), st.randoms(use_true_random=False), st.integers(min_value=20, max_value=400),
       st.sampled_from(["UTC", "America/New_York"]))
def test_render_is_deterministic_and_independent_of_input_order(
    messages: list[SourceMessage], rnd: Random, max_chars: int, tz: str
) -> None:
    shuffled = list(messages)
    rnd.shuffle(shuffled)

    docs = render_transcripts(messages, max_chars=max_chars, tz=tz)

    assert render_transcripts(shuffled, max_chars=max_chars, tz=tz) == docs
    again = render_transcripts(merge_messages([shuffled]), max_chars=max_chars, tz=tz)
    assert keys_and_hashes(again) == keys_and_hashes(docs)
    assert len({d.doc_key for d in docs}) == len(docs)


@SETTINGS
@given(archives(), st.integers(min_value=1, max_value=400))
def test_every_message_lands_in_exactly_one_transcript_of_its_thread(
    messages: list[SourceMessage], max_chars: int
) -> None:
    docs = render_transcripts(messages, max_chars=max_chars)

    placed = Counter(g for d in docs for g in d.message_guids)
    assert placed == Counter(m.guid for m in messages)
    thread_of = {m.guid: m.thread_id for m in messages}
    for doc in docs:
        assert {thread_of[g] for g in doc.message_guids} == {doc.thread_id}
        assert doc.doc_key == f"{doc.thread_id}::{doc.span}"


@SETTINGS
@given(archives(), st.integers(min_value=1, max_value=400))
def test_day_packing_is_greedy_and_never_splits_a_day(
    messages: list[SourceMessage], max_chars: int
) -> None:
    docs = render_transcripts(messages, max_chars=max_chars)

    def days(doc: TranscriptDoc) -> list[str]:
        return [m.timestamp[:10] or "undated" for m in doc.messages]

    for doc in docs:
        assert line_chars(doc) <= max_chars or len(set(days(doc))) == 1
        first, last = days(doc)[0], days(doc)[-1]
        assert doc.span == (first if first == last else f"{first}..{last}")
    for doc, following in pairwise(docs):
        if doc.thread_id != following.thread_id:
            continue
        assert days(doc)[-1] < days(following)[0] or days(doc)[-1] == "undated"
        # the next transcript's first day did not fit into this one
        first_day = [m for m in following.messages if (m.timestamp[:10] or "undated") == days(following)[0]]
        day_chars = sum(m.end - m.start + 1 for m in first_day)
        assert line_chars(doc) + day_chars > max_chars


@SETTINGS
@given(archives(), st.data())
def test_merging_a_corpus_with_a_subset_of_itself_changes_nothing(
    messages: list[SourceMessage], data: st.DataObject
) -> None:
    subset = data.draw(st.lists(st.sampled_from(messages), unique_by=lambda m: m.guid))
    alone = merge_messages([messages])

    assert merge_messages([messages, subset]) == alone
    assert merge_messages([subset, messages]) == alone
    assert merge_messages([subset, messages, messages[::-1]]) == alone
    assert render_transcripts(merge_messages([subset, messages])) == render_transcripts(alone)


@SETTINGS
@given(archives(), st.integers(min_value=1, max_value=400),
       st.sampled_from(["UTC", "America/New_York"]))
def test_message_spans_tile_the_transcript_text(
    messages: list[SourceMessage], max_chars: int, tz: str
) -> None:
    by_guid = {m.guid: m for m in messages}
    zone = UTC if tz == "UTC" else ZoneInfo(tz)

    for doc in render_transcripts(messages, max_chars=max_chars, tz=tz):
        header = f"Thread: {doc.thread_name}\n"
        blocks = [doc.text[m.start : m.end] for m in doc.messages]
        assert doc.text == header + "".join(block + "\n" for block in blocks)
        for span, block in zip(doc.messages, blocks, strict=True):
            source = by_guid[span.guid]
            when = source.timestamp
            stamp = "[undated]" if when is None else f"[{when.astimezone(zone):%Y-%m-%d %H:%M}]"
            assert block.startswith(f"{stamp} {source.sender_name}: ")
            expected_lines = len(source.text.strip().splitlines()) + (1 if source.tapbacks else 0)
            assert block.count("\n") + 1 == expected_lines
            assert span.sender_name == source.sender_name
        tiles = message_line_spans(doc)
        assert tiles[0][0] == 0 and tiles[-1][1] == len(doc.text) - 1
        for (_, end), (start, _) in pairwise(tiles):
            assert start == end + 1 and doc.text[end] == "\n"


@SETTINGS
@given(archives(), st.integers(min_value=1, max_value=40), st.sampled_from(TOKENIZERS))
def test_chunk_transcript_units_partition_the_message_blocks(
    messages: list[SourceMessage], size: int, tokenizer: Callable[[str], Spans]
) -> None:
    for doc in render_transcripts(messages, max_chars=300):
        tokens = tokenizer(doc.text)
        chunks = chunk_transcript(doc, tokens, size_tokens=size)
        blocks = message_line_spans(doc)

        assert chunks, "every transcript has text"
        for chunk in chunks:
            held = sum(1 for s, _ in tokens if chunk.start_char <= s < chunk.end_char)
            assert chunk.n_tokens == held
            assert held <= size
        for before, after in pairwise(chunks):
            assert before.end_char <= after.start_char
        for start, end in blocks:
            inside = [c for c in chunks if c.start_char < end and c.end_char > start]
            assert inside, "a message fell out of every unit"
            block_tokens = sum(1 for s, _ in tokens if start <= s < end)
            if block_tokens <= size:
                # a message that fits is held whole by one unit
                assert len(inside) == 1
                assert inside[0].start_char <= start and end <= inside[0].end_char
            else:
                # an oversized message is cut alone, its pieces covering its every token
                assert all(start <= c.start_char and c.end_char <= end for c in inside)
                assert inside[0].start_char == start and inside[-1].end_char == end
        for chunk in chunks:
            # units begin and end on message boundaries unless they are pieces of one message
            guids = messages_in_span(doc.messages, chunk.start_char, chunk.end_char)
            if chunk.end_char <= doc.messages[0].start:
                continue  # a piece of the "Thread:" header (an oversized first block)
            assert guids
            if len(guids) > 1:
                assert chunk.start_char in {s for s, _ in blocks}
                assert chunk.end_char in {e for _, e in blocks}
