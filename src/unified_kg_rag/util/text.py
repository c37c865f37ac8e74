"""Small wording helpers shared by the entry points (CLI lines, job summaries)."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str) -> str:
    """``1 concept``, ``2 concepts``, ``1,024 links``: a count with its noun (plural ``-s``)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
