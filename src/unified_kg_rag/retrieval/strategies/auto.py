"""Strategy ``auto``: an LLM router, and the rule router used without an LLM.

The rule picks, among the strategies the index can serve, the one with the best measured
retrieval (MuSiQue recall, ``benchmarks/bench_lazy.py`` and ``benchmarks/bench_strategies.py``,
recorded in the strategies guide).
The preference order below is that measurement; a strategy whose methodology the index does
not hold is skipped, and ``naive`` serves every index.

With an LLM (``query.llm_router``), `route_with_llm` asks it to pick among the `ROUTABLE`
strategies the index can serve (`routable_candidates`), describing exactly those (prompt
``strategy_router.v1``); a reply naming none of them falls back to the rule (seed 000 §6.1).

`route` is the one router: `RAGChain` and `AutoStrategy` both call it, and it records a
`Route` as ``metadata["route"]``: ``{"strategy", "by": "rule" | "llm", "reason"}``.
`run_route` then runs the chosen strategy and adds the rare-term guarantee
(`rare_terms.rare_term_passages`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.retrieval.strategies.base import (
    STRATEGIES,
    Bucket,
    QueryContext,
    StrategyResult,
    StrategySpec,
    is_fatal,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.rare_terms import rare_term_passages
from unified_kg_rag.util.errors import UsageError

__all__ = [
    "AUTO_PREFERENCE",
    "ROUTABLE",
    "AutoStrategy",
    "Route",
    "choose_strategy",
    "code_token",
    "has_code_token",
    "looks_multi_hop",
    "routable_candidates",
    "route",
    "route_with_llm",
    "rule_route",
    "run_route",
]

logger = logging.getLogger(__name__)

AUTO_PREFERENCE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ppr", ("hipporag", "lazy")),
    ("hybrid", ("lightrag",)),
    ("local", ("graphrag",)),
    ("tree", ("raptor",)),
    ("naive", ()),
)
"""(strategy, methodologies that let it serve), best measured first (`tree`: the only
strategy reading a `raptor`-only index's tree)."""

ROUTABLE: tuple[str, ...] = ("local", "mix", "global", "ppr", "iterative", "tree", "naive")
"""The strategies the LLM router may pick (intersected with those the index can serve)."""

_RELATIVE = re.compile(
    r"\b(?:the|a|an) [\w'-]+(?: [\w'-]+)? (?:in which|which|where|who|whose|that)\b", re.I
)
_OF_DESCRIPTION = re.compile(
    r"\b(?:the|a|an) (?!name\b|kind\b|type\b|number\b|year\b|date\b)[\w'-]+ of\b", re.I
)
_POSSESSIVE = re.compile(r"\w's (?!own\b)[a-z]+")


_CODE_TOKEN = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[^\W\d_])[\w][\w-]{2,}")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.I)


def has_code_token(question: str) -> bool:
    """True when ``question`` holds a code-like token: letters and digits together.

    ``QX-8628H``, ``RFC7231``, ``iPhone15``; ordinals (``26th``) are not codes.
    """
    return code_token(question) is not None


@dataclass(frozen=True)
class Route:
    """How `auto` chose its strategy; ``metadata["route"]`` of its output is `as_metadata`.

    Attributes:
        strategy: the strategy that runs.
        by: ``llm`` (the router model named it) or ``rule`` (`rule_route`: no model, the
            router off, a lexical search mode, one candidate, or the router's call failed or
            its reply named no candidate).
        reason: why, in words (a fallback says what failed, then the rule's reason).
    """

    strategy: str
    by: Literal["rule", "llm"]
    reason: str

    def as_metadata(self) -> dict[str, str]:
        """Return ``{"strategy": ..., "by": "rule" | "llm", "reason": ...}``."""
        return {"strategy": self.strategy, "by": self.by, "reason": self.reason}


def looks_multi_hop(question: str) -> bool:
    """True when ``question`` chains relations through an entity it does not name.

    A heuristic: a description with a relative clause (``the city where ...``, ``the
    association which ...``), or two relation descriptions (``the spouse of the director
    of ...``, ``the birthplace of X's wife``). On MuSiQue-100 it holds for 70 questions, on
    ``What is the capital of France?`` not.
    """
    if _RELATIVE.search(question):
        return True
    return len(_OF_DESCRIPTION.findall(question)) + len(_POSSESSIVE.findall(question)) >= 2


