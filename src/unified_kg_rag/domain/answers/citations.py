"""Citations in an answer: which numbered sources it cites, and which labels name no source.

An answer cites the sources of its context in brackets: ``[1]``, ``[1][3]``, ``[1, 3]``, a
range ``[1-3]``, and over message transcripts a message label ``[2.3]`` (message 3 of source
2, `domain.messages.evidence`); a bracket may mix them (``[2.3, 4]``). A label counts only
when it names something the model saw:

- ``[n]`` cites source ``n`` when the context has a source ``n``;
- ``[n.m]`` cites source ``n`` only when source ``n`` is a message-transcript passage
  holding at least ``m`` messages (``Source.messages``): on a plain document, or past the
  passage's last message, it names nothing;
- ``[a-b]`` cites every source from ``a`` to ``b`` the context has (at most 1,000 numbers,
  so a malformed ``[1-99999999]`` stays cheap). A range reaching a number the context does
  not have (``[2-7]`` with 4 sources, ``[0-2]``) still cites the sources it covers, and the
  range as written is reported as invalid too: part of it names nothing.

Every other label (``[42]`` and ``[0]`` with three sources, ``[3.7]`` on a document) is
*invalid*: it never marks a source cited, and `check_citations` reports it as written, so a
reader can be told the answer points at sources that do not exist.

A bracket inside a quotation between curly quotes (``“… 3,623 metres deep [5].” [1]``) is
quoted text, not a citation: an extractive answer quotes documents verbatim, footnote
markers and ``key[0]`` fields included (`unquoted`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from unified_kg_rag.domain.models import Source

__all__ = [
    "INVALID_MARK",
    "CitationCheck",
    "CitationGroup",
    "CitationItem",
    "check_citations",
    "citation_groups",
    "label_names_message",
    "mark_invalid_citations",
    "unquoted",
]

_ITEM = r"\d+(?:\.\d+|\s*[-–]\s*\d+)?"
_GROUP = re.compile(rf"\[\s*({_ITEM}(?:\s*[,;]\s*{_ITEM})*)\s*\]")
_ITEM_RE = re.compile(_ITEM)
_RANGE = re.compile(r"(\d+)\s*[-–]\s*(\d+)")
_MAX_RANGE = 1000
_QUOTATION = re.compile("\u201c[^\u201c\u201d]*\u201d")
INVALID_MARK = "?"
"""Appended to an invalid label by `mark_invalid_citations` (``[42]`` → ``[42?]``)."""


@dataclass(frozen=True)
class CitationItem:
    """One label inside a citation bracket.

    Attributes:
        text: the label as written (``"42"``, ``"3.7"``, ``"2-7"``).
        start: offset of the label in the answer.
        end: end offset of the label in the answer.
        source: the source number it names (the first of a range).
        message: the message number of an ``[n.m]`` label, else None.
        last: the last number of a range ``[a-b]`` (ascending order), else None.
    """

    text: str
    start: int
    end: int
    source: int
    message: int | None = None
    last: int | None = None

    def numbers(self) -> range:
        """The source numbers the label names (one, or a range capped at 1,000)."""
        if self.last is None:
            return range(self.source, self.source + 1)
        return range(self.source, min(self.last, self.source + _MAX_RANGE - 1) + 1)


@dataclass(frozen=True)
class CitationGroup:
    """One citation bracket (``[1, 3]``) and the labels in it.

    Attributes:
        start: offset of ``[`` in the answer.
        end: offset after ``]``.
        items: its labels, in order.
    """

    start: int
    end: int
    items: tuple[CitationItem, ...]


@dataclass(frozen=True)
class CitationCheck:
    """What an answer cites, checked against the sources of its context.

    Attributes:
        cited: the numbers of the sources it cites, ascending (valid labels only).
        invalid: the labels that name no source, as written and bracketed (``"[42]"``,
            ``"[3.7]"``, ``"[2-7]"``), in order of first appearance, each once.
    """

    cited: tuple[int, ...]
    invalid: tuple[str, ...]


def unquoted(answer: str) -> str:
    """Return ``answer`` with the brackets inside curly-quoted quotations made parentheses.

    Offsets are kept (one character for one), so spans found in the result index
    ``answer``; `citation_groups` scans this form.
    """
    return _QUOTATION.sub(
        lambda m: m.group(0).replace("[", "(").replace("]", ")"), answer
    )


def citation_groups(answer: str) -> Iterator[CitationGroup]:
    """Yield the citation brackets of ``answer`` in order, with their labels.

    Brackets inside a curly-quoted quotation (``“…”``) are not citations (`unquoted`).
    """
    answer = unquoted(answer)
    for match in _GROUP.finditer(answer):
        items: list[CitationItem] = []
        for item in _ITEM_RE.finditer(answer, match.start(1), match.end(1)):
            text = item.group(0)
            start, end = item.span()
            span = _RANGE.fullmatch(text)
            if span is not None:
                lo, hi = sorted((int(span.group(1)), int(span.group(2))))
                items.append(CitationItem(text, start, end, lo, last=hi))
            elif "." in text:
                n, m = text.split(".")
                items.append(CitationItem(text, start, end, int(n), message=int(m)))
            else:
                items.append(CitationItem(text, start, end, int(text)))
        yield CitationGroup(match.start(), match.end(), tuple(items))


def label_names_message(source: Source | None, message: int) -> bool:
    """True when ``[n.message]`` names a message of ``source`` (the source numbered ``n``).

    Only a message-transcript passage (a ``text_unit`` with `Source.messages`) shows its
    messages with labels in the context; ``message`` counts from 1.
    """
    return (
        source is not None
        and source.kind == "text_unit"
        and 1 <= message <= len(source.messages)
    )


def _resolve(item: CitationItem, by_n: Mapping[int, Source]) -> tuple[list[int], bool]:
    """Return the source numbers ``item`` cites and whether all of it names something."""
    if item.message is not None:
        ok = label_names_message(by_n.get(item.source), item.message)
        return ([item.source] if ok else []), ok
    numbers = item.numbers()
    found = [n for n in numbers if n in by_n]
    whole = len(found) == len(numbers) and (item.last is None or item.last == numbers[-1])
    return found, whole


def check_citations(answer: str, sources: Sequence[Source]) -> CitationCheck:
    """Return the sources ``answer`` cites and the labels that name none (module docstring).

    Args:
        answer: the answer text.
        sources: the sources of its context (``n`` numbers, kinds and messages).

    Returns:
        The cited source numbers (ascending) and the invalid labels, as written.
    """
    by_n = {s.n: s for s in sources}
    cited: set[int] = set()
    invalid: dict[str, None] = {}
    for group in citation_groups(answer):
        for item in group.items:
            found, whole = _resolve(item, by_n)
            cited.update(found)
            if not whole:
                invalid.setdefault(f"[{item.text}]")
    return CitationCheck(tuple(sorted(cited)), tuple(invalid))


def mark_invalid_citations(answer: str, sources: Sequence[Source]) -> str:
    """Return ``answer`` with every invalid label marked: ``[42]`` → ``[42?]``.

    Valid labels and the rest of the text are unchanged; a label in a list is marked alone
    (``[1, 42]`` → ``[1, 42?]``).
    """
    by_n = {s.n: s for s in sources}
    marks = [
        item.end
        for group in citation_groups(answer)
        for item in group.items
        if not _resolve(item, by_n)[1]
    ]
    out: list[str] = []
    cursor = 0
    for at in marks:
        out.append(answer[cursor:at])
        out.append(INVALID_MARK)
        cursor = at
    out.append(answer[cursor:])
    return "".join(out)
