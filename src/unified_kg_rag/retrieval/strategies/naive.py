"""Strategy ``naive``: text units by BM25, vector kNN, or both fused by weighted RRF.

The baseline every index serves (LightRAG's ``naive`` mode, with hybrid lexical + vector
retrieval in place of vector-only). Source: seed 000 §6.2; fusion: `domain.ranking.fusion`.
"""

from __future__ import annotations

from unified_kg_rag.domain.index.paths import full_location_of
from unified_kg_rag.domain.models import Collection, MetadataValue, SearchHit, SearchMode
from unified_kg_rag.retrieval.strategies.base import Candidate, QueryContext, register_strategy

__all__ = ["NaiveStrategy", "text_unit_candidate"]


def text_unit_candidate(hit: SearchHit) -> Candidate:
    """Return the context candidate of a text-unit search hit."""
    f = hit.fields

    def as_int(v: MetadataValue) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def as_str(v: MetadataValue) -> str | None:
        return v if isinstance(v, str) else None

    path, scope = as_str(f.get("path")), as_str(f.get("source_scope"))
    is_folder = scope is not None and (scope.startswith("/") or scope[1:3] == ":/")
    location = full_location_of(scope, path) if path and scope and is_folder else None
    return Candidate(
        kind="text_unit",
        id=hit.id,
        text=hit.text,
        score=hit.score,
        document_id=as_str(f.get("document_id")),
        path=path,
        location=location,
        title=as_str(f.get("title")),
        text_unit_ids=(hit.id,),
        start_char=as_int(f.get("start_char")),
        end_char=as_int(f.get("end_char")),
    )


@register_strategy(
    "naive",
    methodology=None,
    description="Text units by hybrid BM25 + vector search fused with RRF (no graph).",
)
class NaiveStrategy:
    """Hybrid (or lexical-only / vector-only) search over the index's text units."""

    async def retrieve(self, ctx: QueryContext) -> list[Candidate]:
        """Return the ``top_k`` text units for the question, best first."""
        cfg = ctx.config
        mode = SearchMode(cfg.search_mode)
        vector = await ctx.query_vector() if mode is not SearchMode.LEXICAL else None
        hits = await ctx.stores.search.search(
            Collection.TEXT_UNITS,
            query_text=ctx.question,
            query_vector=vector,
            mode=mode,
            filters=ctx.filters or None,
            k=cfg.top_k,
            candidate_k=max(cfg.candidate_k, cfg.top_k),
            lexical_weight=cfg.lexical_weight,
            vector_weight=cfg.vector_weight,
            rrf_k=cfg.rrf_k,
        )
        return [text_unit_candidate(h) for h in hits]
