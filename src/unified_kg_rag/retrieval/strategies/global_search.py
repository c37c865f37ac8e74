"""Strategy ``global``: GraphRAG global search (map the community reports to key points).

Seed 000 §6.1.1. The reports of one cut of the community hierarchy (`domain.answers.global_map`:
the deepest cut within ``global_search.max_reports``, or a configured level; the most
similar reports of the cut when not even the top cut fits), or those found by dynamic
selection (rate the top reports 1-10, follow the children of the relevant ones), are packed
into batches of ``map_context_tokens``; one model call per batch extracts key points scored
0-100, each citing the batch's reports. The points above ``relevance_threshold`` are ranked
and handed to the answer as one synthesized section, followed by the reports they cite
(no separate reduce call).

Degradation: a batch whose call failed or whose reply cannot be read stays *unrated*
(``metadata["degraded"]``); when no point passed but some reports were never rated, those
reports pass through. When every map call failed the first error is raised, unless the
query's deadline cut them (the map replies that arrived are used, the rest pass through
unrated); a fatal error (no model access) always is. Without an LLM the cut's reports are
ranked by similarity.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from unified_kg_rag.domain.answers.global_map import (
    CutChoice,
    DynamicWalk,
    KeyPoint,
    RankedPoint,
    choose_cut,
    format_batch,
    pack_batches,
    pack_points,
    parse_map_reply,
    parse_rating,
    rank_points,
    report_header,
)
from unified_kg_rag.domain.llm.roles import ModelRole
from unified_kg_rag.domain.models import Collection, Community, Message, SearchMode
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
    is_fatal,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.filtering import reports_passing
from unified_kg_rag.util.aio import map_bounded
from unified_kg_rag.util.errors import ModelOutputError, QueryDeadlineError

__all__ = ["NO_LLM_FALLBACK", "NO_RELEVANT_POINT", "GlobalSearchStrategy", "Report"]

logger = logging.getLogger(__name__)

MAP_PROMPT = "global_map.v1"
RATING_PROMPT = "community_rating.v1"
_RATING_MAX_TOKENS = 16
ANSWER_STYLE = "comprehensive"
NO_LLM_FALLBACK = (
    "global search needs an LLM for its map step; the reports of the cut are ranked by "
    "similarity instead"
)
NO_RELEVANT_POINT = "no community report holds a relevant point"


@dataclass(frozen=True)
class Report:
    """A community report as global search reads it (its REPORTS search record).

    Attributes:
        id: the community id.
        text: the record's text (the report's full content).
        title: the report's title ("" when not stored).
        level: the community's level (0 = top).
        rank: the report's rank (orders a fixed cut).
        score: the score it was selected with (similarity), 0 otherwise.
    """

    id: str
    text: str
    title: str
    level: int
    rank: float
    score: float = 0.0

    def scored(self, score: float) -> Report:
        """Return a copy with ``score``."""
        return Report(self.id, self.text, self.title, self.level, self.rank, score)


@dataclass(frozen=True)
class _Batch:
    number: int
    reports: tuple[Report, ...]
    texts: tuple[str, ...]


@register_strategy(
    "global",
    methodology="graphrag",
    description="GraphRAG global search: key points mapped from the community reports of a "
    "hierarchy cut, for questions about the whole collection.",
)
class GlobalSearchStrategy:
    """GraphRAG global search (map-reduce over community reports, seed 000 §6.1.1)."""

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return the ranked key points and the reports they cite.

        Records ``global_level``, ``global_reports`` (community ids mapped),
        ``global_selection`` (``fixed``, ``capped_similarity`` or ``dynamic``),
        ``global_batches`` and ``global_points`` in ``ctx.metadata``.

        Raises:
            ModelError: every map call failed (the first error), or a call was refused
                (401/403).
            StoreError: a store failed.
            EmbeddingModelError: the question could not be embedded (similarity ranking).
        """
        cfg = ctx.config.global_search
        communities = await ctx.stores.graph.get_communities()
        if not communities:
            ctx.metadata["global_reports"] = []
            return StrategyResult(
                answer_style=ANSWER_STYLE, cannot_answer="the index holds no community reports"
            )
        if ctx.model("answer") is None:
            return await _without_llm(ctx, communities)
        if cfg.dynamic_selection:
            reports = await _dynamic_selection(ctx, communities)
            ctx.metadata["global_selection"] = "dynamic"
            if not reports:
                ctx.metadata["global_reports"] = []
                return StrategyResult(
                    answer_style=ANSWER_STYLE,
                    cannot_answer="no community report was rated relevant to the question",
                )
        else:
            reports = await _fixed_selection(ctx, communities)
        if ctx.filters:
            allowed = await reports_passing(ctx, [r.id for r in reports])
            reports = [r for r in reports if r.id in allowed]
        ctx.metadata["global_reports"] = [r.id for r in reports]
        if not reports:
            return StrategyResult(
                answer_style=ANSWER_STYLE, cannot_answer="the selected cut holds no reports"
            )
        return await _map_reduce(ctx, reports)


