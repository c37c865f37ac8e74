"""Stages of the staged retrieval pipeline over the search-index port: semantic, lexical, hydrate.

Each stage merges what it finds into the candidates it receives (by id: a candidate found
again keeps its other signals and gains this stage's), so ``semantic`` then ``lexical``
gives a hybrid set with both signals. Source: seed 002 ("Pre-built Stages" 1-2) and
issue #22.
"""

from __future__ import annotations

from dataclasses import dataclass

from unified_kg_rag.domain.models import Collection, SearchHit, SearchMode
from unified_kg_rag.domain.ranking.signals import max_normalized
from unified_kg_rag.ports import Embedder, SearchIndex

from .pipeline import Candidate, StageInput, StageOutput

__all__ = ["HydrateStage", "LexicalStage", "SemanticStage", "merge_hits"]

_KINDS = {
    Collection.TEXT_UNITS: "text_unit", Collection.ENTITIES: "entity",
    Collection.RELATIONSHIPS: "relationship", Collection.REPORTS: "report",
    Collection.CLAIMS: "claim", Collection.SUMMARY_NODES: "summary",
    Collection.CONCEPTS: "concept",
}  # fmt: skip
"""The candidate kind of an item of each collection."""


def merge_hits(
    candidates: list[Candidate], hits: list[SearchHit], signal: str, values: list[float],
    kind: str,
) -> list[Candidate]:
    """Return ``candidates`` with ``hits`` merged in, each setting ``signal`` to its value.

    A hit already among the candidates sets the signal on that candidate (keeping the
    higher value if one is set); a new hit is appended with its stored text and fields.
    """
    merged = list(candidates)
    by_id = {c.id: c for c in merged}
    for hit, value in zip(hits, values, strict=True):
        if (known := by_id.get(hit.id)) is not None:
            known.signals[signal] = max(value, known.signals.get(signal, 0.0))
            continue
        fresh = Candidate(hit.id, kind, hit.text or None, dict(hit.fields), {signal: value})
        merged.append(fresh)
        by_id[hit.id] = fresh
    return merged


@dataclass
class SemanticStage:
    """Vector search: adds up to ``limit`` items with signal ``semantic`` = cosine in 0..1.

    Attributes:
        index: the search index.
        embedder: embeds the query (`Embedder.embed_query`).
        limit: candidates added at most.
        min_score: hits with a lower cosine are left out.
        collection: what is searched (text units by default).
        name: the stage's name.
    """

    index: SearchIndex
    embedder: Embedder
    limit: int = 50
    min_score: float = 0.0
    collection: Collection = Collection.TEXT_UNITS
    name: str = "semantic"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Embed the query, search, merge the hits (metadata filters of the run applied)."""
        vector = await self.embedder.embed_query(stage_input.query)
        hits = await self.index.search(
            self.collection, query_vector=vector, mode=SearchMode.VECTOR,
            filters=dict(stage_input.filters) or None, k=self.limit,
        )  # fmt: skip
        kept = [h for h in hits if h.score >= self.min_score]
        values = [min(max(h.score, 0.0), 1.0) for h in kept]
        merged = merge_hits(stage_input.candidates, kept, "semantic", values,
                            _KINDS[self.collection])  # fmt: skip
        return StageOutput(merged, {**stage_input.context, "query_vector": vector})


@dataclass
class LexicalStage:
    """BM25 search: adds up to ``limit`` items with signal ``lexical`` (BM25 / the query's best).

    Attributes:
        index: the search index.
        limit: candidates added at most.
        collection: what is searched.
        name: the stage's name.
    """

    index: SearchIndex
    limit: int = 50
    collection: Collection = Collection.TEXT_UNITS
    name: str = "lexical"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Search the query's terms, merge the hits with max-normalised scores."""
        hits = await self.index.search(
            self.collection, query_text=stage_input.query, mode=SearchMode.LEXICAL,
            filters=dict(stage_input.filters) or None, k=self.limit,
        )  # fmt: skip
        values = max_normalized([h.score for h in hits])
        merged = merge_hits(stage_input.candidates, hits, "lexical", values,
                            _KINDS[self.collection])  # fmt: skip
        return StageOutput(merged, stage_input.context)


@dataclass
class HydrateStage:
    """Loads the text and fields of candidates that lack them; drops those no longer stored.

    Attributes:
        index: the search index.
        collection: where the candidates' records are.
        name: the stage's name.
    """

    index: SearchIndex
    collection: Collection = Collection.TEXT_UNITS
    name: str = "hydrate"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Fetch the missing records in one call; keep every candidate's signals."""
        missing = [c.id for c in stage_input.candidates if c.text is None]
        records = {r.id: r for r in await self.index.get(self.collection, missing)} if missing \
            else {}  # fmt: skip
        kept = []
        for candidate in stage_input.candidates:
            if candidate.text is None:
                record = records.get(candidate.id)
                if record is None:
                    continue  # deleted since it was found
                candidate.text = record.text
                candidate.metadata = {**record.fields, **candidate.metadata}
            kept.append(candidate)
        return StageOutput(kept, stage_input.context)
