"""Store ports: search index, graph store, doc registry, record store, backend, progress."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import (
    Collection,
    Community,
    CommunityReport,
    DocRecord,
    DocumentDelta,
    Entity,
    IndexRecord,
    Lease,
    MetadataValue,
    Relationship,
    SearchHit,
    SearchMode,
    Subgraph,
)

__all__ = [
    "AccessLog",
    "DocRegistry",
    "Filters",
    "GraphStore",
    "IndexStores",
    "PreparesVectorSearch",
    "ProgressReporter",
    "RecordStore",
    "SearchIndex",
    "StoreBackend",
]

Filters = Mapping[str, MetadataValue | Sequence[MetadataValue]]
"""Equality filters on stored fields; a sequence value means "any of these"."""


class SearchIndex(Protocol):
    """Lexical (BM25), vector and hybrid search over the collections of one index."""

    async def bind_embedding(self, model_id: str, dimension: int) -> None:
        """Record the embedding model of this index, or check it matches the recorded one.

        Raises:
            EmbeddingMismatchError: the index holds vectors of another model or dimension.
        """
        ...

    async def embedding(self) -> tuple[str, int] | None:
        """Return the ``(model_id, dimension)`` recorded for this index, if any."""
        ...

    async def upsert(
        self,
        collection: Collection,
        records: Sequence[IndexRecord],
        vectors: NDArray[np.float32] | None = None,
    ) -> None:
        """Insert or replace records (and their vectors, ``ndarray[n, d] float32``).

        Raises:
            ValueError: ``vectors`` has a row count other than ``len(records)``.
            EmbeddingModelError: the dimension differs from the bound one.
        """
        ...

    async def delete(self, collection: Collection, ids: Sequence[str]) -> int:
        """Delete records by id; return how many existed."""
        ...

    async def get(self, collection: Collection, ids: Sequence[str]) -> list[IndexRecord]:
        """Return the stored records with these ids, in the order of ``ids`` (missing skipped)."""
        ...

    async def existing_ids(self, collection: Collection, ids: Sequence[str]) -> set[str]:
        """Return the subset of ``ids`` stored with a vector."""
        ...

    async def vectors(
        self, collection: Collection, ids: Sequence[str]
    ) -> tuple[list[str], NDArray[np.float32]]:
        """Return the stored vectors of ``ids`` (to reuse them without embedding again).

        Returns:
            ``(found, matrix)``: ``found`` the ids among ``ids`` stored with a vector, in the
            order of ``ids`` (a repeated id repeats); ``matrix`` their vectors,
            ``ndarray[len(found), d] float32``, as stored (L2-normalised by `upsert`), row ``i``
            the vector of ``found[i]``. Missing ids and records without a vector are skipped;
            an empty result is ``([], ndarray[0, d])``, ``d`` the bound dimension (else that
            of the stored vectors, 0 when there are none).
        """
        ...

    async def ids(self, collection: Collection) -> list[str]:
        """Return the id of every record of ``collection``, sorted (for orphan sweeps)."""
        ...

    async def search(
        self,
        collection: Collection,
        *,
        query_text: str | None = None,
        query_vector: NDArray[np.float32] | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        filters: Filters | None = None,
        k: int = 10,
        candidate_k: int | None = None,
        lexical_weight: float = 1.0,
        vector_weight: float = 1.0,
        rrf_k: int = 60,
    ) -> list[SearchHit]:
        """Return the best ``k`` records.

        Args:
            collection: what to search.
            query_text: the text for BM25 (required for lexical and hybrid).
            query_vector: ``ndarray[d] float32`` (required for vector and hybrid).
            mode: lexical, vector, or both fused by weighted RRF.
            filters: equality filters on stored fields.
            k: number of hits returned.
            candidate_k: hits each list contributes to fusion (default ``max(k, 50)``).
            lexical_weight: RRF weight of the BM25 list.
            vector_weight: RRF weight of the vector list.
            rrf_k: RRF constant.

        Raises:
            ValueError: the mode's required query input is missing.
        """
        ...

    async def count(self, collection: Collection) -> int:
        """Return the number of records in ``collection``."""
        ...


@runtime_checkable
class PreparesVectorSearch(Protocol):
    """A search index whose vector search keeps an approximate index to build or catch up.

    Optional: callers check ``isinstance(search, PreparesVectorSearch)``. An indexing run calls
    it as its last step, so the first query after a large run does not pay for building the
    approximate index (SQLite's HNSW files: `adapters.sqlite.ann`).
    """

    async def prepare_vector_search(self) -> list[str]:
        """Build, catch up and save the approximate index of every collection past its threshold.

        Returns:
            The collections served by an approximate index afterwards.

        Raises:
            StoreError: a store step failed.
        """
        ...


class GraphStore(Protocol):
    """Entities, relationships, communities and reports of one index."""

    async def upsert_entities(self, entities: Sequence[Entity]) -> None:
        """Insert or replace entities by id."""
        ...

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> None:
        """Insert or replace relationships by id (endpoints need not exist yet)."""
        ...

    async def delete_entities(self, ids: Sequence[str]) -> int:
        """Delete entities and every relationship touching them; return entities deleted."""
        ...

    async def delete_relationships(self, ids: Sequence[str]) -> int:
        """Delete relationships by id; return how many existed."""
        ...

    async def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """Return the stored entities with these ids, in the order of ``ids``."""
        ...

    async def get_relationships(self, ids: Sequence[str]) -> list[Relationship]:
        """Return the stored relationships with these ids, in the order of ``ids``."""
        ...

    async def neighbourhood(
        self, seed_ids: Sequence[str], *, hops: int, max_entities: int
    ) -> Subgraph:
        """Return the entities within ``hops`` edges of the seeds (either direction).

        Breadth-first; seeds first, then nearer before farther, ties by higher relationship
        weight then id; stops adding entities at ``max_entities``. Relationships returned are
        those among the returned entities.
        """
        ...

    async def edges_within(self, entity_ids: Sequence[str]) -> list[Relationship]:
        """Return every relationship whose both endpoints are in ``entity_ids``."""
        ...

    async def citing(self, text_unit_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Return ``(entity_ids, relationship_ids)`` whose lineage cites any of these units."""
        ...

    async def upsert_communities(self, communities: Sequence[Community]) -> None:
        """Insert or replace communities by id."""
        ...

    async def get_communities(self, level: int | None = None) -> list[Community]:
        """Return communities (of one level when given), ordered by level then id."""
        ...

    async def communities_of(self, entity_ids: Sequence[str]) -> list[Community]:
        """Return the communities holding any of these entities (every level), by level, id."""
        ...

    async def delete_communities(self, ids: Sequence[str]) -> int:
        """Delete communities (and their reports) by id; return how many existed."""
        ...

    async def upsert_reports(self, reports: Sequence[CommunityReport]) -> None:
        """Insert or replace community reports by community id."""
        ...

    async def get_reports(self, community_ids: Sequence[str]) -> list[CommunityReport]:
        """Return the reports of these communities, in the order of ``community_ids``."""
        ...

    async def counts(self) -> dict[str, int]:
        """Return item counts: ``entities``, ``relationships``, ``communities``, ``reports``."""
        ...


class DocRegistry(Protocol):
    """The status of each document of one index, diffed by content hash."""

    async def get(self, document_ids: Sequence[str]) -> dict[str, DocRecord]:
        """Return the records of these documents that exist, keyed by id."""
        ...

    async def list_records(self, source_scope: str | None = None) -> list[DocRecord]:
        """Return every record (of one source scope when given), ordered by path."""
        ...

    async def diff(self, source_scope: str, current: Mapping[str, str]) -> DocumentDelta:
        """Diff a scope's documents against the registry.

        Args:
            source_scope: the scope whose stored records are compared.
            current: ``document_id -> content_hash`` of the documents found now.
        """
        ...

    async def put(self, records: Sequence[DocRecord]) -> None:
        """Insert or replace records by document id."""
        ...

    async def delete(self, document_ids: Sequence[str]) -> int:
        """Delete records; return how many existed."""
        ...

    async def status_counts(self) -> dict[str, int]:
        """Return the number of documents per status."""
        ...

    async def acquire_lease(self, holder: str, ttl_s: float) -> Lease:
        """Take or renew the index's single-writer lease for ``ttl_s`` seconds.

        Succeeds when no lease is held, the held one has lapsed, or ``holder`` holds it; the
        check and the write are one transaction, timed by the store's clock. It does not queue
        behind the holder's data writes, except on a store with one write lock for the whole
        file (SQLite), where it waits at most for one write transaction to commit.

        Raises:
            BuildInProgress: another holder's lease has not lapsed (names the holder).
            ValueError: ``ttl_s`` is not positive.
        """
        ...

    async def renew_lease(self, holder: str, ttl_s: float) -> Lease:
        """Extend ``holder``'s lease by ``ttl_s`` seconds from now (the heartbeat).

        Raises:
            LeaseLostError: ``holder`` no longer holds it (released, or taken after lapsing).
            ValueError: ``ttl_s`` is not positive.
        """
        ...

    async def release_lease(self, holder: str) -> bool:
        """Give the lease up if ``holder`` holds it; return whether it did."""
        ...

    async def get_lease(self) -> Lease | None:
        """Return the current lease (lapsed or not); None when none is held or it was released."""
        ...


class RecordStore(Protocol):
    """Key-value records in namespaces: LLM response cache, extraction records, checkpoints."""

    async def get(self, namespace: str, key: str) -> str | None:
        """Return the value stored under ``key``, or None."""
        ...

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, str]:
        """Return the values of the keys that exist."""
        ...

    async def put(self, namespace: str, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (replacing any earlier value)."""
        ...

    async def put_many(self, namespace: str, items: Mapping[str, str]) -> None:
        """Store several values in one transaction."""
        ...

    async def delete(self, namespace: str, keys: Sequence[str]) -> int:
        """Delete keys; return how many existed."""
        ...

    async def count(self, namespace: str) -> int:
        """Return the number of records in ``namespace``."""
        ...

    async def keys(self, namespace: str) -> list[str]:
        """Return every key of ``namespace``, sorted by code point (for orphan sweeps)."""
        ...


class AccessLog(Protocol):
    """Retrieval counts of one index's items (seed 002 "Access Count"), beside the index.

    Counts live in their own table: writing them never takes the index's write lease nor
    joins the write-ahead protocol, so queries record while an index job writes. Deleting an
    item from the search index (a deleted or changed document's text units, a stale entity or
    report) deletes its count in the same transaction.
    """

    async def increment(self, collection: Collection, counts: Mapping[str, int]) -> None:
        """Add ``counts[id]`` (≥ 1) to each id's count, atomically, in one transaction.

        Concurrent calls (other tasks, threads, processes) never lose an increment: each row
        is updated by ``INSERT … ON CONFLICT DO UPDATE SET n = n + excluded.n``.

        Raises:
            ValueError: a count is below 1.
            StoreConnectionError: the store is closed, locked past its busy timeout, or
                unreachable.
            StoreError: a statement failed.
        """
        ...

    async def counts(self, collection: Collection, ids: Sequence[str]) -> dict[str, int]:
        """Return the recorded count of each of ``ids`` that has one (one batched read).

        Ids never recorded (or whose item was deleted) are absent: read them as 0.
        """
        ...

    async def totals(self) -> dict[str, int]:
        """Return the total recorded per collection (collections with none are absent)."""
        ...

    async def reset(self) -> int:
        """Delete every count of the index; return how many items had one."""
        ...


class StoreBackend(Protocol):
    """Opens the store ports of named indexes on one backend (a SQLite file, a database)."""

    @property
    def location(self) -> str:
        """Where the data lives (a file path, or a URL with the password masked)."""
        ...

    def search_index(self, index: str) -> SearchIndex:
        """Return the search index of ``index``."""
        ...

    def graph_store(self, index: str) -> GraphStore:
        """Return the graph store of ``index``."""
        ...

    def doc_registry(self, index: str) -> DocRegistry:
        """Return the doc registry of ``index``."""
        ...

    def record_store(self, scope: str) -> RecordStore:
        """Return the record store of ``scope`` (an index name, or ``_shared``)."""
        ...

    def access_log(self, index: str) -> AccessLog:
        """Return the retrieval counts of ``index`` (`AccessLog`)."""
        ...

    async def list_indexes(self) -> list[str]:
        """Return the names of the indexes holding any document, sorted."""
        ...

    async def aclose(self) -> None:
        """Release connections and threads. Idempotent."""
        ...


@dataclass(frozen=True)
class IndexStores:
    """The store ports of one index (namespace), opened on one `StoreBackend`."""

    name: str
    search: SearchIndex
    graph: GraphStore
    registry: DocRegistry
    records: RecordStore


class ProgressReporter(Protocol):
    """Receives progress events from long work; the CLI draws them, the library ignores them."""

    def start(self, task: str, total: int | None) -> None:
        """A task with ``total`` steps (unknown when None) starts.

        Called again for a running task, it sets the task's total (more work was found, e.g.
        the text units of the next batch of documents) and keeps the steps already done.
        """
        ...

    def advance(self, task: str, steps: int = 1, *, note: str | None = None) -> None:
        """``steps`` more steps of ``task`` are done."""
        ...

    def finish(self, task: str) -> None:
        """``task`` is done."""
        ...

    def warn(self, message: str) -> None:
        """Report a problem that does not stop the work (a document that failed)."""
        ...
