"""Strategy ``auto`` without an LLM: a rule router over what the index holds.

The rule picks, among the strategies the index can serve, the one with the best measured
retrieval (MuSiQue recall@5, ``benchmarks/bench_lazy.py``, recorded in the strategies guide).
The preference order below is that measurement; a strategy whose methodology the index does
not hold is skipped, and ``naive`` serves every index.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["AUTO_PREFERENCE", "choose_strategy"]

AUTO_PREFERENCE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ppr", ("hipporag", "lazy")),
    ("naive", ()),
)
"""(strategy, methodologies that let it serve), best measured first."""


def choose_strategy(held: Sequence[str]) -> str:
    """Return the best measured strategy an index holding ``held`` methodologies can serve."""
    for strategy, needs in AUTO_PREFERENCE:
        if not needs or any(m in held for m in needs):
            return strategy
    return "naive"
