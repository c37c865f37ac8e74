"""Laws every `TokenCounter` obeys, shared by the tests of each implementation."""

from __future__ import annotations

import regex

from unified_kg_rag.ports import TokenCounter

__all__ = ["assert_grapheme_safe_truncation", "grapheme_bounds"]


def grapheme_bounds(text: str) -> set[int]:
    """Offsets at which ``text`` may be cut without splitting a grapheme cluster."""
    return {0} | {m.end() for m in regex.finditer(r"\X", text)}


def assert_grapheme_safe_truncation(counter: TokenCounter, text: str, k: int) -> None:
    """``truncate`` returns a prefix within budget, cut between grapheme clusters, and the
    whole text when it fits."""
    out = counter.truncate(text, k)
    assert text.startswith(out)
    assert len(out) in grapheme_bounds(text)
    assert counter.count(out) <= k
    if k > 0 and counter.count(text) <= k:
        assert out == text
