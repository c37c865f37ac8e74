"""Strategy ``auto``: an LLM router, and the rule router used without an LLM.

The rule picks, among the strategies the index can serve, the one with the best measured
retrieval (MuSiQue recall, ``benchmarks/bench_lazy.py`` and ``benchmarks/bench_strategies.py``,
recorded in the strategies guide).
The preference order below is that measurement; a strategy whose methodology the index does
not hold is skipped, and ``naive`` serves every index.

With an LLM (``query.llm_router``), `route_with_llm` asks it to pick among the `ROUTABLE`
strategies the index can serve (`routable_candidates`), describing exactly those (prompt
``strategy_router.v1``); a reply naming none of them falls back to the rule (seed 000 §6.1).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts import load_prompt
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.retrieval.strategies.base import (
    STRATEGIES,
    Candidate,
    QueryContext,
    StrategyResult,
    StrategySpec,
    is_fatal,
    register_strategy,
)
from unified_kg_rag.util.errors import UsageError

__all__ = [
    "AUTO_PREFERENCE",
    "ROUTABLE",
    "AutoStrategy",
    "choose_strategy",
    "has_code_token",
    "routable_candidates",
    "route_with_llm",
]

logger = logging.getLogger(__name__)

AUTO_PREFERENCE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ppr", ("hipporag", "lazy")),
    ("hybrid", ("lightrag",)),
    ("local", ("graphrag",)),
    ("naive", ()),
)
"""(strategy, methodologies that let it serve), best measured first."""

ROUTABLE: tuple[str, ...] = ("local", "mix", "global", "ppr", "naive")
"""The strategies the LLM router may pick (intersected with those the index can serve)."""


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


def routable_candidates(
    held: Sequence[str], routable: Sequence[str] = ROUTABLE
) -> list[StrategySpec]:
    """Return the registered strategies of ``routable`` an index holding ``held`` can serve.

    In ``routable`` order; names not registered (their module not imported) are skipped.
    """
    return [
        STRATEGIES.get(name)
        for name in routable
        if name in STRATEGIES and STRATEGIES.get(name).serves(held)
    ]


def _named(reply: str, names: Sequence[str]) -> str | None:
    """Return the candidate name that occurs first in ``reply`` (whole word, any case)."""
    best: tuple[int, str] | None = None
    for name in names:
        match = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", reply, re.I)
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), name)
    return best[1] if best else None


def _rule(
    question: str, names: Sequence[str], held: Sequence[str], search_mode: str
) -> str:
    pick = choose_strategy(held, search_mode, question)
    return pick if pick in names else names[0]


async def route_with_llm(
    chat_model: ChatModel,
    question: str,
    candidates: Sequence[StrategySpec],
    *,
    held: Sequence[str] | None = None,
    search_mode: str = "hybrid",
) -> tuple[str, str]:
    """Ask the LLM which of ``candidates`` fits ``question``; return ``(name, reason)``.

    The prompt (``strategy_router.v1``) describes exactly the candidates (name and
    description). The first candidate name in the reply wins. A reply naming none, or a
    non-fatal model failure, falls back to the rule (`choose_strategy`; the first candidate
    when the rule's pick is not among them), and the reason says so. With one candidate no
    call is made.

    Args:
        chat_model: the router model (one call of at most 16 tokens).
        question: the (standalone) question.
        candidates: the strategies it may pick, in preference order.
        held: the methodologies the index holds, for the rule fallback (default: those the
            candidates read).
        search_mode: ``query.search_mode``, for the rule fallback.

    Returns:
        The chosen strategy's name and why it was chosen.

    Raises:
        UsageError: ``candidates`` is empty.
        ModelError: the model denied access (HTTP 401/403).
    """
    names = [c.name for c in candidates]
    if not names:
        raise UsageError("no strategy the index can serve to route to", field="query.strategy")
    if len(names) == 1:
        return names[0], "the only strategy the index can serve"
    if held is None:
        held = [m for c in candidates for m in (
            () if c.methodology is None
            else (c.methodology,) if isinstance(c.methodology, str) else c.methodology
        )]  # fmt: skip
    listing = "\n".join(f"- {c.name}: {c.description}" for c in candidates)
    prompt = load_prompt("strategy_router.v1").format(strategies=listing, question=question)
    try:
        reply = await chat_model.complete(
            [Message(role="user", content=prompt)], max_tokens=16, temperature=0.0
        )
    except Exception as exc:
        if is_fatal(exc):
            raise
        logger.warning("strategy router call failed, using the rule: %s", exc)
        rule = _rule(question, names, held, search_mode)
        return rule, f"rule (the router call failed: {type(exc).__name__})"
    picked = _named(reply.text, names)
    if picked is not None:
        return picked, "llm router"
    rule = _rule(question, names, held, search_mode)
    logger.info("strategy router reply %r names no candidate; rule picks %s", reply.text, rule)
    return rule, f"rule (the router's reply named no candidate: {reply.text.strip()[:60]!r})"


@register_strategy(
    "auto",
    methodology=None,
    description="With an LLM, the strategy it picks for the question among those the index "
    "can serve; without one, the best measured one by rule (see choose_strategy).",
)
class AutoStrategy:
    """The strategy registered as ``auto``.

    `RAGChain` resolves ``auto`` before retrieval (so its output names the strategy that
    ran); called directly, this routes the same way: `route_with_llm` over
    `routable_candidates` when an LLM is configured and ``query.llm_router`` is on, else
    `choose_strategy`. The choice and its reason go to ``metadata["route"]``.
    """

    async def retrieve(self, ctx: QueryContext) -> list[Candidate] | StrategyResult:
        """Return the candidates of the strategy chosen for ``ctx``."""
        held, mode = ctx.held, ctx.config.search_mode
        candidates = routable_candidates(held)
        if ctx.chat_model is not None and ctx.config.llm_router and candidates:
            name, reason = await route_with_llm(
                ctx.chat_model, ctx.question, candidates, held=held, search_mode=mode
            )
            if len(candidates) > 1:
                ctx.count_llm_call()
        else:
            name, reason = choose_strategy(held, mode, ctx.question), "rule"
        ctx.metadata["route"] = {"strategy": name, "reason": reason}
        return await STRATEGIES.get(name).factory().retrieve(ctx)
