"""The staged retrieval pipeline's stages (semantic, lexical, hydrate, graph, temporal, rerank).

Each stage merges what it finds into the candidates it receives (by id: a candidate found
again keeps its other signals and gains this stage's), so ``semantic`` then ``lexical``
gives a hybrid set with both signals. ``temporal`` and ``access`` score the candidates they
receive (from their metadata; ``access`` from the index's access log when given).
Source: seed 002 ("Pre-built Stages") and issue #22.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import Collection, Entity, SearchHit, SearchMode
from unified_kg_rag.domain.ranking.signals import (
    Scorer,
    access_signal,
    distance_signal,
    max_normalized,
    temporal_decay,
)
from unified_kg_rag.ports import AccessLog, Embedder, GraphStore, Reranker, SearchIndex

from .access import KIND_COLLECTIONS
from .pipeline import Candidate, StageInput, StageOutput
from .pipeline_time import UnitTimeSource, candidate_times

__all__ = [
    "AccessStage",
    "GraphExpansionStage",
    "HydrateStage",
    "LexicalStage",
    "RerankStage",
    "SemanticStage",
    "TemporalDecayStage",
    "hop_distances",
    "merge_hits",
    "propagated_strength",
    "seed_hops",
]

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


def _whole(name: str, value: object, least: int) -> None:
    """Refuse a count parameter that is not a whole number ≥ ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")


def _collection(value: Collection | str) -> Collection:
    """Return the collection ``value`` names (a definition gives its name as text)."""
    if isinstance(value, Collection):
        return value
    try:
        return Collection(value)
    except ValueError:
        names = ", ".join(c.value for c in Collection)
        raise ValueError(f"collection must be one of {names}, got {value!r}") from None


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

    def __post_init__(self) -> None:
        _whole("limit", self.limit, 1)
        if not math.isfinite(self.min_score):
            raise ValueError(f"min_score must be a finite number, got {self.min_score}")
        self.collection = _collection(self.collection)

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

    def __post_init__(self) -> None:
        _whole("limit", self.limit, 1)
        self.collection = _collection(self.collection)

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

    def __post_init__(self) -> None:
        self.collection = _collection(self.collection)

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


@dataclass
class TemporalDecayStage:
    """Sets signal ``temporal`` = ``max(floor, 0.5 ** (age / half_life))`` from a timestamp.

    Attributes:
        half_life_s: the age at which the signal halves, seconds.
        floor: the least value an old candidate keeps (0..1).
        timestamp_field: the metadata field holding the candidate's time (epoch seconds or
            ISO-8601; a naive time is read as UTC).
        missing: the signal of a candidate without a readable timestamp.
        now_s: the reference time, epoch seconds (None: the clock at each run).
        name: the stage's name.
        fallback: looks up, in one call per run, the times of candidates without a readable
            ``timestamp``/``timestamp_first`` (units of an index built before they were
            stored: `retrieval.pipeline_time.StoredUnitTimes`); None: they score ``missing``.

    Source: seed 002, "Temporal Decay"; `domain.ranking.signals.temporal_decay`.
    """

    half_life_s: float
    floor: float = 0.0
    timestamp_field: str = "timestamp"
    missing: float = 0.0
    now_s: float | None = None
    name: str = "temporal_decay"
    fallback: UnitTimeSource | None = None

    def __post_init__(self) -> None:
        temporal_decay(0.0, self.half_life_s, self.floor)  # checks the settings
        if not 0.0 <= self.missing <= 1.0:
            raise ValueError(f"missing must be within 0..1, got {self.missing}")
        if self.now_s is not None and not math.isfinite(self.now_s):
            raise ValueError(f"now_s must be a finite time in epoch seconds, got {self.now_s}")

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Score every candidate's recency; none is added or dropped."""
        now = time.time() if self.now_s is None else self.now_s
        stamps = await candidate_times(stage_input.candidates, self.timestamp_field,
                                       self.fallback)  # fmt: skip
        for candidate, stamp in zip(stage_input.candidates, stamps, strict=True):
            candidate.signals["temporal"] = (
                self.missing if stamp is None
                else temporal_decay(now - stamp, self.half_life_s, self.floor)
            )  # fmt: skip
        return StageOutput(stage_input.candidates, stage_input.context)