def _record_degraded(ctx: QueryContext, name: str, message: str) -> None:
    logger.warning("global search degraded (%s): %s", name, message)
    degraded = ctx.metadata.setdefault("degraded", {})
    if isinstance(degraded, dict):
        degraded[name] = message


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


async def _fetch_reports(ctx: QueryContext, ids: Sequence[str]) -> dict[str, Report]:
    """Return the REPORTS records of ``ids`` that exist, keyed by community id."""
    if not ids:
        return {}
    records = await ctx.stores.search.get(Collection.REPORTS, list(ids))
    missing = len(ids) - len(records)
    if missing:
        logger.debug("global search: %d communities have no report record", missing)
    return {
        r.id: Report(r.id, r.text, str(r.fields.get("title") or ""),
                     int(_number(r.fields.get("level"))), _number(r.fields.get("rank")))
        for r in records
    }  # fmt: skip


async def _complete(
    ctx: QueryContext, prompt: str, max_tokens: int, step: str = "", *,
    role: ModelRole = "answer",
) -> str:
    """Return the model's reply to one user message (counted, failed or not).

    ``step`` names a reply the answer rests on: when cut, it is recorded
    (`QueryContext.note_reply`). ``role``: the map step is answer writing (``answer``, the
    default); rating a report's relevance is query processing (``query``), falling back to
    the answer model when the query role has none.
    """
    chat = ctx.model(role) or ctx.model("answer")
    assert chat is not None
    try:
        reply = await chat.complete(
            [Message(role="user", content=prompt)], max_tokens=max_tokens, temperature=0.0
        )
    finally:
        ctx.count_llm_call()
    if step:
        ctx.note_reply(step, reply)
    return reply.text


async def _rate(ctx: QueryContext, report: Report) -> int:
    """Rate one report's relevance to the question, 1-10 (one model call)."""
    prompt = ctx.prompts.text(RATING_PROMPT, {"question": ctx.question, "report": report.text})
    rating = parse_rating(await _complete(ctx, prompt, _RATING_MAX_TOKENS, role="query"))
    if rating is None:
        raise ModelOutputError(f"rating of report {report.id}: the reply held no number")
    return rating


async def _dynamic_selection(
    ctx: QueryContext, communities: Sequence[Community]
) -> list[Report]:
    """Select reports by rating them top-down (`DynamicWalk`), best rated first.

    Ratings run ``max_concurrency`` at a time; a report whose rating failed is kept, unrated,
    and recorded under ``degraded["global_rating"]``; the children of a community without a
    report are rated in its place. At most ``max_reports`` are returned.

    Raises:
        ModelError: a rating call was refused (401/403).
    """
    cfg = ctx.config.global_search
    walk = DynamicWalk(communities, cfg.dynamic_threshold, cfg.dynamic_max_level)
    reports: dict[str, Report] = {}
    errors: list[BaseException] = []
    rated = 0
    while frontier := walk.frontier():
        reports.update(await _fetch_reports(ctx, [i for i in frontier if i not in reports]))
        todo = [reports[i] for i in frontier if i in reports]
        results = await map_bounded(todo, lambda r: _rate(ctx, r), concurrency=cfg.max_concurrency)
        for result in results:
            if result.error is not None and is_fatal(result.error):
                raise result.error
        errors += [r.error for r in results if r.error is not None]
        rated += len(results)
        # a community without a report cannot be rated: its children are rated instead
        found: dict[str, int | None] = dict.fromkeys(frontier, cfg.dynamic_threshold)
        walk.record({**found, **{r.item.id: r.value for r in results}})
    if errors:
        _record_degraded(
            ctx, "global_rating",
            f"{len(errors)} of {rated} reports unrated: {type(errors[0]).__name__}: {errors[0]}",
        )  # fmt: skip
    ctx.metadata["global_rated_reports"] = rated - len(errors)
    chosen = walk.selected()
    order = sorted(
        (p for p in chosen if p[0] in reports),
        key=lambda p: (p[1] is None, -(p[1] or 0), -reports[p[0]].rank, p[0]),
    )
    selected = [reports[cid].scored(float(rating or 0)) for cid, rating in order]
    selected = selected[: cfg.max_reports]
    ctx.metadata["global_level"] = max((r.level for r in selected), default=0)
    return selected


