"""From a strategy's buckets to the packed context: fuse → rerank → MMR → quotas → pack.

Source: seed 000 §7 (HybridScorer, TokenManager). Buckets are fused by weighted RRF over
``(kind, id)``; the optional reranker reorders each type's best ``query.rerank.top_n``; MMR
(``query.mmr_lambda`` < 1) diversifies each type; each type is cut to its quota, pinned
candidates (`auto`'s rare-term matches) seated first (`seat_pinned`); the context
packs each type within its share of ``query.max_context_tokens`` (unused budget flows to the
types that still have candidates). Synthesized sections (key points, notes) are seated first
and outside the quotas. The context order is `SECTION_KINDS`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.llm.deadline import within_query_deadline
from unified_kg_rag.domain.models import Source
from unified_kg_rag.domain.ranking.budget import pack_sections, pack_typed
from unified_kg_rag.domain.ranking.mmr import mmr_order
from unified_kg_rag.domain.text.analysis import lexical_terms
from unified_kg_rag.ports import Reranker, TokenCounter
from unified_kg_rag.retrieval.strategies.base import (
    SECTION_KINDS,
    Candidate,
    StrategyResult,
    fuse,
    is_fatal,
)
from unified_kg_rag.util.errors import QueryDeadlineError

__all__ = [
    "MMR_POOL",
    "fuse",
    "pack_context",
    "quota_of",
    "rerank_and_diversify",
    "seat_pinned",
    "section_title",
    "to_source",
]

MMR_POOL = 200
"""Best candidates of a type that MMR reorders (the rest keep their order behind them)."""

logger = logging.getLogger(__name__)


def quota_of(kind: str, config: QueryConfig, overrides: Mapping[str, int] | None = None) -> int:
    """Return how many items of ``kind`` the context may hold.

    A strategy's own quota (``overrides``, `StrategyResult.quotas`) wins; else ``top_k`` for
    text units, ``query.tree.summary_top_k`` for tree summaries, ``query.quotas`` for the
    others.
    """
    if overrides and kind in overrides:
        return overrides[kind]
    if kind == "text_unit":
        return config.top_k
    if kind == "summary":
        return config.tree.summary_top_k
    return int(getattr(config.quotas, kind, config.top_k))


async def rerank_and_diversify(
    question: str,
    ranked: Sequence[Candidate],
    config: QueryConfig,
    reranker: Reranker | None,
    metadata: dict[str, object],
    quotas: Mapping[str, int] | None = None,
) -> dict[str, list[Candidate]]:
    """Group ``ranked`` by kind, rerank and diversify each group, and cut it to its quota.

    ``quotas``: the strategy's own quotas by kind (`StrategyResult.quotas`), over `quota_of`'s.

    Returns:
        kind -> candidates, best first, at most `quota_of` each.

    The rerank call takes at most the query's time left (``query.deadline_s``); cut by it,
    the fused order is kept even when the reranker is required.

    Raises:
        ModelError: the reranker failed and ``query.rerank.required`` is on, or it failed
            with an authentication error (fatal, seed 000 §8.1).
    """
    groups: dict[str, list[Candidate]] = {}
    for c in ranked:
        groups.setdefault(c.kind, []).append(c)
    if reranker is not None:
        outcome: dict[str, object] = {}
        failed: str | None = None
        for kind, items in groups.items():
            if failed is not None:  # one failure is enough: the other types keep their order
                outcome[kind] = f"skipped: {failed}"
                continue
            head = items[: config.rerank.top_n]
            try:
                scores = await within_query_deadline(
                    reranker.rerank(question, [c.text for c in head])
                )
            except Exception as exc:
                deadline = isinstance(exc, QueryDeadlineError)  # returns what it has
                if (config.rerank.required and not deadline) or is_fatal(exc):
                    raise
                logger.warning("rerank failed; the fused order is kept: %s", exc)
                failed = f"failed: {exc}"
                outcome[kind] = failed
                continue
            order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
            groups[kind] = [
                dataclasses.replace(head[i], score=float(scores[i])) for i in order
            ] + items[len(head):]  # fmt: skip
            outcome[kind] = f"reranked {len(head)}"
        metadata["rerank"] = outcome
    out: dict[str, list[Candidate]] = {}
    for kind, items in groups.items():
        quota = quota_of(kind, config, quotas)
        if config.mmr_lambda < 1.0 and len(items) > 1:
            pool = items[:MMR_POOL]  # MMR is quadratic; the context never holds more
            terms = [frozenset(lexical_terms(c.text)) for c in pool]
            picked = [pool[i] for i in mmr_order(terms, config.mmr_lambda, quota)]
            items = picked + items[len(pool):]
        out[kind] = items[:quota]
    return out


def seat_pinned(
    groups: dict[str, list[Candidate]],
    pinned: Sequence[Candidate],
    config: QueryConfig,
    after: int = 0,
    quotas: Mapping[str, int] | None = None,
) -> dict[str, list[Candidate]]:
    """Return ``groups`` with the ``pinned`` candidates seated within their type's quota.

    Per type: its best ``after`` candidates keep their places (fewer when the pinned ones
    would not fit in the quota behind them), then come the pinned ones not among them
    (`StrategyResult.pinned`, `auto`'s rare-term matches, in their order), then the type's
    other candidates in their order, cut to the type's quota (`quota_of`, with the strategy's
    ``quotas`` over the configured ones). Packing fills the
    context in this order, so a pinned candidate is packed (truncated at worst) whenever the
    ones before it leave its type budget.
    """
    if not pinned:
        return groups
    out = dict(groups)
    for kind in dict.fromkeys(c.kind for c in pinned):
        items, quota = groups.get(kind, []), quota_of(kind, config, quotas)
        n_pinned = len({c.id for c in pinned if c.kind == kind})
        head = items[: min(after, max(0, quota - n_pinned))]
        seated = {c.id for c in head}
        first = [c for c in {c.id: c for c in pinned if c.kind == kind}.values()
                 if c.id not in seated]  # fmt: skip
        ids = seated | {c.id for c in first}
        rest = [c for c in items[len(head):] if c.id not in ids]
        out[kind] = (head + first + rest)[:quota]
    return out


_SYNTHESIZED_TITLES = {"key_points": "Key points", "notes": "Intermediate answers"}


def section_title(c: Candidate) -> str | None:
    """Return the label a section shows in its header, when the candidate has no title.

    Entities, relationships and claims read as the head of their text (``name (TYPE)``,
    ``source TYPE target``, ``subject — TYPE — object [STATUS, period]``), synthesized
    sections by what they are, a tree summary by its level and lineage (``Summary (level 2,
    14 passages)``, seed 000 §6.5); passages and reports keep their own title (None here).
    """
    if c.title:
        return c.title
    if c.kind in _SYNTHESIZED_TITLES:
        return _SYNTHESIZED_TITLES[c.kind]
    if c.kind == "summary":
        level, n = c.metadata.get("level"), c.metadata.get("n_leaves", len(c.text_unit_ids))
        passages = "passage" if n == 1 else "passages"
        return f"Summary (level {level}, {n} {passages})"
    if c.kind in ("entity", "relationship", "claim"):
        head = c.text.split(": ", 1)[0].strip()
        return head[:120] or None
    return None


def to_source(c: Candidate, n: int) -> Source:
    """Return candidate ``c`` as source number ``n``, titled by `section_title`."""
    fields = dataclasses.asdict(c)
    fields["title"] = section_title(c)
    return Source(n=n, **fields)


class _MemoCounter:
    """A token counter that counts each distinct text once.

    Packing recounts while it lends unused budget between types.
    """

    def __init__(self, inner: TokenCounter) -> None:
        self._inner = inner
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        n = self._counts.get(text)
        if n is None:
            n = self._counts[text] = self._inner.count(text)
        return n

    def truncate(self, text: str, max_tokens: int) -> str:
        return self._inner.truncate(text, max_tokens)


def pack_context(
    result: StrategyResult,
    groups: dict[str, list[Candidate]],
    config: QueryConfig,
    counter: TokenCounter,
) -> list[Source]:
    """Pack synthesized sections, then each type within its share; number them in context order.

    Returns:
        The sources, in context order (`SECTION_KINDS`), numbered from 1: exactly what the
        answer step sees, truncated text included.
    """
    budget = config.max_context_tokens
    memo = _MemoCounter(counter)

    def header_cost(c: Candidate) -> int:
        label = section_title(c) or c.path or c.id[:12]
        where = f" ({c.path})" if c.path and c.path != label else ""
        return memo.count(f"[99] {label}{where}") + 2

    chosen: dict[str, list[tuple[Candidate, str, bool]]] = {}
    synth = result.synthesized
    if synth:
        packed = pack_sections([c.text for c in synth], budget, memo,
                               header_tokens=[header_cost(c) for c in synth])  # fmt: skip
        budget -= sum(p.tokens for p in packed)
        for p in packed:
            chosen.setdefault(synth[p.index].kind, []).append(
                (synth[p.index], p.text, p.truncated)
            )
    shares = config.type_shares.model_dump()
    shares.setdefault("summary", config.tree.summary_share)
    typed = pack_typed(
        {k: [c.text for c in v] for k, v in groups.items()},
        shares,
        budget,
        memo,
        header_tokens={k: [header_cost(c) for c in v] for k, v in groups.items()},
    )
    for kind, packed_list in typed.items():
        for p in packed_list:
            chosen.setdefault(kind, []).append((groups[kind][p.index], p.text, p.truncated))
    order = list(SECTION_KINDS) + sorted(k for k in chosen if k not in SECTION_KINDS)
    sources: list[Source] = []
    for kind in order:
        for cand, text, truncated in chosen.get(kind, []):
            src = to_source(cand, len(sources) + 1)
            if truncated:
                update: dict[str, object] = {"text": text, "truncated": True}
                if src.start_char is not None:
                    update["end_char"] = src.start_char + len(text)
                src = src.model_copy(update=update)
            sources.append(src)
    return sources