@dataclass
class AccessStage:
    """Sets signal ``access`` from recorded retrieval counts, capped and normalised per run.

    With an access log the counts are the recorded ones (`AccessLog.counts`: one batched
    read per kind of candidate, usually one per run; ``query.access.record`` fills it);
    without, each candidate's ``count_field`` metadata (for counts kept elsewhere). A
    candidate without a count counts 0.

    Attributes:
        count_field: the metadata field holding a candidate's access count (no log).
        cap: the normalisation cap (`domain.ranking.signals.access_signal`).
        name: the stage's name.
        log: the index's access log (None: read ``count_field``).

    Source: seed 002, "Access Count".
    """

    count_field: str = "access_count"
    cap: int = 1000
    name: str = "access"
    log: AccessLog | None = None

    def __post_init__(self) -> None:
        _whole("cap", self.cap, 1)

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Score every candidate by its count over the run's highest; none is dropped."""
        if self.log is not None:
            counts = await self._recorded(self.log, stage_input.candidates)
        else:
            counts = [self._field(c) for c in stage_input.candidates]
        for candidate, value in zip(stage_input.candidates, access_signal(counts, self.cap),
                                    strict=True):  # fmt: skip
            candidate.signals["access"] = value
        return StageOutput(stage_input.candidates, stage_input.context)

    def _field(self, candidate: Candidate) -> int:
        value = candidate.metadata.get(self.count_field)
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) \
            else 0  # fmt: skip

    @staticmethod
    async def _recorded(log: AccessLog, candidates: list[Candidate]) -> list[int]:
        """The logged count of each candidate (one `AccessLog.counts` call per collection)."""
        by_collection: dict[Collection, list[str]] = {}
        for candidate in candidates:
            if (collection := KIND_COLLECTIONS.get(candidate.kind)) is not None:
                by_collection.setdefault(collection, []).append(candidate.id)
        found: dict[tuple[str, str], int] = {}
        for collection, ids in by_collection.items():
            for item_id, n in (await log.counts(collection, ids)).items():
                found[(collection.value, item_id)] = n
        return [found.get((KIND_COLLECTIONS[c.kind].value, c.id), 0)
                if c.kind in KIND_COLLECTIONS else 0 for c in candidates]  # fmt: skip