async def _fixed_selection(
    ctx: QueryContext, communities: Sequence[Community], *, by_similarity: bool = False
) -> list[Report]:
    """Return the reports of the chosen cut: by rank, or the most similar when capped.

    ``by_similarity``: rank a cut that fits by similarity too (no map step to rank it).
    """
    cfg = ctx.config.global_search
    choice = choose_cut(communities, cfg.level, cfg.max_reports)
    ctx.metadata["global_level"] = choice.level
    ctx.metadata["global_selection"] = "capped_similarity" if choice.capped else "fixed"
    reports = await _fetch_reports(ctx, choice.community_ids)
    if choice.capped or by_similarity:
        return await _by_similarity(ctx, choice, reports, cfg.max_reports)
    return sorted(reports.values(), key=lambda r: (-r.rank, r.id))


async def _by_similarity(
    ctx: QueryContext, choice: CutChoice, reports: dict[str, Report], k: int
) -> list[Report]:
    """Return up to ``k`` reports of the cut, most similar to the question first.

    A hybrid (or the configured mode's) search over the reports restricted to the cut by a
    filter on ``community_id`` (both stores filter on stored fields); reports the search did
    not return fill the rest by rank. Each report's ``score`` is its search score (0 for the
    filled ones).
    """
    cfg = ctx.config
    mode = SearchMode(cfg.search_mode)
    ids = [i for i in choice.community_ids if i in reports]
    if not ids:
        return []
    vector = await ctx.query_vector() if mode is not SearchMode.LEXICAL else None
    hits = await ctx.stores.search.search(
        Collection.REPORTS,
        query_text=ctx.question,
        query_vector=vector,
        mode=mode,
        filters={"community_id": ids},
        k=min(k, len(ids)),
        candidate_k=max(cfg.candidate_k, min(k, len(ids))),
        lexical_weight=cfg.lexical_weight,
        vector_weight=cfg.vector_weight,
        rrf_k=cfg.rrf_k,
    )
    ranked = [reports[h.id].scored(h.score) for h in hits if h.id in reports]
    seen = {r.id for r in ranked}
    rest = sorted((r for r in reports.values() if r.id not in seen), key=lambda r: (-r.rank, r.id))
    return [*ranked, *(r.scored(0.0) for r in rest)][:k]


async def _without_llm(ctx: QueryContext, communities: Sequence[Community]) -> StrategyResult:
    """Rank the cut's reports by similarity to the question (no map step without a model)."""
    ctx.metadata["fallback"] = NO_LLM_FALLBACK
    ranked = await _fixed_selection(ctx, communities, by_similarity=True)
    if ctx.filters:
        allowed = await reports_passing(ctx, [r.id for r in ranked])
        ranked = [r for r in ranked if r.id in allowed]
    ctx.metadata["global_reports"] = [r.id for r in ranked]
    candidates = await _report_candidates(ctx, [(r, r.score) for r in ranked])
    return StrategyResult(buckets=[Bucket("reports", candidates)], answer_style=ANSWER_STYLE)


def _batches(reports: Sequence[Report], max_tokens: int) -> list[_Batch]:
    """Pack the reports, in order, into map batches (a too-long report is cut to fit)."""
    counter = EstimateTokenCounter()
    header = counter.count(report_header(len(reports))) + 1
    texts = [counter.truncate(r.text.strip(), max(1, max_tokens - header)) for r in reports]
    groups = pack_batches([counter.count(t) + header for t in texts], max_tokens)
    return [
        _Batch(n, tuple(reports[i] for i in g), tuple(texts[i] for i in g))
        for n, g in enumerate(groups, start=1)
    ]


async def _map_batch(ctx: QueryContext, batch: _Batch) -> list[KeyPoint]:
    """Run one map call; raise `ModelOutputError` when its reply holds no key points."""
    prompt = ctx.prompts.text(
        MAP_PROMPT, {"question": ctx.question, "reports": format_batch(batch.texts)}
    )
    reply = await _complete(
        ctx, prompt, ctx.config.global_search.map_max_tokens, f"global_map.{batch.number}"
    )
    points = parse_map_reply(reply, len(batch.reports))
    if points is None:
        raise ModelOutputError(f"map batch {batch.number}: the reply held no readable key points")
    return points


