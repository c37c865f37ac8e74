"""Chunking: cutting a document's text into token windows (text units) at natural boundaries.

What belongs here is the pure windowing algorithm over precomputed token spans and the step
that turns its windows into `TextUnit` models; tokenizers live behind the `TokenCounter` port
and the ingestion stage calls both.

Algorithm (`chunk_text`): windows of at most ``size_tokens`` tokens. A window that does not
reach the end of the text ends at the best boundary in its last ~30 %: a paragraph break,
else a sentence end, else a line break, else any whitespace, the latest of the best kind,
else a hard cut at a token boundary (a long run with no space, e.g. a URL or unsegmented
text). A token wider than `LONG_TOKEN_CHARS` characters (WordPiece reads a word of over 100
characters as one unknown-word token, so 200,000 characters without a space were 2 tokens and
one unit) is first split into the pieces of the script-aware estimate
(`domain.text.tokens.EstimateTokenCounter`), so such a run is hard-cut like any other. The
next window starts ``overlap_tokens`` before the end, moved forward to the first
sentence start inside that overlap when there is one, so overlaps begin with whole sentences.
Every window adds at least one new token, so the loop always ends; the cost is linear in the
number of tokens (a 5 MB single line of words chunks in well under a second).

Defaults (`ChunkingConfig`) and why:

- ``size_tokens = 600``: the GraphRAG paper (Edge et al., 2024, "From Local to Global",
  section "Source Documents → Text Chunks") extracted about twice as many entity references
  from 600-token chunks as from 2,400-token ones.
- ``overlap_tokens = 100``: a sentence that a window's end cuts, and that began within the
  window's last 100 tokens, is whole in the next unit (which starts at that sentence), so
  a fact stated in a sentence of ordinary length is never seen only in halves.
- Sentence-aligned boundaries keep units self-contained: extraction sees whole statements,
  embeddings are not diluted by fragments, and extractive answers can quote a unit as is.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from unified_kg_rag.domain.identity import text_unit_id
from unified_kg_rag.domain.models import Document, MetadataValue, TextUnit
from unified_kg_rag.domain.text.analysis import paragraph_breaks, sentence_spans
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter

__all__ = [
    "BOUNDARY_SEARCH_FRACTION",
    "CHUNKING_VERSION",
    "LONG_TOKEN_CHARS",
    "ChunkSpan",
    "build_text_units",
    "chunk_text",
    "split_long_tokens",
]

CHUNKING_VERSION = 2
"""Version of the chunking algorithm; bump it when the windows it produces change, so
indexed documents are chunked again (2: tokens wider than `LONG_TOKEN_CHARS` are split)."""

LONG_TOKEN_CHARS = 100
"""The widest token, in characters, taken as one token; a wider one (an unknown-word token
covering a whole run without whitespace) is measured by the script-aware estimate instead.
No WordPiece or BPE vocabulary token of a word of ordinary text is this wide."""

BOUNDARY_SEARCH_FRACTION = 0.3
"""The trailing share of a full window searched for a boundary to end it at."""

_NEWLINE = re.compile("\n")


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """One chunk of a text.

    Attributes:
        start_char: offset of the chunk's first character (code points).
        end_char: offset one past its last character; the chunk is ``text[start_char:end_char]``.
        n_tokens: the number of tokens in the chunk (at most the window size).
    """

    start_char: int
    end_char: int
    n_tokens: int


class _Boundaries:
    """Token-cut positions of each boundary kind; a cut ``i`` ends a chunk before token ``i``."""

    def __init__(self, text: str, spans: Sequence[tuple[int, int]]) -> None:
        self.text = text
        self.spans = spans
        self.ends = [end for _, end in spans]
        sentences = sentence_spans(text)
        self.sentence = self._cuts(start for start, _ in sentences[1:])
        # strongest first: paragraph, sentence, line; whitespace is checked token by token
        self.ranked = (
            self._cuts(paragraph_breaks(text)),
            self.sentence,
            self._cuts(m.end() for m in _NEWLINE.finditer(text)),
        )

    def _cuts(self, offsets: Iterable[int]) -> list[int]:
        """Map character offsets (where a new unit's text begins) to sorted token cuts.

        The cut for offset ``b`` is the number of tokens ending at or before ``b``, so a token
        that carries the separator (a full stop and blank line as one token) stays before the
        cut, and one that starts with it (a word with its leading space) goes after it.
        """
        n = len(self.spans)
        cuts = {bisect_right(self.ends, b) for b in offsets}
        return sorted(c for c in cuts if 0 < c < n)

    def best_cut(self, lo: int, hi: int) -> int:
        """Return the best cut in ``[lo, hi]``: the strongest kind, latest first; else ``hi``."""
        for cuts in self.ranked:
            j = bisect_right(cuts, hi) - 1
            if j >= 0 and cuts[j] >= lo:
                return cuts[j]
        for cut in range(hi, lo - 1, -1):
            if self._space_between(cut):
                return cut
        return hi

    def _space_between(self, cut: int) -> bool:
        """Whether whitespace separates token ``cut - 1`` from token ``cut``."""
        prev_end, start = self.spans[cut - 1][1], self.spans[cut][0]
        text = self.text
        if 0 < start <= len(text) and prev_end < start and text[start - 1].isspace():
            return True
        if start < len(text) and text[start].isspace():
            return True
        return 0 < prev_end <= len(text) and text[prev_end - 1].isspace()

    def first_sentence_start(self, lo: int, hi: int) -> int | None:
        """Return the first sentence-start cut in ``[lo, hi)``, if any."""
        j = bisect_left(self.sentence, lo)
        if j < len(self.sentence) and self.sentence[j] < hi:
            return self.sentence[j]
        return None


def chunk_text(
    text: str,
    spans: Sequence[tuple[int, int]],
    *,
    size_tokens: int,
    overlap_tokens: int,
) -> list[ChunkSpan]:
    """Cut ``text`` into overlapping token windows that end at natural boundaries.

    Args:
        text: the document text.
        spans: ``(start, end)`` character offsets of the tokens of ``text``, in order and not
            overlapping, as `TokenCounter.token_spans` returns them.
        size_tokens: the most tokens a chunk holds (>= 1).
        overlap_tokens: about how many tokens a chunk repeats from the previous one
            (``0 <= overlap_tokens < size_tokens``); never more than this.

    Returns:
        The chunks in text order, each ``text[start_char:end_char]`` with no leading or
        trailing whitespace; together they cover every token. ``[]`` when there are no
        tokens.

    Raises:
        ValueError: ``size_tokens`` < 1, or ``overlap_tokens`` outside ``[0, size_tokens)``.

    Source: windows sized and overlapped in tokens as in GraphRAG's token chunker; boundary
    order as in LangChain's ``RecursiveCharacterTextSplitter`` (paragraph, line, word,
    character) with sentence ends added after paragraphs.
    """
    if size_tokens < 1:
        raise ValueError("size_tokens must be at least 1")
    if not 0 <= overlap_tokens < size_tokens:
        raise ValueError("overlap_tokens must be in [0, size_tokens)")
    spans = split_long_tokens(text, spans)
    n = len(spans)
    visible = [i for i, span in enumerate(spans) if not _blank(text, span)]
    if not visible:
        return []

    def next_visible(i: int) -> int | None:
        j = bisect_left(visible, i)
        return visible[j] if j < len(visible) else None

    bounds = _Boundaries(text, spans)
    search = max(1, int(size_tokens * BOUNDARY_SEARCH_FRACTION))
    chunks: list[ChunkSpan] = []
    start, end = visible[0], 0
    while True:
        # ``fresh``: the first visible token after the previous chunk. Every chunk holds it,
        # so every chunk adds text and the loop ends. Only a whitespace-token run longer than
        # a window can put it out of reach; the window then moves up to it.
        fresh = next_visible(end)
        if fresh is None:
            break
        if fresh >= start + size_tokens:
            moved = next_visible(fresh - size_tokens + 1)
            start = fresh if moved is None else moved
        hi = min(start + size_tokens, n)
        end = hi if hi == n else bounds.best_cut(max(start + 1, fresh + 1, hi - search), hi)
        chunks.append(_trimmed(text, spans, start, end))
        if end == n:
            break
        nxt = max(end - overlap_tokens, start + 1)
        aligned = bounds.first_sentence_start(nxt, end) if nxt < end else None
        following = next_visible(aligned if aligned is not None else nxt)
        if following is None:
            break
        start = following
    return chunks


def split_long_tokens(
    text: str, spans: Sequence[tuple[int, int]]
) -> Sequence[tuple[int, int]]:
    """Return ``spans`` with every token wider than `LONG_TOKEN_CHARS` split into estimate pieces.

    A tokenizer can give one token for a whole run without whitespace (WordPiece's unknown-word
    token for a word over 100 characters): such a token is replaced by the pieces
    `EstimateTokenCounter.token_spans` gives for its text (about four characters of a word, one
    symbol or CJK character each; never inside a grapheme cluster), so chunks can be cut inside
    the run and a chunk's token count stays an honest measure of its length.

    Args:
        text: the document text.
        spans: ``(start, end)`` token offsets into ``text``, in order.

    Returns:
        ``spans`` itself when no token is that wide (the common case: nothing is copied),
        else a new list, in order, covering the same text.
    """
    if all(end - start <= LONG_TOKEN_CHARS for start, end in spans):
        return spans
    estimate = EstimateTokenCounter()
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if end - start <= LONG_TOKEN_CHARS:
            out.append((start, end))
            continue
        pieces = estimate.token_spans(text[start:end])
        out.extend([(start + a, start + b) for a, b in pieces] or [(start, end)])
    return out


def _trimmed(text: str, spans: Sequence[tuple[int, int]], first: int, stop: int) -> ChunkSpan:
    """Return the chunk of tokens ``[first, stop)`` (holding a visible token), edges trimmed."""
    while first < stop and _blank(text, spans[first]):
        first += 1
    while stop > first and _blank(text, spans[stop - 1]):
        stop -= 1
    start_char, end_char = spans[first][0], spans[stop - 1][1]
    while text[start_char].isspace():
        start_char += 1
    while text[end_char - 1].isspace():
        end_char -= 1
    return ChunkSpan(start_char, end_char, stop - first)


def _blank(text: str, span: tuple[int, int]) -> bool:
    start, end = span
    return start >= end or text[start:end].isspace()


def build_text_units(document: Document, chunks: Sequence[ChunkSpan]) -> list[TextUnit]:
    """Turn chunks of ``document.text`` into text units.

    Args:
        document: the document the chunks were cut from.
        chunks: `chunk_text` output for ``document.text``.

    Returns:
        One `TextUnit` per chunk, in order; ids from `text_unit_id` (stable across runs);
        metadata is the document's plus ``chunk_index``, ``path`` and ``title``.
    """
    units: list[TextUnit] = []
    for index, chunk in enumerate(chunks):
        unit_text = document.text[chunk.start_char : chunk.end_char]
        metadata: dict[str, MetadataValue] = {
            **document.metadata,
            "chunk_index": index,
            "path": document.path,
            "title": document.title,
        }
        units.append(
            TextUnit(
                id=text_unit_id(document.id, chunk.start_char, unit_text),
                document_id=document.id,
                text=unit_text,
                n_tokens=chunk.n_tokens,
                start_char=chunk.start_char,
                end_char=chunk.end_char,
                metadata=metadata,
            )
        )
    return units
