"""Unit tests of `domain.text.chunking`: boundary preference, overlap alignment, edge cases, ids."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys

import pytest

from unified_kg_rag.domain.identity import text_unit_id
from unified_kg_rag.domain.models import Document
from unified_kg_rag.domain.text.chunking import ChunkSpan, build_text_units, chunk_text

pytestmark = pytest.mark.unit


def word_spans(text: str) -> list[tuple[int, int]]:
    """Whitespace tokenizer: every run of non-space characters is one token."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def texts(text: str, chunks: list[ChunkSpan]) -> list[str]:
    return [text[c.start_char : c.end_char] for c in chunks]


def test_no_tokens_gives_no_chunks() -> None:
    assert chunk_text("", [], size_tokens=10, overlap_tokens=2) == []
    assert chunk_text("  \n\n ", word_spans("  \n\n "), size_tokens=10, overlap_tokens=2) == []


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1), (5, 7)])
def test_bad_window_parameters_raise(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("a b c", word_spans("a b c"), size_tokens=size, overlap_tokens=overlap)


def test_short_text_is_one_chunk_stripped() -> None:
    text = "\n  Hello there, world.  \n"
    [chunk] = chunk_text(text, word_spans(text), size_tokens=50, overlap_tokens=5)
    assert text[chunk.start_char : chunk.end_char] == "Hello there, world."
    assert chunk.n_tokens == 3


def test_paragraph_break_preferred_over_later_sentence_end() -> None:
    # Window of 20 tokens searches cuts 14..20: a paragraph break after token 15 and a
    # sentence end after token 18 are both there; the paragraph wins.
    first = words(14) + " end."  # 15 tokens
    second = "Next para starts. " + words(10, 100)
    text = first + "\n\n" + second
    chunks = chunk_text(text, word_spans(text), size_tokens=20, overlap_tokens=0)
    assert texts(text, chunks)[0] == first
    assert chunks[0].n_tokens == 15
    assert texts(text, chunks)[1].startswith("Next para starts.")


def test_latest_sentence_end_preferred_over_whitespace() -> None:
    text = words(15) + " one. " + words(1, 50) + " two. " + words(30, 100)
    chunks = chunk_text(text, word_spans(text), size_tokens=20, overlap_tokens=0)
    # sentence ends after token 16 ("one.") and 18 ("two."); the later one is taken
    assert texts(text, chunks)[0].endswith("w50 two.")
    assert chunks[0].n_tokens == 18


def test_line_break_preferred_over_plain_space() -> None:
    text = words(16) + "\n" + words(40, 100)
    chunks = chunk_text(text, word_spans(text), size_tokens=20, overlap_tokens=0)
    assert texts(text, chunks)[0] == words(16)
    assert texts(text, chunks)[1].startswith("w100 ")


def test_boundary_before_search_region_is_ignored() -> None:
    # The only sentence end is after token 3, outside the last 30 % of a 20-token window.
    text = "Short one. " + words(60)
    chunks = chunk_text(text, word_spans(text), size_tokens=20, overlap_tokens=0)
    assert chunks[0].n_tokens == 20
    assert [c.n_tokens for c in chunks] == [20, 20, 20, 2]


def test_overlap_starts_at_sentence_start_inside_it() -> None:
    # Chunk 1 ends after token 20 (no boundary in its last 30 %, a whitespace cut); the
    # overlap of 10 reaches back to token 10 and a sentence starts at token 12 ("Alpha").
    text = words(11) + " done. Alpha beta gamma " + words(40, 100)
    spans = word_spans(text)
    chunks = chunk_text(text, spans, size_tokens=20, overlap_tokens=10)
    assert chunks[0].n_tokens == 20
    assert chunks[1].start_char == text.index("Alpha")


def test_overlap_without_sentence_start_repeats_overlap_tokens() -> None:
    text = words(100)
    spans = word_spans(text)
    chunks = chunk_text(text, spans, size_tokens=20, overlap_tokens=5)
    first_tokens = {s for s in spans if chunks[0].start_char <= s[0] < chunks[0].end_char}
    second_tokens = {s for s in spans if chunks[1].start_char <= s[0] < chunks[1].end_char}
    assert len(first_tokens & second_tokens) == 5
    assert chunks[-1].end_char == len(text)


def test_giant_word_is_hard_cut_at_token_boundaries() -> None:
    text = "x" * 1000
    spans = [(i, i + 1) for i in range(len(text))]  # a tokenizer splitting the run
    chunks = chunk_text(text, spans, size_tokens=64, overlap_tokens=8)
    assert all(c.n_tokens <= 64 for c in chunks)
    assert chunks[0] == ChunkSpan(0, 64, 64)
    assert chunks[1].start_char == 56
    assert chunks[-1].end_char == 1000
    assert all(b.start_char < a.end_char for a, b in itertools.pairwise(chunks))


def test_each_chunk_adds_a_new_token() -> None:
    # Found by hypothesis: a whitespace cut inside the previous chunk's tokens made a chunk
    # ("d") that repeated the end of the one before and added nothing.
    text = "word word"
    spans = [(i, i + 1) for i, ch in enumerate(text) if not ch.isspace()]
    chunks = chunk_text(text, spans, size_tokens=2, overlap_tokens=1)
    assert texts(text, chunks) == ["wo", "or", "rd", "d w", "wo", "or", "rd"]


def test_run_of_blank_tokens_longer_than_the_overlap_is_skipped() -> None:
    # Every space is a token here. After "A B" the overlap would restart at "B", but the
    # next visible token "C" lies past a window of 3 from there: the window moves to it
    # rather than repeating "B".
    text = "A B      C D"
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+|\s", text)]
    chunks = chunk_text(text, spans, size_tokens=3, overlap_tokens=2)
    assert texts(text, chunks) == ["A B", "C D"]


def test_whitespace_tokens_and_leading_space_tokens_are_trimmed() -> None:
    # GPT-style tokens carry their leading space; whitespace runs are tokens of their own.
    text = "First sentence here.\n\nSecond sentence is here. Third one follows now."
    spans = [(m.start(), m.end()) for m in re.finditer(r" ?\S+|\s+", text)]
    chunks = chunk_text(text, spans, size_tokens=5, overlap_tokens=2)
    for chunk in chunks:
        piece = text[chunk.start_char : chunk.end_char]
        assert piece == piece.strip()
        assert piece
        inside = [s for s in spans if s[0] < chunk.end_char and s[1] > chunk.start_char]
        assert chunk.n_tokens == len(inside) <= 5
    # the paragraph break (a token of its own) is the cut; it is trimmed from the chunk
    assert texts(text, chunks)[0] == "First sentence here."
    assert chunks[0].n_tokens == 3
    assert texts(text, chunks)[-1].endswith("follows now.")


def test_cjk_sentences_are_boundaries() -> None:
    sentence = "東京は日本の首都です。"
    text = sentence * 30
    spans = [(i, i + 1) for i in range(len(text))]  # one token per character
    chunks = chunk_text(text, spans, size_tokens=25, overlap_tokens=0)
    assert all(text[c.start_char : c.end_char].endswith("。") for c in chunks)


def test_five_megabyte_single_line_is_chunked_whole() -> None:
    text = (words(50) + " ") * 20_000
    text = text[:5_000_000].rstrip()
    spans = word_spans(text)
    chunks = chunk_text(text, spans, size_tokens=600, overlap_tokens=100)
    assert max(c.n_tokens for c in chunks) == 600
    assert chunks[0].start_char == 0
    assert chunks[-1].end_char == len(text)
    assert len(chunks) == pytest.approx(len(spans) / 500, rel=0.05)


def _document(text: str) -> Document:
    return Document(
        id="doc-1", path="notes/a.txt", title="A", text=text, content_hash="h",
        metadata={"extension": ".txt", "bytes": len(text)},
    )  # fmt: skip


def test_build_text_units_slices_exactly_and_copies_metadata() -> None:
    text = "One sentence here. " * 40
    doc = _document(text)
    chunks = chunk_text(text, word_spans(text), size_tokens=30, overlap_tokens=6)
    units = build_text_units(doc, chunks)
    assert len(units) == len(chunks) > 1
    for index, (unit, chunk) in enumerate(zip(units, chunks, strict=True)):
        assert unit.text == text[chunk.start_char : chunk.end_char]
        assert (unit.start_char, unit.end_char, unit.n_tokens) == (
            chunk.start_char, chunk.end_char, chunk.n_tokens,
        )  # fmt: skip
        assert unit.id == text_unit_id("doc-1", chunk.start_char, unit.text)
        assert unit.document_id == "doc-1"
        assert unit.metadata == {
            "extension": ".txt", "bytes": len(text), "chunk_index": index,
            "path": "notes/a.txt", "title": "A",
        }  # fmt: skip
    assert len({u.id for u in units}) == len(units)


_ID_SCRIPT = """
import json, re
from unified_kg_rag.domain.text.chunking import build_text_units, chunk_text
from unified_kg_rag.domain.models import Document
text = "Alpha beta. Gamma delta epsilon.\\n\\nZeta eta theta. " * 30
spans = [(m.start(), m.end()) for m in re.finditer(r"\\S+", text)]
doc = Document(id="d", path="p.txt", title="t", text=text, content_hash="h")
units = build_text_units(doc, chunk_text(text, spans, size_tokens=40, overlap_tokens=8))
print(json.dumps([u.id for u in units]))
"""


def test_ids_are_identical_across_processes() -> None:
    runs = []
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _ID_SCRIPT], capture_output=True, text=True, env=env,
            check=True, timeout=120,
        )  # fmt: skip
        runs.append(json.loads(out.stdout))
    assert runs[0] == runs[1]
    assert len(runs[0]) > 2
    assert len(set(runs[0])) == len(runs[0])
