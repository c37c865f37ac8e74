"""The shape of a line or sentence of text: a sentence, or a structural line that is not one.

An extractive answer quotes sentences. A heading, a footer or a record line can share every
word of a question and still answer nothing, so these shapes are told apart by rules over
the text's form (never over what it is about):

- ``heading``: a Markdown heading (``# …``) or a setext underline; a ``Chapter 12`` /
  ``Part II`` line; a line in capitals (``ANNUAL REPORT 2023``); a title-case line (every
  word but short function words capitalised) of at most twelve words without end
  punctuation (``Northwind Traders Shop History``).
- ``boilerplate``: copyright and licence footers (``©``, ``Copyright …``, ``All rights
  reserved``), page numbers (``Page 3 of 12``, ``- 14 -``), navigation (``Home | About |
  Contact``, ``Skip to main content``, ``Back to top``).
- ``record``: structured data rendered as text: ``key: value`` fields from the line's
  start (keys of at most three words, values of at most six), table rows (cells between
  ``|`` or tabs), delimited rows run together (``id,name,city 1,Acme,Leeds``: at least
  three commas or semicolons, as many as the words, no end punctuation).
- ``sentence``: everything else.

What belongs here: the rules and `shape_of`. What does not: how answers rank the shapes
(`domain.answers.extractive`), how text is cut into sentences (`domain.text.sentences`).
"""

from __future__ import annotations

from typing import Literal

import regex

__all__ = ["STRUCTURAL_SHAPES", "Shape", "is_list_item", "shape_of"]

Shape = Literal["sentence", "heading", "boilerplate", "record"]
"""What a line or sentence is (see the module docstring for the rules)."""

STRUCTURAL_SHAPES: frozenset[str] = frozenset({"heading", "boilerplate", "record"})
"""The shapes that are not sentences."""

_MARKDOWN_HEADING = regex.compile(r"^#{1,6}(?:\s|$)|^(?:=+|-+)$")
_NUMBERED_HEADING = regex.compile(
    r"^(?:chapter|part|section|book|volume|appendix|act|scene)\s+(?:\d+|[ivxlcdm]+|[a-z])\b",
    regex.IGNORECASE,
)
_COPYRIGHT = regex.compile(
    r"^(?:copyright\b|©|\(c\)\s*\d{4})|\ball rights reserved\b|©\s*\d{4}", regex.IGNORECASE
)
_PAGE_NUMBER = regex.compile(
    r"^(?:(?:page|p\.|pg\.?)\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?$|^[-–—]\s*\d{1,4}\s*[-–—]$",
    regex.IGNORECASE,
)
_NAVIGATION = regex.compile(
    r"^(?:skip to (?:main )?content|back to top|go to top|next page|previous page|read more"
    r"|table of contents|click here)\b",
    regex.IGNORECASE,
)
_KEY = r"[\p{L}\p{N}_][\p{L}\p{N}_./-]*(?: [\p{L}\p{N}_./-]+){0,2}"
_KEY_VALUE = regex.compile(rf"(?:^|(?<=\s)){_KEY}:\s+(?=\S)")
_MAX_FIELD_WORDS = 6
_END_PUNCT = regex.compile(r"[.!?…。！？:;,][\)\]\"'”’»」』]*$")
_SMALL_WORDS = frozenset((
    "a", "an", "the", "of", "and", "or", "nor", "but", "in", "on", "at", "to", "for", "by",
    "with", "from", "into", "as", "vs", "via", "per", "de", "del", "della", "der", "die", "das",
    "den", "du", "des", "la", "le", "les", "el", "y", "e", "et", "und", "van", "von", "da", "do",
    "dos", "di",
))
_WORD = regex.compile(r"[\p{L}\p{N}][\p{L}\p{N}'’.&-]*")
_LIST_ITEM = regex.compile(r"^(?:[-*•‣◦·]|\d{1,3}[.)]|[a-z][.)])\s+\S", regex.IGNORECASE)


def is_list_item(line: str) -> bool:
    """True when ``line`` starts a list item (``- …``, ``* …``, ``1. …``, ``a) …``)."""
    return bool(_LIST_ITEM.match(line.strip()))


def shape_of(text: str) -> Shape:
    """Return the shape of one line or sentence (rules in the module docstring).

    Args:
        text: one line or sentence; inner whitespace is collapsed before the rules apply.

    Returns:
        ``sentence``, ``heading``, ``boilerplate`` or ``record``.
    """
    line = " ".join(text.split())
    if not line:
        return "boilerplate"
    if _is_boilerplate(line):
        return "boilerplate"
    if _is_record(line, text):
        return "record"
    if _is_heading(line):
        return "heading"
    return "sentence"


def _is_boilerplate(line: str) -> bool:
    if _COPYRIGHT.search(line) or _PAGE_NUMBER.match(line):
        return True
    if _NAVIGATION.match(line) and len(line.split()) <= 6:
        return True
    cells = [c.strip() for c in regex.split(r"\s[|»·•]\s", line)]
    return (
        len(cells) >= 3
        and not line.startswith("|")
        and all(c and len(c.split()) <= 3 and not regex.search(r"\d", c) for c in cells)
    )


def _is_record(line: str, raw: str) -> bool:
    if line.startswith("|") or line.count(" | ") >= 2 or raw.count("\t") >= 2:
        return True
    if _KEY_VALUE.match(line):  # a record's first field opens the line
        keys = list(_KEY_VALUE.finditer(line))
        ends = [k.start() for k in keys[1:]] + [len(line)]
        values = [line[k.end() : end].split() for k, end in zip(keys, ends, strict=True)]
        short = all(len(v) <= _MAX_FIELD_WORDS for v in values)
        if short and (len(keys) >= 2 or not line.endswith((".", "!", "?"))):
            return True
    tokens = len(line.split())
    delimiters = max(line.count(","), line.count(";"))
    return delimiters >= 3 and delimiters >= tokens and not _END_PUNCT.search(line)


def _is_heading(line: str) -> bool:
    if _MARKDOWN_HEADING.match(line):
        return True
    words = _WORD.findall(line)
    if not words:
        return False
    if _NUMBERED_HEADING.match(line) and len(words) <= 8 and not line.endswith("."):
        return True
    cased = [c for c in line if c.isalpha() and (c.isupper() or c.islower())]
    if len(cased) >= 2 and not any(c.islower() for c in cased):
        return True  # a line in capitals
    if len(words) > 12 or _END_PUNCT.search(line):
        return False
    return all(
        w[0].isupper() or w[0].isdigit() or w.casefold() in _SMALL_WORDS for w in words
    ) and not all(w.casefold() in _SMALL_WORDS for w in words)
