"""The `tree` strategy's last step: the level cap, the summaries' documents, passage expansion.

Run by the chain on its per-kind selection (`StrategyResult.finish`), after fusion, the
optional rerank, MMR and the passage quota (seed 000 §6.5, "Retrieval: `tree`"):

1. *Level cap.* The summaries are walked best first; one whose level already has
   ``query.tree.max_nodes_per_level`` kept summaries is passed over, until
   ``summary_top_k`` are kept (``metadata["summaries_level_capped"]`` counts those passed
   over before the quota was full).
2. *Documents.* Each kept summary's ``document_ids`` are the documents of its lineage, so a
   summary's source is attributed through its lineage, as a report's is.
3. *Expansion.* The passages of the kept summaries' lineages that pass the caller's filters
   are ranked by the cosine of their stored vectors to the question (`lineage_pool`); each
   kept summary, best first, takes the best ``expand_children`` of its own. A passage
   already selected at a score at least the summary's stays where it is (it counts); any
   other is seated just after the
   summary's rank among the passages (the first passage scoring below the summary comes
   after it; its score becomes the one just below the summary's) with metadata
   ``expanded_from`` (the summary id). A passage another summary already brought counts
   and is not repeated.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from unified_kg_rag.domain.models import Collection, IndexRecord, SearchHit
from unified_kg_rag.retrieval.strategies.base import Candidate, QueryContext
from unified_kg_rag.retrieval.strategies.filtering import passing_units
from unified_kg_rag.retrieval.strategies.lightrag import documents_of, fetch_units
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate

__all__ = ["cap_levels", "expand_summaries", "finish_selection", "lineage_pool"]


async def finish_selection(
    ctx: QueryContext, groups: dict[str, list[Candidate]]
) -> dict[str, list[Candidate]]:
    """Return the selection with the summaries capped and expanded (see the module docstring).

    Args:
        ctx: the query's context (its ``config.tree``, filters and metadata).
        groups: kind -> candidates, best first, as the chain selected them.

    Raises:
        StoreError: a store failed (the expansion search's failure only degrades it).
    """
    cfg = ctx.config.tree
    kept, capped = cap_levels(groups.get("summary", []), cfg.summary_top_k,
                              cfg.max_nodes_per_level)  # fmt: skip
    if capped:
        ctx.metadata["summaries_level_capped"] = capped
    if not kept:
        out = dict(groups)
        out.pop("summary", None)
        return out
    records = await fetch_units(ctx, [u for c in kept for u in c.text_unit_ids])
    kept = [dataclasses.replace(c, document_ids=documents_of(c.text_unit_ids, records))
            for c in kept]  # fmt: skip
    passages = groups.get("text_unit", [])
    if cfg.expand_children > 0:

        async def expand() -> list[Candidate]:
            pool = await lineage_pool(ctx, kept, records)
            return expand_summaries(kept, passages, pool, cfg.expand_children)

        passages = await ctx.section("tree_expansion", expand, passages)
        added = sum(1 for c in passages if "expanded_from" in c.metadata)
        ctx.metadata["expanded_passages"] = added
    return {**groups, "summary": kept, "text_unit": passages}


async def lineage_pool(
    ctx: QueryContext, summaries: Sequence[Candidate], records: dict[str, IndexRecord]
) -> list[SearchHit]:
    """Rank every passage of the summaries' lineages by cosine to the question, best first.

    The stored vectors are compared with the query vector (`SearchIndex.vectors`), so every
    kept summary can expand to its own best passages; under filters only passing passages
    are ranked.

    Raises:
        StoreError: the search index failed.
    """
    ids = sorted({u for c in summaries for u in c.text_unit_ids if u in records})
    if ctx.filters:
        passing = await passing_units(ctx, ids)
        ids = [u for u in ids if u in passing]
    found, matrix = await ctx.stores.search.vectors(Collection.TEXT_UNITS, ids)
    if not found:
        return []
    scores = matrix @ (await ctx.query_vector()).astype(np.float32)
    order = sorted(range(len(found)), key=lambda i: (-float(scores[i]), found[i]))
    return [
        SearchHit(id=found[i], score=float(scores[i]), text=records[found[i]].text,
                  fields=records[found[i]].fields)
        for i in order
    ]  # fmt: skip


def cap_levels(
    summaries: Sequence[Candidate], top_k: int, per_level: int
) -> tuple[list[Candidate], int]:
    """Return the best ``top_k`` summaries with at most ``per_level`` of one level.

    Returns:
        ``(kept, capped)``: the kept summaries in their order, and how many were passed over
        for their level before ``top_k`` were kept.
    """
    kept: list[Candidate] = []
    per: dict[object, int] = {}
    capped = 0
    for c in summaries:
        if len(kept) >= top_k:
            break
        level = c.metadata.get("level")
        if per.get(level, 0) >= per_level:
            capped += 1
            continue
        per[level] = per.get(level, 0) + 1
        kept.append(c)
    return kept, capped


def expand_summaries(
    summaries: Sequence[Candidate],
    passages: Sequence[Candidate],
    pool: Sequence[SearchHit],
    per_summary: int,
) -> list[Candidate]:
    """Return ``passages`` with each summary's best lineage passages seated after its rank.

    Args:
        summaries: the kept summaries, best first (their ``text_unit_ids`` are the lineage).
        passages: the selected passages, best first.
        pool: text-unit hits ranking the candidates for expansion, best first.
        per_summary: passages of its lineage each summary takes from ``pool``.

    Returns:
        The passages, with the expanded ones (metadata ``expanded_from``) seated as the
        module docstring says; no passage twice.
    """
    out = list(passages)
    taken: set[str] = set()
    for summary in summaries:
        lineage = set(summary.text_unit_ids)
        best = [h for h in pool if h.id in lineage][:per_summary]
        score = math.nextafter(summary.score, -math.inf)
        seated: list[Candidate] = []
        for hit in best:
            if hit.id in taken:
                continue
            taken.add(hit.id)
            present = next((c for c in out if c.id == hit.id), None)
            if present is not None and present.score >= summary.score:
                continue
            base = present if present is not None else text_unit_candidate(hit)
            out = [c for c in out if c.id != hit.id]
            seated.append(dataclasses.replace(
                base, score=score, metadata={**base.metadata, "expanded_from": summary.id}))
        if seated:
            at = next((i for i, c in enumerate(out) if c.score < summary.score), len(out))
            out[at:at] = seated
    return out
