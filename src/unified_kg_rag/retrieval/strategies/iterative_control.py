"""The `iterative` strategy's controller: what the next round searches, if anything.

Two controllers (seed 000 §6.3, "Control"):

- **LLM** (`llm_verdict`): one call per round (prompt ``iterative_controller.v1``) reads the
  question, the candidates so far within a token budget, and what was already searched; its
  JSON reply says whether the candidates suffice and, if not, the bridge entities and next
  queries. A reply without a boolean ``sufficient`` is unreadable (None).
- **Decomposition** (`llm_decompose`, ``decompose``): one call splits the question into
  single-hop steps with ``#n`` references, each run as one round.
- **Offline** (`offline_bridges`): no verdict; the bridge terms are the entity names (an
  LLM-built entity graph) or `lazy` concepts the last round's top passages hold and the
  question does not, ranked by `domain.ranking.bridge.rank_bridge_terms`.

What belongs here: deciding the next round. Running it and fusing the rounds is
``iterative.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.models import Collection, Message
from unified_kg_rag.domain.ranking.bridge import rank_bridge_terms
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.retrieval.strategies.base import Candidate, QueryContext
from unified_kg_rag.retrieval.strategies.ppr import load_concept_graph

__all__ = [
    "ENTITY_GRAPHS", "Plan", "llm_decompose", "llm_verdict", "offline_bridges", "pack_context"
]

ENTITY_GRAPHS = ("graphrag", "lightrag", "hipporag")
"""Methodologies whose entity graph names bridge entities offline (else `lazy` concepts)."""

_REPLY_TOKENS = 400


@dataclass(frozen=True)
class Plan:
    """The controller's decision for the next round.

    Attributes:
        sufficient: the LLM's verdict (None offline: no verdict).
        bridges: bridge entities (or concepts) to follow, best first.
        queries: follow-up text searches, best first.
    """

    sufficient: bool | None
    bridges: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()


def pack_context(candidates: Sequence[Candidate], max_tokens: int) -> str:
    """Return the candidates' texts numbered ``[1] ...``, best first, within ``max_tokens``.

    A candidate that does not fit whole is cut to the tokens left (the last one shown).
    """
    counter = EstimateTokenCounter()
    parts: list[str] = []
    left = max_tokens
    for i, c in enumerate(candidates, start=1):
        text = f"[{i}] {c.title + ': ' if c.title else ''}{c.text.strip()}"
        n = counter.count(text)
        if n > left:
            if left > 16:
                parts.append(counter.truncate(text, left))
            break
        parts.append(text)
        left -= n
    return "\n\n".join(parts)


def _strings(value: object, limit: int) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    out: list[str] = []
    for v in value:
        if isinstance(v, str) and v.strip() and v.strip() not in out:
            out.append(v.strip())
    return tuple(out[:limit])


async def llm_verdict(
    ctx: QueryContext, candidates: Sequence[Candidate], searched: Sequence[str]
) -> Plan | None:
    """Ask the model whether ``candidates`` suffice for ``ctx.question``, and what next.

    One call (counted in ``metadata["llm_calls"]``) reading at most
    ``query.iterative.controller_context_tokens`` (null: ``query.max_context_tokens``) of
    candidate text.

    Returns:
        The plan, or None when the reply holds no JSON object with a boolean ``sufficient``.

    Raises:
        ModelError: the call failed (the caller decides whether that is fatal).
    """
    chat = ctx.model("query")
    assert chat is not None
    cfg = ctx.config.iterative
    budget = cfg.controller_context_tokens or ctx.config.max_context_tokens
    prompt = ctx.prompts.text("iterative_controller.v1", {
        "question": ctx.question,
        "context": pack_context(candidates, budget) or "(none)",
        "searched": "\n".join(f"- {s}" for s in searched) or "(none)",
        "max_bridges": str(cfg.max_bridge_terms),
        "max_queries": str(cfg.max_next_queries),
    })  # fmt: skip
    try:
        reply = await chat.complete(
            [Message(role="user", content=prompt)], max_tokens=_REPLY_TOKENS, temperature=0.0
        )
    finally:
        ctx.count_llm_call()
    ctx.note_reply("iterative_controller", reply)
    data = parse_json_object(reply.text)
    if data is None or not isinstance(data.get("sufficient"), bool):
        return None
    return Plan(
        sufficient=bool(data["sufficient"]),
        bridges=_strings(data.get("bridge_entities"), cfg.max_bridge_terms),
        queries=_strings(data.get("next_queries"), cfg.max_next_queries),
    )


async def llm_decompose(ctx: QueryContext) -> tuple[str, ...]:
    """Ask the model to split ``ctx.question`` into single-hop steps (``decompose``).

    One call (prompt ``iterative_decompose.v1``, counted in ``metadata["llm_calls"]``); at
    most ``max_rounds + 1`` steps, a later one naming an earlier answer as ``#n`` (MuSiQue's
    notation; seed 000 §6.3 ``decompose``).

    Returns:
        The steps, in order; empty when the reply holds no readable ``steps`` list.

    Raises:
        ModelError: the call failed (the caller decides whether that is fatal).
    """
    chat = ctx.model("query")
    assert chat is not None
    limit = ctx.config.iterative.max_rounds + 1
    prompt = ctx.prompts.text(
        "iterative_decompose.v1", {"question": ctx.question, "max_steps": str(limit)}
    )
    try:
        reply = await chat.complete(
            [Message(role="user", content=prompt)], max_tokens=_REPLY_TOKENS, temperature=0.0
        )
    finally:
        ctx.count_llm_call()
    ctx.note_reply("iterative_decomposition", reply)
    data = parse_json_object(reply.text)
    return _strings(data.get("steps"), limit) if data is not None else ()


async def offline_bridges(
    ctx: QueryContext, passages: Sequence[Candidate], exclude: Sequence[str]
) -> tuple[str, ...]:
    """Return the bridge terms of the top ``passages`` (text units, best first).

    The terms are the names of entities citing each passage when the index holds an entity
    graph (`ENTITY_GRAPHS`), else the `lazy` concepts linked to it; none without either.
    Ranked by `rank_bridge_terms` (rare terms of the best passages, not in the question or
    ``exclude``), at most ``query.iterative.max_bridge_terms``.

    Raises:
        StoreError: a store failed.
    """
    cfg = ctx.config.iterative
    top = [c for c in passages if c.kind == "text_unit"][: cfg.bridge_passages]
    units = [c.id for c in top]
    if not units or cfg.max_bridge_terms == 0:
        return ()
    if any(m in ctx.held for m in ENTITY_GRAPHS):
        terms, df, n_units = await _entity_terms(ctx, units)
    elif "lazy" in ctx.held:
        terms, df, n_units = await _concept_terms(ctx, units)
    else:
        return ()
    ranked = rank_bridge_terms(
        terms, ctx.question, document_frequency=df, n_units=max(n_units, 1),
        exclude=exclude, limit=cfg.max_bridge_terms, texts=[c.text for c in top],
    )  # fmt: skip
    return tuple(b.term for b in ranked)


async def _entity_terms(
    ctx: QueryContext, units: Sequence[str]
) -> tuple[list[list[str]], dict[str, int], int]:
    entity_ids, _ = await ctx.stores.graph.citing(units)
    entities = await ctx.stores.graph.get_entities(entity_ids) if entity_ids else []
    terms: list[list[str]] = [[] for _ in units]
    df: dict[str, int] = {}
    for e in entities:
        df[e.name] = min(df.get(e.name, len(e.text_unit_ids)), len(e.text_unit_ids))
        for i, unit in enumerate(units):
            if unit in e.text_unit_ids:
                terms[i].append(e.name)
    return terms, df, await ctx.stores.search.count(Collection.TEXT_UNITS)


async def _concept_terms(
    ctx: QueryContext, units: Sequence[str]
) -> tuple[list[list[str]], dict[str, int], int]:
    loaded = await load_concept_graph(ctx.stores, ctx.concept_graphs)
    if loaded is None:
        return [], {}, 0
    graph = loaded.graph
    terms: list[list[str]] = []
    df: dict[str, int] = {}
    for unit in units:
        row = loaded.unit_index.get(unit)
        if row is None:
            terms.append([])
            continue
        linked = graph.concept_index[np.flatnonzero(graph.unit_index == row)]
        names = [graph.concepts[int(c)] for c in linked]
        for c in linked:
            df[graph.concepts[int(c)]] = graph.df[int(c)]
        terms.append(names)
    return terms, df, len(graph.unit_ids)
