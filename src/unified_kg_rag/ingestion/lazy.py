"""`LazyIndexer`: the LLM-free concept graph of the `lazy` methodology (issue #5).

Over every stored text unit: YAKE keyphrases plus document titles form a vocabulary; each
unit is linked to every vocabulary concept its text contains; concepts in too few or too many
units are dropped; concept-concept co-occurrence edges feed hierarchical Leiden (the same
deterministic code as the LLM graph). No summaries or reports: the cost is that of reading
the units once (no model call, no embedding).

The graph is stored as one versioned artifact in the index's `RecordStore` (namespace
``lazy``), with its communities, and the build's input digest in ``index``/``lazy_build``;
strategies load it once per digest. A run whose inputs match the stored digest skips the
build.
"""

from __future__ import annotations

import asyncio
import json
import time

from pydantic import BaseModel, Field

from unified_kg_rag.config.lazy import LazyIndexConfig
from unified_kg_rag.domain.concepts.graph import ConceptGraph, build_concept_graph, keyphrases
from unified_kg_rag.domain.graph.communities import detect_communities
from unified_kg_rag.domain.index.meta import (
    CONCEPT_COMMUNITIES_KEY,
    CONCEPT_GRAPH_KEY,
    INDEX_NAMESPACE,
    LAZY_BUILD_KEY,
    LAZY_NAMESPACE,
    encode_concept_graph,
)
from unified_kg_rag.domain.models import Community
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ingestion.units import UnitText, load_units, processed_unit_paths
from unified_kg_rag.ports import IndexStores, KeyphraseExtractor, ProgressReporter
from unified_kg_rag.util.hashing import sha256_json

__all__ = ["LazyBuildReport", "LazyIndexer"]

_VERSION = 1
_KEYPHRASE_BATCH = 64




class LazyBuildReport(BaseModel):
    """What the concept-graph build did.

    Attributes:
        skipped_reason: why nothing was built ("" when it was).
        text_units: text units the graph covers.
        concepts: concepts kept.
        links: unit-concept links.
        cooccurrence_edges: concept-concept edges.
        communities_per_level: communities at each level (0 = top).
        seconds: wall time of the build, seconds.
    """

    skipped_reason: str = ""
    text_units: int = 0
    concepts: int = 0
    links: int = 0
    cooccurrence_edges: int = 0
    communities_per_level: dict[int, int] = Field(default_factory=dict)
    seconds: float = 0.0


class LazyIndexer:
    """Builds and stores the concept graph of one index.

    Args:
        stores: the index's stores (fenced by the run's lease).
        config: ``graph.lazy``.
        seed: the Leiden seed (``graph.communities.seed``).
        max_cluster_size: ``graph.communities.max_cluster_size``.
        min_community_size: ``graph.communities.min_community_size``.
        extractor: the keyphrase extractor (None: YAKE through `domain.concepts.graph`).
        progress: receives progress events.
    """

    def __init__(
        self,
        stores: IndexStores,
        config: LazyIndexConfig,
        *,
        seed: int,
        max_cluster_size: int,
        min_community_size: int,
        extractor: KeyphraseExtractor | None = None,
        progress: ProgressReporter | None = None,
    ) -> None:
        self._stores = stores
        self._extractor = extractor
        self._config = config
        self._communities = (seed, max_cluster_size, min_community_size)
        self._progress = progress or NULL_PROGRESS

    async def run(self, *, force: bool = False) -> LazyBuildReport:
        """Build the concept graph unless the stored one has the same inputs.

        Raises:
            StoreError: a store failed (the previous graph stays until the new one is written).
        """
        started = time.perf_counter()
        stores = self._stores
        paths = await processed_unit_paths(stores)
        digest = sha256_json(
            {"v": _VERSION, "units": sorted(paths), "config": self._config.model_dump(mode="json"),
             "communities": list(self._communities),
             "extractor": self._extractor.name if self._extractor else "yake"}
        )  # fmt: skip
        report = LazyBuildReport(text_units=len(paths))
        if not force and await stores.records.get(INDEX_NAMESPACE, LAZY_BUILD_KEY) == digest:
            report.skipped_reason = "unchanged since the last build"
            return report
        units = await load_units(stores, paths)
        phrases = await self._keyphrases(units)
        graph, communities = await asyncio.to_thread(self._build, units, phrases)
        await stores.records.put(LAZY_NAMESPACE, CONCEPT_GRAPH_KEY, encode_concept_graph(graph))
        await stores.records.put(
            LAZY_NAMESPACE, CONCEPT_COMMUNITIES_KEY,
            json.dumps([c.model_dump(mode="json") for c in communities]),
        )
        await stores.records.put(INDEX_NAMESPACE, LAZY_BUILD_KEY, digest)
        report.concepts = len(graph.concepts)
        report.links = len(graph.weight)
        report.cooccurrence_edges = len(graph.co_weight)
        for c in communities:
            report.communities_per_level[c.level] = report.communities_per_level.get(c.level, 0) + 1
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    async def _keyphrases(self, units: list[UnitText]) -> list[list[str]]:
        """Extract every unit's keyphrases in batches off the event loop.

        Batches keep a stop (Ctrl-C, SIGTERM) prompt: the run is cancelled between two
        batches instead of after the whole corpus.
        """
        cfg = self._config
        extract = self._extractor.keyphrases if self._extractor else _yake

        def batch(chunk: list[UnitText]) -> list[list[str]]:
            return [
                extract(u.text, top=cfg.keyphrases_per_unit, max_ngram=cfg.max_ngram)
                for u in chunk
            ]

        out: list[list[str]] = []
        self._progress.start("concepts", len(units))
        for i in range(0, len(units), _KEYPHRASE_BATCH):
            chunk = units[i : i + _KEYPHRASE_BATCH]
            out.extend(await asyncio.to_thread(batch, chunk))
            self._progress.advance("concepts", len(chunk))
        self._progress.finish("concepts")
        return out

    def _build(
        self, units: list[UnitText], phrases: list[list[str]]
    ) -> tuple[ConceptGraph, list[Community]]:
        cfg = self._config
        max_df: int | float = int(cfg.max_df) if cfg.max_df >= 1 else cfg.max_df
        graph = build_concept_graph(
            [(u.id, u.text, u.title) for u in units],
            unit_keyphrases=phrases,
            keyphrases_per_unit=cfg.keyphrases_per_unit,
            max_ngram=cfg.max_ngram,
            include_titles=cfg.include_titles,
            min_df=cfg.min_df,
            max_df=max_df,
            link_by_containment=cfg.link_by_containment,
            min_cooccurrence=cfg.min_cooccurrence,
        )
        seed, max_size, min_size = self._communities
        ids = graph.concept_ids
        communities = detect_communities(
            list(ids),
            [(ids[i], ids[j], w) for i, j, w in graph.cooccurrence],
            max_cluster_size=max_size,
            min_community_size=min_size,
            seed=seed,
        )
        return graph, communities


def _yake(text: str, *, top: int, max_ngram: int) -> list[str]:
    """YAKE through `domain.concepts.graph.keyphrases` (no extractor given)."""
    return keyphrases(text, max_ngram=max_ngram, top=top)
