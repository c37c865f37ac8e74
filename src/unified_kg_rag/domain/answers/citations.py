"""Citations in an answer: which numbered sources (``[n]``) it actually cites.

Recognises ``[1]``, ``[1][3]``, ``[1, 3]`` and ``[1-3]`` (a range), and message labels
``[2.3]`` / ``[2.3, 4.1]`` (message 3 of source 2, `domain.messages.evidence`) as citing their
source; numbers that name no source are ignored, so a model's stray bracket cannot point at
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["cited_numbers"]

_BRACKET = re.compile(r"\[(\d+(?:\s*[,;\-–]\s*\d+)*)\]")
_LABELS = re.compile(r"\[\s*(\d+\.\d+(?:\s*[,;]\s*\d+\.\d+)*)\s*\]")
_RANGE = re.compile(r"(\d+)\s*[-–]\s*(\d+)")


def cited_numbers(answer: str, valid: Collection[int]) -> tuple[int, ...]:
    """Return the source numbers ``answer`` cites, ascending, restricted to ``valid``.

    Ranges are capped at 1,000 numbers so a malformed ``[1-99999999]`` stays cheap.
    """
    found: set[int] = set()
    for match in _LABELS.finditer(answer):
        found.update(int(label.split(".")[0]) for label in re.findall(r"\d+\.\d+", match.group(1)))
    for match in _BRACKET.finditer(answer):
        body = match.group(1)
        for start, end in _RANGE.findall(body):
            lo, hi = sorted((int(start), int(end)))
            found.update(range(lo, min(hi, lo + 1000) + 1))
        found.update(int(n) for n in re.findall(r"\d+", _RANGE.sub("", body)))
    return tuple(sorted(n for n in found if n in valid))