def code_token(question: str) -> str | None:
    """Return the first code-like token of ``question`` (see `has_code_token`), or None."""
    for m in _CODE_TOKEN.finditer(question):
        if not _ORDINAL.fullmatch(m.group(0)):
            return m.group(0)
    return None


def rule_route(
    held: Sequence[str],
    search_mode: str = "hybrid",
    question: str = "",
    config: QueryConfig | None = None,
) -> Route:
    """Return the rule's route for an index holding ``held`` methodologies.

    Keyword lookups go to `naive` (hybrid BM25 + vector): a ``lexical`` search mode, or a
    question holding a code-like token (a part number, a model name), which the concept graph
    cannot hold (such a token is in one unit, below ``graph.lazy.min_df``) and BM25 finds.
    With ``config`` given, a question that `looks_multi_hop` goes to `iterative` when the
    index serves its base (``query.iterative.base``) under it. Otherwise the first of
    `AUTO_PREFERENCE` the index can serve (best measured first).
    """
    if search_mode == "lexical":
        return Route("naive", "rule", "the search mode is lexical: a keyword lookup")
    token = code_token(question)
    if token is not None:
        return Route("naive", "rule", f"the question holds the code-like token {token!r}: "
                     "a keyword lookup")  # fmt: skip
    holds = ", ".join(held) or "text units only"
    if (config is not None and "iterative" in STRATEGIES and looks_multi_hop(question)
            and STRATEGIES.get("iterative").serves(held, config)):
        return Route("iterative", "rule", "the question chains relations (multi-hop) and "
                     f"the index serves {config.iterative.base!r}, the base of `iterative`")
    for strategy, needs in AUTO_PREFERENCE:
        if not needs or any(m in held for m in needs):
            return Route(strategy, "rule", f"the best measured strategy the index can serve "
                         f"(it holds: {holds})")  # fmt: skip
    return Route("naive", "rule", f"the index holds: {holds}")  # pragma: no cover


def choose_strategy(held: Sequence[str], search_mode: str = "hybrid", question: str = "") -> str:
    """Return the strategy `rule_route` picks (the best measured one the index can serve)."""
    return rule_route(held, search_mode, question).strategy


def routable_candidates(
    held: Sequence[str], routable: Sequence[str] = ROUTABLE, config: QueryConfig | None = None
) -> list[StrategySpec]:
    """Return the registered strategies of ``routable`` an index holding ``held`` can serve.

    In ``routable`` order; names not registered (their module not imported) are skipped. A
    wrapper (`iterative`) serves when its base does under ``config`` (None: the defaults).
    """
    return [
        STRATEGIES.get(name)
        for name in routable
        if name in STRATEGIES and STRATEGIES.get(name).serves(held, config)
    ]


def _named(reply: str, names: Sequence[str]) -> str | None:
    """Return the candidate name that occurs first in ``reply`` (whole word, any case)."""
    best: tuple[int, str] | None = None
    for name in names:
        match = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", reply, re.I)
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), name)
    return best[1] if best else None


def _fallback(
    why: str, question: str, names: Sequence[str], held: Sequence[str], search_mode: str
) -> Route:
    rule = rule_route(held, search_mode, question)
    if rule.strategy in names:
        return Route(rule.strategy, "rule", f"{why}; {rule.reason}")
    return Route(names[0], "rule", f"{why}; the rule's pick {rule.strategy!r} is not a "
                 "candidate, so the first candidate")  # fmt: skip


