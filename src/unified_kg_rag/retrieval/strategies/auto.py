"""Strategy ``auto`` without an LLM: a rule router over what the index holds.

The rule picks, among the strategies the index can serve, the one with the best measured
retrieval (MuSiQue recall@5, ``benchmarks/bench_lazy.py``, recorded in the strategies guide).
The preference order below is that measurement; a strategy whose methodology the index does
not hold is skipped, and ``naive`` serves every index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from unified_kg_rag.retrieval.strategies.base import Candidate, QueryContext, register_strategy

__all__ = ["AUTO_PREFERENCE", "AutoStrategy", "choose_strategy", "has_code_token"]

AUTO_PREFERENCE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ppr", ("hipporag", "lazy")),
    ("naive", ()),
)
"""(strategy, methodologies that let it serve), best measured first."""


_CODE_TOKEN = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[^\W\d_])[\w][\w-]{2,}")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.I)


def has_code_token(question: str) -> bool:
    """True when ``question`` holds a code-like token: letters and digits together.

    ``QX-8628H``, ``RFC7231``, ``iPhone15``; ordinals (``26th``) are not codes.
    """
    return any(
        not _ORDINAL.fullmatch(m.group(0)) for m in _CODE_TOKEN.finditer(question)
    )


def choose_strategy(held: Sequence[str], search_mode: str = "hybrid", question: str = "") -> str:
    """Return the best measured strategy an index holding ``held`` methodologies can serve.

    Keyword lookups go to `naive` (hybrid BM25 + vector): a ``lexical`` search mode, or a
    question holding a code-like token (a part number, a model name), which the concept graph
    cannot hold (such a token is in one unit, below ``graph.lazy.min_df``) and BM25 finds.
    """
    if search_mode == "lexical" or has_code_token(question):
        return "naive"
    for strategy, needs in AUTO_PREFERENCE:
        if not needs or any(m in held for m in needs):
            return strategy
    return "naive"


@register_strategy(
    "auto",
    methodology=None,
    description="The best measured strategy the index can serve, chosen by rule "
    "(see choose_strategy).",
)
class AutoStrategy:
    """The strategy registered as ``auto``.

    `RAGChain` resolves ``auto`` with `choose_strategy` before retrieval (so its output names
    the strategy that ran); called directly, this delegates the same way.
    """

    async def retrieve(self, ctx: QueryContext) -> list[Candidate]:
        """Return the candidates of the strategy `choose_strategy` picks for ``ctx``."""
        from unified_kg_rag.retrieval.strategies.base import STRATEGIES

        name = choose_strategy(ctx.held, ctx.config.search_mode, ctx.question)
        return await STRATEGIES.get(name).factory().retrieve(ctx)