@dataclass
class RerankStage:
    """Reranks the ``top_k`` best candidates so far; sets signal ``rerank`` in 0..1.

    The candidates are ordered by ``order_by`` (default: the sum of their signals so far),
    the first ``top_k`` with a text are sent to the reranker in one call, and its scores are
    min-max normalised over them (best 1, worst 0; one alone scores 1), since cross-encoders
    return unbounded logits. Candidates past ``top_k`` or without a text (add `HydrateStage`
    before) get 0. None is dropped.

    Attributes:
        reranker: the reranker port.
        top_k: candidates reranked at most.
        order_by: the scorer that picks the ``top_k`` (None: the sum of the signals).
        name: the stage's name.

    Source: seed 002, "Rerank".
    """

    reranker: Reranker
    top_k: int = 20
    order_by: Scorer | None = None
    name: str = "rerank"

    def __post_init__(self) -> None:
        _whole("top_k", self.top_k, 1)

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Rerank the best ``top_k`` candidates with a text in one reranker call."""
        def current(c: Candidate) -> float:
            return self.order_by.score(c.signals) if self.order_by else sum(c.signals.values())

        ranked = sorted(stage_input.candidates, key=lambda c: (-current(c), c.id))
        chosen = [c for c in ranked if c.text is not None][: self.top_k]
        for candidate in stage_input.candidates:
            candidate.signals["rerank"] = 0.0
        if chosen:
            scores = await self.reranker.rerank(stage_input.query, [c.text or "" for c in chosen])
            low, high = min(scores), max(scores)
            for candidate, score in zip(chosen, scores, strict=True):
                candidate.signals["rerank"] = 1.0 if high == low else (score - low) / (high - low)
        return StageOutput(stage_input.candidates, stage_input.context)


def seed_hops(
    seeds: Sequence[str], edges: Sequence[tuple[str, str]], nodes: Sequence[str] = ()
) -> tuple[list[str], NDArray[np.float64]]:
    """Return the graph's nodes and each distinct seed's edge distance to each of them.

    The nodes are the seeds (in order, once), then ``nodes``, then the edges' ends; the
    matrix is ``[distinct seeds, nodes]`` hops, unweighted and undirected, ``inf`` where a
    seed does not reach (scipy's ``shortest_path``, breadth-first).
    """
    from scipy.sparse import csr_matrix  # type: ignore[import-untyped]
    from scipy.sparse.csgraph import shortest_path  # type: ignore[import-untyped]

    every = list(dict.fromkeys([*seeds, *nodes, *(n for edge in edges for n in edge)]))
    at = {n: i for i, n in enumerate(every)}
    rows, cols = [at[a] for a, _ in edges], [at[b] for _, b in edges]
    adjacency = csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(len(every), len(every)))
    hops = shortest_path(adjacency, directed=False, unweighted=True,
                         indices=[at[s] for s in dict.fromkeys(seeds)])  # fmt: skip
    return every, np.asarray(hops, dtype=np.float64).reshape(-1, len(every))


def hop_distances(seeds: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Return each node's edge distance from the nearest seed (unweighted, undirected).

    Nodes no seed reaches are left out (`seed_hops`).
    """
    if not seeds:
        return {}
    nodes, hops = seed_hops(seeds, edges)
    nearest = hops.min(axis=0)
    return {n: int(h) for n, h in zip(nodes, nearest, strict=True) if np.isfinite(h)}


@dataclass
class GraphExpansionStage:
    """Adds the text units of entities near the candidates' entities; sets signal ``graph``.

    The entities citing the candidate text units are the seeds (distance 0); the entity
    graph is walked ``depth`` hops (`GraphStore.neighbourhood`, at most ``max_entities``).
    A text unit's ``graph`` signal is `distance_signal` of the nearest entity citing it, so
    a candidate whose own entities are seeds scores 1, one reached through a neighbour 0.5.
    At most ``max_expansion`` new text units are added (nearest first; not hydrated: add
    `HydrateStage` after). Candidates that are not text units pass through unscored.

    Attributes:
        graph: the index's graph store (an entity graph: ``graphrag``, ``lightrag`` or
            ``hipporag``; an index without one adds nothing).
        depth: hops walked (≥ 0).
        max_expansion: new candidates added at most.
        max_entities: entities the walk visits at most.
        propagate: weigh the distance by the relevance of the candidates it starts from: a
            seed entity carries the best signal so far of the candidate units citing it, an
            entity ``h`` hops away ``max over seeds of relevance / (1 + h)``, and a unit the
            best value of the entities citing it (so a unit next to a strong hit outranks
            one next to a weak hit; without it every unit a candidate's entity cites
            scores 1).
        name: the stage's name.

    Source: seed 002, "Graph Expansion"; ``propagate`` is spreading activation (the
    relevance-weighted expansion of issue #22's measurements, see the pipeline guide).
    """

    graph: GraphStore
    depth: int = 2
    max_expansion: int = 100
    max_entities: int = 200
    propagate: bool = False
    name: str = "graph"

    def __post_init__(self) -> None:
        _whole("depth", self.depth, 0)
        _whole("max_expansion", self.max_expansion, 0)
        _whole("max_entities", self.max_entities, 1)

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Walk the entity graph from the candidates' entities; score and add text units."""
        units = [c for c in stage_input.candidates if c.kind == "text_unit"]
        seeds, _ = await self.graph.citing([c.id for c in units]) if units else ([], [])
        if not seeds:
            return StageOutput(stage_input.candidates, stage_input.context)
        sub = await self.graph.neighbourhood(seeds, hops=self.depth,
                                             max_entities=self.max_entities)  # fmt: skip
        edges = [(r.source_id, r.target_id) for r in sub.relationships]
        if self.propagate:
            relevance = {c.id: max(c.signals.values(), default=0.0) for c in units}
            strength = propagated_strength(seeds, sub.entities, edges, relevance)
        else:
            hops = hop_distances(seeds, edges)
            strength = {e.id: distance_signal(hops.get(e.id, self.depth)) for e in sub.entities}
        value: dict[str, float] = {}
        for entity in sub.entities:
            for unit_id in entity.text_unit_ids:
                value[unit_id] = max(value.get(unit_id, 0.0), strength.get(entity.id, 0.0))
        known = {c.id for c in stage_input.candidates}
        for candidate in units:
            if candidate.id in value:
                candidate.signals["graph"] = value[candidate.id]
        fresh = sorted((-v, u) for u, v in value.items() if u not in known)
        added = [Candidate(u, "text_unit", signals={"graph": -v})
                 for v, u in fresh[: self.max_expansion]]  # fmt: skip
        return StageOutput([*stage_input.candidates, *added], stage_input.context)


def propagated_strength(
    seeds: Sequence[str], entities: Sequence[Entity], edges: Sequence[tuple[str, str]],
    relevance: Mapping[str, float],
) -> dict[str, float]:
    """Return each entity's ``max over seeds s of strength(s) / (1 + hops(s, e))``.

    A seed's strength is the best ``relevance`` of the units it cites (0 when it cites none
    of them); hops are unweighted and undirected (scipy's ``shortest_path``). Entities no
    seed reaches are left out.
    """
    cites = {e.id: e.text_unit_ids for e in entities}
    seeds = list(dict.fromkeys(seeds))
    power = np.array([max((relevance.get(u, 0.0) for u in cites.get(s, ())), default=0.0)
                      for s in seeds])  # fmt: skip
    nodes, hops = seed_hops(seeds, edges, list(cites))
    reach = (power[:, None] / (1.0 + hops)).max(axis=0)  # inf hops → 0
    reached = hops.min(axis=0) < np.inf  # some seed reaches the node
    return {n: float(v) for n, v, r in zip(nodes, reach, reached, strict=True) if r}
