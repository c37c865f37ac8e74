"""Property tests of `domain.text.chunking.chunk_text` over generated texts and tokenizers."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.text.chunking import ChunkSpan, chunk_text

pytestmark = pytest.mark.unit

Spans = list[tuple[int, int]]

PIECES = [
    "word", "Word", "an", "x", "東京", "서울에서", "é", "3.5", "Dr.", "e.g.", "(aside)", "“quote.”",
    " ", " ", " ", "  ", "     ", ".", ". ", "! ", "? ", "。", "\n", "\n\n", "\n \n", "\t",
]  # fmt: skip


def whitespace_tokens(text: str) -> Spans:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def char_tokens(text: str) -> Spans:
    return [(m.start(), m.end()) for m in re.finditer(r"\S", text)]


def gpt_like_tokens(text: str) -> Spans:
    """Words carry their leading space; other whitespace runs are tokens of their own."""
    return [(m.start(), m.end()) for m in re.finditer(r" ?[^\s.]+|[.]|\s+", text)]


def spaced_tokens(text: str) -> Spans:
    """Words are tokens and so is every whitespace character (long runs of blank tokens)."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+|\s", text)]


def trailing_space_tokens(text: str) -> Spans:
    """Words carry the whitespace that follows them (as some SentencePiece setups do)."""
    return [(m.start(), m.end()) for m in re.finditer(r"\s*\S+\s*", text)]


TOKENIZERS: list[Callable[[str], Spans]] = [
    whitespace_tokens, char_tokens, gpt_like_tokens, spaced_tokens, trailing_space_tokens,
]  # fmt: skip


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, Spans, int, int]:
    text = "".join(draw(st.lists(st.sampled_from(PIECES), max_size=300)))
    spans = draw(st.sampled_from(TOKENIZERS))(text)
    size = draw(st.integers(min_value=1, max_value=40))
    overlap = draw(st.integers(min_value=0, max_value=size - 1))
    return text, spans, size, overlap


def token_indices(spans: Spans, chunk: ChunkSpan) -> set[int]:
    return {i for i, (s, e) in enumerate(spans) if s < chunk.end_char and e > chunk.start_char}


@settings(max_examples=300, deadline=None)
@given(cases())
def test_chunk_invariants(case: tuple[str, Spans, int, int]) -> None:
    text, spans, size, overlap = case
    chunks = chunk_text(text, spans, size_tokens=size, overlap_tokens=overlap)

    visible = [(s, e) for s, e in spans if text[s:e].strip()]
    if not visible:
        assert chunks == []
        return
    assert chunks

    # offsets slice exactly, no whitespace at the edges, token counts exact and bounded
    for chunk in chunks:
        piece = text[chunk.start_char : chunk.end_char]
        assert piece
        assert piece == piece.strip()
        assert chunk.n_tokens == len(token_indices(spans, chunk))
        assert 1 <= chunk.n_tokens <= size

    # in order, and every chunk adds text past the previous one (progress)
    for a, b in itertools.pairwise(chunks):
        assert a.start_char < b.start_char
        assert a.end_char < b.end_char
    assert len(chunks) <= len(visible)

    # coverage: the visible part of every token lies inside some chunk
    for s, e in visible:
        inner = text[s:e]
        lo = s + len(inner) - len(inner.lstrip())
        hi = e - (len(inner) - len(inner.rstrip()))
        assert any(c.start_char <= lo and hi <= c.end_char for c in chunks)

    # consecutive chunks share at most overlap_tokens tokens
    for a, b in itertools.pairwise(chunks):
        assert len(token_indices(spans, a) & token_indices(spans, b)) <= overlap

    # deterministic
    assert chunk_text(text, spans, size_tokens=size, overlap_tokens=overlap) == chunks


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1, max_size=400),
    st.integers(min_value=8, max_value=60),
)
def test_no_overlap_partitions_the_tokens(tokens: list[str], size: int) -> None:
    text = " ".join(tokens)
    spans = whitespace_tokens(text)
    chunks = chunk_text(text, spans, size_tokens=size, overlap_tokens=0)
    assert sum(c.n_tokens for c in chunks) == len(spans)
    assert " ".join(text[c.start_char : c.end_char] for c in chunks) == text
