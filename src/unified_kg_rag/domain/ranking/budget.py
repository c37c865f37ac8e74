"""Token-budget packing: fit ranked context sections into the answer model's budget.

Sections go in rank order; each costs its header plus its text. The first section that does not
fit whole is truncated to what is left (when at least ``min_tail_tokens`` remain) and packing
stops there, so a better-ranked section is never dropped for a worse one.
Source: seed 000 §7 (TokenManager: "within it sections go in score order and the first that
overflows is truncated").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["PackedSection", "pack_sections", "pack_typed"]


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


def pack_typed(
    texts: Mapping[str, Sequence[str]],
    shares: Mapping[str, float],
    budget_tokens: int,
    counter: _Counter,
    *,
    header_tokens: Mapping[str, Sequence[int]] | None = None,
    min_tail_tokens: int = 32,
) -> dict[str, list[PackedSection]]:
    """Pack ranked sections of several types, each type within its share of the budget.

    Each type with sections gets ``budget × share / Σ shares of the types present`` and packs
    like `pack_sections`. Budget a type leaves unused goes to the types that still have
    sections left out, in proportion to their shares, until none is left out or no budget
    is left (seed 000 §7: shares, never cross-type score comparisons, decide the mix).

    Args:
        texts: type -> section texts, best first.
        shares: type -> share (non-negative; a type without a share, or with 0, gets only
            budget the others leave).
        budget_tokens: the total budget, in ``counter``'s tokens.
        counter: counts and truncates text.
        header_tokens: type -> tokens each section's header costs.
        min_tail_tokens: as in `pack_sections`.

    Returns:
        type -> packed sections (input positions within the type), types with none omitted.
        The costs of all packed sections sum to at most ``budget_tokens``.
    """
    kinds = [k for k, v in texts.items() if v]
    if not kinds or budget_tokens <= 0:
        return {}
    weight = {k: max(shares.get(k, 0.0), 0.0) for k in kinds}
    if sum(weight.values()) <= 0:
        weight = dict.fromkeys(kinds, 1.0)
    total = sum(weight.values())
    allot = {k: int(budget_tokens * weight[k] / total) for k in kinds}
    heads = header_tokens or {}
    packed: dict[str, list[PackedSection]] = {}
    for _ in range(len(kinds) + 1):
        packed = {
            k: pack_sections(texts[k], allot[k], counter, header_tokens=heads.get(k),
                             min_tail_tokens=min_tail_tokens)
            for k in kinds
        }  # fmt: skip
        used = {k: sum(p.tokens for p in packed[k]) for k in kinds}
        spare = budget_tokens - sum(used.values())
        hungry = [
            k for k in kinds
            if len(packed[k]) < len(texts[k]) or (packed[k] and packed[k][-1].truncated)
        ]  # fmt: skip
        if spare <= min_tail_tokens or not hungry:
            break
        allot = {k: used[k] for k in kinds}
        hungry_weight = sum(weight[k] for k in hungry) or float(len(hungry))
        for k in hungry:
            share = weight[k] if sum(weight[h] for h in hungry) > 0 else 1.0
            allot[k] += int(spare * share / hungry_weight)
    return {k: v for k, v in packed.items() if v}
