"""Lenient reading of the dates a claim reply states, to ISO-8601 (reduced precision kept).

Models write dates every way: ``2024-03-15``, ``2024-03-15T00:00:00``, ``March 15, 2024``,
``15/03/2024``, ``March 2024``, ``2024``, ``2024年3月15日``, ``2024년 3월``. A date is returned
as ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY`` (ISO 8601 with only the parts the text states);
anything that is not a date (``early 1990s``, ``2023-13-45``, ``unknown``, ``不明``, ``""``)
is None, and the claim keeps going without it. General forms are read by ``dateutil``'s parser
(not fuzzy: "sometime in 2020" is not a date); CJK forms by the patterns here.

Source: seed 000 §4.1 (claims) and §11 (claim dates in CJK, corpus-language placeholders).
"""

from __future__ import annotations

from datetime import date, datetime

import regex
from dateutil import parser as date_parser

__all__ = ["parse_claim_date"]

_UNKNOWN = frozenset(
    {"", "none", "null", "n/a", "na", "unknown", "unspecified", "not specified", "not stated",
     "-", "—", "?", "tbd", "不明", "未知", "미상", "알 수 없음", "不詳"}
)
_CJK = regex.compile(
    r"^\s*(\d{4})\s*[年년]\s*(?:(\d{1,2})\s*[月월]\s*(?:(\d{1,2})\s*[日일])?)?\s*$"
)
_CJK_QUARTER = regex.compile(
    r"^\s*(\d{4})\s*[年년]?\s*(?:第\s*)?([1-4])\s*(?:季度|四半期|분기)\s*$"
)
_QUARTER = regex.compile(
    r"^\s*(?:Q([1-4])\s*[-/ ]?\s*(\d{4})|(\d{4})\s*[-/ ]?\s*Q([1-4]))\s*$", regex.IGNORECASE
)
_DOTTED = regex.compile(r"^\s*\d{1,2}\.\d{1,2}\.\d{4}\s*$")
_DIGITS = regex.compile(r"\d+")
_YEAR = regex.compile(r"^\s*(\d{4})\s*$")
_YEAR_MONTH = regex.compile(r"^\s*(\d{4})[-/.](\d{1,2})\s*$")
_DEFAULTS = (datetime(1, 1, 1), datetime(2, 2, 2))


def _iso(year: int, month: int | None = None, day: int | None = None) -> str | None:
    """Return the ISO form of the parts given, or None when they are no calendar date."""
    try:
        date(year, month or 1, day or 1)
    except ValueError:
        return None
    if not 1 <= year <= 9999:
        return None
    if month is None:
        return f"{year:04d}"
    if day is None:
        return f"{year:04d}-{month:02d}"
    return f"{year:04d}-{month:02d}-{day:02d}"


def parse_claim_date(value: object) -> str | None:
    """Return ``value`` as an ISO-8601 date (``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY``), or None.

    A JSON number is a year (``2024``); a quarter (``Q3 2021``, ``2021-Q3``, ``2024年第3四半期``)
    is its first month; a dotted numeric date is day first (``01.05.2020`` → ``2020-05-01``,
    the European form); a two-digit year (``45``, ``3/4/99``) is None (its century is a
    guess); a time zone is ignored (its name is never looked up).

    Args:
        value: what the reply states (a string or an integer year; anything else is None).

    Returns:
        The date with the precision the text states; None for a placeholder ("unknown",
        "N/A", "不明"), an impossible date ("2023-13-45"), a vague one ("early 1990s") or a
        text that is not a date. Never raises.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    text = " ".join(value.split()).strip(" .,;")
    if text.casefold() in _UNKNOWN:
        return None
    if m := _YEAR.match(text):
        return _iso(int(m.group(1)))
    if m := _YEAR_MONTH.match(text):
        return _iso(int(m.group(1)), int(m.group(2)))
    if m := _CJK.match(text):
        month = int(m.group(2)) if m.group(2) else None
        return _iso(int(m.group(1)), month, int(m.group(3)) if m.group(3) and month else None)
    if m := _CJK_QUARTER.match(text):
        return _iso(int(m.group(1)), 3 * int(m.group(2)) - 2)
    if m := _QUARTER.match(text):
        year, quarter = (m.group(2), m.group(1)) if m.group(1) else (m.group(3), m.group(4))
        return _iso(int(year), 3 * int(quarter) - 2)
    return _parse_general(text)


def _parse_general(text: str) -> str | None:
    """Read a date with ``dateutil`` twice (two defaults) to tell stated parts from filled ones."""
    dayfirst = _DOTTED.match(text) is not None
    try:
        a, b = (
            date_parser.parse(text, default=d, dayfirst=dayfirst, ignoretz=True)
            for d in _DEFAULTS
        )
    except (ValueError, OverflowError, TypeError):
        return None
    if a.year != b.year:  # no year stated: not a date a claim can be placed by
        return None
    if not any(len(n) >= 3 and int(n) == a.year for n in _DIGITS.findall(text)):
        return None  # a two-digit year: the century would be a guess
    month = a.month if a.month == b.month else None
    day = a.day if month is not None and a.day == b.day else None
    return _iso(a.year, month, day)