async def route_with_llm(
    chat_model: ChatModel,
    question: str,
    candidates: Sequence[StrategySpec],
    *,
    held: Sequence[str] | None = None,
    search_mode: str = "hybrid",
    prompts: PromptLibrary = PACKAGED,
) -> Route:
    """Ask the LLM which of ``candidates`` fits ``question``.

    The prompt (``strategy_router.v1``) describes exactly the candidates (name and
    description). The first candidate name in the reply wins (``by="llm"``). A reply naming
    none, or a non-fatal model failure (the query's deadline included), falls back to the
    rule (`rule_route`; the first candidate when the rule's pick is not among them), and
    the reason says so. With one candidate no call is made.

    Args:
        chat_model: the router model (one call of at most 16 tokens).
        question: the (standalone) question.
        candidates: the strategies it may pick, in preference order.
        held: the methodologies the index holds, for the rule fallback (default: those the
            candidates read).
        search_mode: ``query.search_mode``, for the rule fallback.
        prompts: the prompts in effect (``strategy_router.v1``).

    Returns:
        The route: the chosen strategy, ``llm`` or ``rule``, and why.

    Raises:
        UsageError: ``candidates`` is empty.
        ModelError: the model denied access (HTTP 401/403).
    """
    names = [c.name for c in candidates]
    if not names:
        raise UsageError("no strategy the index can serve to route to", field="query.strategy")
    if len(names) == 1:
        return Route(names[0], "rule", "the only strategy the index can serve")
    if held is None:
        held = [m for c in candidates for m in c.needs]
    listing = "\n".join(f"- {c.name}: {c.description}" for c in candidates)
    prompt = prompts.text("strategy_router.v1", {"strategies": listing, "question": question})
    try:
        reply = await chat_model.complete(
            [Message(role="user", content=prompt)], max_tokens=16, temperature=0.0
        )
    except Exception as exc:
        if is_fatal(exc):
            raise
        logger.warning("strategy router call failed, using the rule: %s", exc)
        why = f"the router call failed ({type(exc).__name__})"
        return _fallback(why, question, names, held, search_mode)
    text = reply.text.strip()
    picked = _named(text, names)
    if picked is not None:
        return Route(picked, "llm", f"the router model named it (reply {text[:60]!r})")
    logger.info("strategy router reply %r names no candidate; using the rule", text)
    why = f"the router's reply named no candidate ({text[:60]!r})"
    return _fallback(why, question, names, held, search_mode)


async def route(ctx: QueryContext) -> Route:
    """Choose the strategy `auto` runs for ``ctx``: the one router of the chain and of `auto`.

    The LLM router (`route_with_llm` over `routable_candidates`) when a model is configured,
    ``query.llm_router`` is on and the search mode is not ``lexical`` (a keyword lookup,
    which the rule sends to `naive` without a call); else the rule (`rule_route`). A router
    call is counted in ``metadata["llm_calls"]``; the route goes to ``metadata["route"]``
    (`Route.as_metadata`).

    Raises:
        UsageError: the index can serve no routable strategy (never with `naive` registered).
        ModelError: the router model denied access (HTTP 401/403).
    """
    cfg, held = ctx.config, ctx.held
    candidates = routable_candidates(held, config=cfg)
    router = ctx.model("query")
    if router is not None and cfg.llm_router and cfg.search_mode != "lexical" and candidates:
        chosen = await route_with_llm(
            router, ctx.question, candidates, held=held, search_mode=cfg.search_mode,
            prompts=ctx.prompts,
        )
        if len(candidates) > 1:
            ctx.count_llm_call()
    else:
        chosen = rule_route(held, cfg.search_mode, ctx.question, cfg)
    ctx.metadata["route"] = chosen.as_metadata()
    return chosen


async def run_route(ctx: QueryContext, chosen: Route) -> StrategyResult:
    """Run the routed strategy and add the rare-term guarantee (`rare_term_passages`).

    Returns:
        The routed strategy's result (a plain list becomes one bucket named after it), its
        ``pinned`` passages those holding the question's rare terms.

    Raises:
        StoreError: a store failed.
        EmbeddingModelError: the query could not be embedded.
    """
    spec = STRATEGIES.get(chosen.strategy)
    raw = await spec.factory().retrieve(ctx)
    result = raw if isinstance(raw, StrategyResult) else StrategyResult(
        buckets=[Bucket(spec.name, list(raw))]
    )
    result.pinned = await ctx.section("rare_terms", lambda: rare_term_passages(ctx), [])
    return result


@register_strategy(
    "auto",
    methodology=None,
    description="With an LLM, the strategy it picks for the question among those the index "
    "can serve; without one, the best measured one by rule (the strategies guide lists it); "
    "passages holding the question's rare terms are kept in the context.",
)
class AutoStrategy:
    """The strategy registered as ``auto``.

    `RAGChain` runs the same two steps itself, `route` then `run_route`, so that its output
    names the strategy that ran and times the route apart; called directly, this is them.
    """

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return the result of the strategy `route` chooses for ``ctx``, with `run_route`."""
        return await run_route(ctx, await route(ctx))
