"""Token-budget packing: fit ranked context sections into the answer model's budget.

Sections go in rank order; each costs its header plus its text. The first section that does not
fit whole is truncated to what is left (when at least ``min_tail_tokens`` remain) and packing
stops there, so a better-ranked section is never dropped for a worse one.
Source: seed 000 §7 (TokenManager: "within it sections go in score order and the first that
overflows is truncated").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["PackedSection", "pack_sections"]


class _Counter(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


@dataclass(frozen=True)
class PackedSection:
    """One section as packed: its input position, the text kept, and whether it was cut."""

    index: int
    text: str
    truncated: bool
    tokens: int


def pack_sections(
    texts: Sequence[str],
    budget_tokens: int,
    counter: _Counter,
    *,
    header_tokens: Sequence[int] | None = None,
    min_tail_tokens: int = 32,
) -> list[PackedSection]:
    """Pack ranked section texts into ``budget_tokens``.

    Args:
        texts: section texts, best first.
        budget_tokens: the budget, in ``counter``'s tokens.
        counter: counts and truncates text (never inside a character).
        header_tokens: tokens each section's header costs (default 0 each).
        min_tail_tokens: a truncated section keeps at least this many text tokens, or it is
            left out.

    Returns:
        The packed sections in input order; their token costs (header included) sum to at most
        ``budget_tokens``.
    """
    headers = list(header_tokens) if header_tokens is not None else [0] * len(texts)
    packed: list[PackedSection] = []
    left = budget_tokens
    for i, text in enumerate(texts):
        cost_header = headers[i]
        n = counter.count(text)
        if cost_header + n <= left:
            packed.append(PackedSection(i, text, False, cost_header + n))
            left -= cost_header + n
            continue
        room = left - cost_header
        if room >= min_tail_tokens:
            cut = counter.truncate(text, room).rstrip()
            if cut:
                used = cost_header + counter.count(cut)
                packed.append(PackedSection(i, cut, True, used))
        break
    return packed
