"""Sentences for extractive answers: a maintained segmenter, inside the text's line structure.

Sentence boundaries inside running text come from ``nupunkt`` (the Punkt algorithm of Kiss &
Strunk, *Unsupervised Multilingual Sentence Boundary Detection*, Computational Linguistics
32(4), 2006, with the parameters nupunkt ships: pure Python, no dependency, nothing
downloaded at run time). It keeps abbreviations, initials, decimals and quotes inside their
sentence ("Acme Ltd. was founded in 1990.", "J. R. R. Tolkien", "3.5 per cent", "Dr.
Smith"), where a rule list of our own cut after "Ltd." and "Inc.". Compared (issue 16) with
pysbd, sentencex and syntok: pysbd took 76 s for 300,000 characters of a novel, sentencex
ran 24,000 characters together after an apostrophe it read as an opening quote, syntok
missed "10.0. Judges"; nupunkt got every case right, at about 3 MB/s on MuSiQue.

Around it, rules over lines that no sentence segmenter knows: a blank line ends a block; a
structural line (a heading, a footer, a record: `domain.text.shapes`) that stands between
sentence ends is a segment of its own, never merged into the next sentence ("ANNUAL REPORT
2023" above "Acme Ltd. was founded …"); a list item starts a new block; other line breaks
are hard-wrapped prose and join. CJK full stops (。！？), which need no following space,
also end a sentence.

Chunking does not use this module (`domain.text.analysis.sentence_spans` keeps every text
unit, so every id and benchmark, as it was).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING

import regex

from unified_kg_rag.domain.text.shapes import Shape, is_list_item, shape_of

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Segment", "sentence_segments"]


@dataclass(frozen=True)
class Segment:
    """One sentence or structural line of a text.

    Attributes:
        start: offset of its first character in the text.
        end: offset after its last character (surrounding whitespace excluded).
        shape: ``sentence``, ``heading``, ``boilerplate`` or ``record`` (`shape_of`).
    """

    start: int
    end: int
    shape: Shape


_LINE = regex.compile(r"[^\n]*(?:\n|$)")
_CJK_END = regex.compile(r"[。！？]+[」』）\"”’]*(?=\S)")
_OPEN_END = regex.compile(r"[.!?…。！？:][\)\]\"'”’»」』]*$")


@cache
def _splitter() -> Callable[[str], list[tuple[int, int]]]:
    import nupunkt  # imported on first use: a CLI command that never quotes pays nothing

    def spans(text: str) -> list[tuple[int, int]]:
        return [(int(a), int(b)) for a, b in nupunkt.sentence_spans(text)]

    return spans


def sentence_segments(text: str) -> list[Segment]:
    """Cut ``text`` into sentences and structural lines, in order, whitespace trimmed.

    Args:
        text: any text (a text unit, a passage); newlines carry its line structure.

    Returns:
        Non-overlapping `Segment` spans in text order; ``[]`` for blank text.
    """
    out: list[Segment] = []
    for start, end, shape in _blocks(text):
        if shape is not None:
            out.append(Segment(start, end, shape))
            continue
        flat = text[start:end].replace("\n", " ").replace("\r", " ")
        for a, b in _splitter()(flat):
            for c, d in _cjk_cuts(flat, a, b):
                segment = _trimmed(text, start + c, start + d)
                if segment is not None:
                    out.append(Segment(*segment, shape_of(text[segment[0] : segment[1]])))
    return out


def _blocks(text: str) -> list[tuple[int, int, Shape | None]]:
    """Blocks of prose (shape None) and structural lines (their shape), in order."""
    lines = [(m.start(), m.end()) for m in _LINE.finditer(text) if m.end() > m.start()]
    blocks: list[tuple[int, int, Shape | None]] = []
    prose: list[int] = []  # start and end of the open prose block
    after_end = True  # the line before ended a sentence (or there was none)

    def close() -> None:
        if prose:
            blocks.append((prose[0], prose[1], None))
            prose.clear()

    for i, (start, end) in enumerate(lines):
        line = text[start:end].strip()
        if not line:
            close()
            after_end = True
            continue
        following = text[lines[i + 1][0] : lines[i + 1][1]].lstrip() if i + 1 < len(lines) else ""
        shape = shape_of(line)
        continued = following[:1].islower()
        if shape != "sentence" and after_end and not continued:
            close()
            trimmed = _trimmed(text, start, end)
            if trimmed is not None:
                blocks.append((*trimmed, shape))
            after_end = True
            continue
        if is_list_item(line):
            close()
        if prose:
            prose[1] = end
        else:
            prose.extend((start, end))
        after_end = bool(_OPEN_END.search(line))
    close()
    return blocks


def _cjk_cuts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` after each CJK full stop that no space follows."""
    cuts = [start]
    cuts += [start + m.end() for m in _CJK_END.finditer(text[start:end])]
    cuts.append(end)
    return [(a, b) for a, b in pairwise(cuts) if b > a]


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None