async def _map_reduce(ctx: QueryContext, reports: Sequence[Report]) -> StrategyResult:
    """Map the reports to key points and build the result (see the module docstring)."""
    cfg = ctx.config.global_search
    batches = _batches(reports, cfg.map_context_tokens)
    ctx.metadata["global_batches"] = len(batches)
    results = await map_bounded(
        batches, lambda b: _map_batch(ctx, b), concurrency=cfg.max_concurrency
    )
    errors = [r.error for r in results if r.error is not None]
    for error in errors:
        if is_fatal(error):
            raise error
    failed_calls = [e for e in errors if not isinstance(e, ModelOutputError)]
    out_of_time = any(isinstance(e, QueryDeadlineError) for e in errors)
    if failed_calls and len(failed_calls) == len(batches) and not out_of_time:
        raise failed_calls[0]
    points: list[RankedPoint] = []
    unrated: list[Report] = []
    for result in results:
        batch = result.item
        if result.value is None:
            unrated.extend(batch.reports)
            continue
        for p in result.value:
            ids = tuple(batch.reports[o - 1].id for o in p.ordinals)
            points.append(RankedPoint(p.description, p.score, ids))
    if errors:
        _record_degraded(
            ctx, "global_map",
            f"{len(errors)} of {len(batches)} map batches unrated ({len(unrated)} reports): "
            f"{type(errors[0]).__name__}: {errors[0]}",
        )  # fmt: skip
        ctx.metadata["global_unrated_reports"] = len(unrated)
    kept = rank_points(points, cfg.relevance_threshold)
    ctx.metadata["global_points"] = len(kept)
    if not kept:
        if unrated:
            candidates = await _report_candidates(ctx, [(r, 0.0) for r in unrated])
            return StrategyResult(
                buckets=[Bucket("reports", candidates)], answer_style=ANSWER_STYLE
            )
        return StrategyResult(answer_style=ANSWER_STYLE, cannot_answer=NO_RELEVANT_POINT)
    return await _result(ctx, kept, {r.id: r for r in reports})


async def _result(
    ctx: QueryContext, kept: Sequence[RankedPoint], reports: dict[str, Report]
) -> StrategyResult:
    """Return the key-points section and the bucket of the reports it cites, best point first."""
    titles = {i: r.title for i, r in reports.items() if r.title}
    text, packed = pack_points(
        kept, EstimateTokenCounter(), ctx.config.global_search.points_tokens, titles
    )
    cited: dict[str, float] = {}
    for point in packed:
        for rid in point.report_ids:
            cited.setdefault(rid, point.score)
    candidates = await _report_candidates(ctx, [(reports[i], s) for i, s in cited.items()])
    units = tuple(dict.fromkeys(u for c in candidates for u in c.text_unit_ids))
    docs = tuple(dict.fromkeys(d for c in candidates for d in c.document_ids))
    key_points = Candidate(
        kind="key_points",
        id="global:key_points",
        text=text,
        score=packed[0].score,
        text_unit_ids=units,
        document_ids=docs,
        metadata={
            "community_ids": ",".join(cited),
            "points": len(packed),
            "points_kept": len(kept),
        },
    )
    return StrategyResult(
        buckets=[Bucket("reports", candidates)],
        synthesized=[key_points],
        answer_style=ANSWER_STYLE,
    )


async def _report_candidates(
    ctx: QueryContext, scored: Sequence[tuple[Report, float]]
) -> list[Candidate]:
    """Return report candidates (lineage and documents filled in), in the given order."""
    if not scored:
        return []
    stored = await ctx.stores.graph.get_reports([r.id for r, _ in scored])
    lineage = {s.community_id: s.text_unit_ids for s in stored}
    unit_ids = list(dict.fromkeys(u for units in lineage.values() for u in units))
    records = await ctx.stores.search.get(Collection.TEXT_UNITS, unit_ids) if unit_ids else []
    doc_of = {
        rec.id: rec.fields["document_id"]
        for rec in records
        if isinstance(rec.fields.get("document_id"), str)
    }
    out: list[Candidate] = []
    for report, score in scored:
        units = lineage.get(report.id, ())
        docs = tuple(dict.fromkeys(str(doc_of[u]) for u in units if u in doc_of))
        out.append(
            Candidate(
                kind="report",
                id=report.id,
                text=report.text,
                score=score,
                title=report.title or None,
                text_unit_ids=units,
                document_ids=docs,
                metadata={"level": report.level, "rank": report.rank, "title": report.title},
            )
        )
    return out
