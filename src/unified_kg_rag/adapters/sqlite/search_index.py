"""`SearchIndex` on SQLite: FTS5 BM25, exact cosine kNN, and both fused by weighted RRF.

Records live in ``search_records`` (one row per index, collection and id; the vector as a
float32 BLOB). Their lexical terms (`domain.text.analysis.lexical_terms`, which turns CJK runs into
bigrams) live in the FTS5 table ``search_fts`` under the record's ``pk``, prefixed with the
number of their (index, collection) namespace, and BM25 is scored with that namespace's
statistics only (`lexical`): records of another collection or index never change a ranking.
Vector search is exact up to ``stores.sqlite.ann.exact_search_max_vectors`` records: one
product of the query with the cached matrix of the collection (`VectorCache`). Larger
collections are served by an HNSW index kept in step with the rows through a change log
(``ann.py``, ``ann_sync.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.adapters.search_common import (
    checked_vectors,
    fuse,
    normalised,
    plan_search,
    ranked_hits,
    stacked_vectors,
)
from unified_kg_rag.adapters.sqlite.ann import AnnIndexes, Step, exact_filtered
from unified_kg_rag.adapters.sqlite.ann_sync import ensure_current
from unified_kg_rag.adapters.sqlite.database import SqliteDatabase
from unified_kg_rag.adapters.sqlite.filters import filter_clause
from unified_kg_rag.adapters.sqlite.lexical import (
    bm25_search,
    index_records,
    namespace,
    namespace_number,
    unindex_records,
)
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchHit, SearchMode
from unified_kg_rag.domain.text.analysis import lexical_query_terms
from unified_kg_rag.ports import Filters
from unified_kg_rag.util.errors import EmbeddingMismatchError

__all__ = ["SqliteSearchIndex"]

_IDS = "(SELECT value FROM json_each(?))"


class SqliteSearchIndex:
    """The search index of one index name in a SQLite file.

    Args:
        db: the database of the backend.
        index: the index name every call is bound to.
        ann: the HNSW indexes of the file (shared by the backend's views); None: every
            vector search is exact.
    """

    def __init__(self, db: SqliteDatabase, index: str, ann: AnnIndexes | None = None) -> None:
        self._db = db
        self._index = index
        self._ann = ann

    # ----------------------------------------------------------------- embedding model

    async def bind_embedding(self, model_id: str, dimension: int) -> None:
        """Record the embedding model of this index, or check it matches the recorded one.

        A bound index that holds no vector may be re-bound to another model.

        Raises:
            EmbeddingMismatchError: the index holds vectors of another model or dimension.
        """

        def job(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT model_id, dimension FROM index_embeddings WHERE index_name = ?",
                (self._index,),
            ).fetchone()
            if row is not None and (row[0], row[1]) == (model_id, dimension):
                return
            stored_dim = self._stored_dimension(conn)
            if stored_dim is not None and (row is not None or stored_dim != dimension):
                built = f"{row[0]!r} (dimension {row[1]})" if row else f"dimension {stored_dim}"
                raise EmbeddingMismatchError(
                    f"index {self._index!r} was built with embedding model {built}; the "
                    f"configured model is {model_id!r} (dimension {dimension}). Configure the "
                    f"original model, or index into a new index (`ukr index PATH --index NAME`)"
                )
            conn.execute(
                "INSERT INTO index_embeddings (index_name, model_id, dimension) VALUES (?, ?, ?) "
                "ON CONFLICT (index_name) DO UPDATE SET model_id = excluded.model_id, "
                "dimension = excluded.dimension",
                (self._index, model_id, dimension),
            )

        await self._db.write(job)

    async def embedding(self) -> tuple[str, int] | None:
        """Return the ``(model_id, dimension)`` recorded for this index, if any."""

        def job(conn: sqlite3.Connection) -> tuple[str, int] | None:
            row = conn.execute(
                "SELECT model_id, dimension FROM index_embeddings WHERE index_name = ?",
                (self._index,),
            ).fetchone()
            return None if row is None else (str(row[0]), int(row[1]))

        return await self._db.read(job)

    def _stored_dimension(self, conn: sqlite3.Connection) -> int | None:
        row = conn.execute(
            "SELECT length(vector) / 4 FROM search_records "
            "WHERE index_name = ? AND vector IS NOT NULL LIMIT 1",
            (self._index,),
        ).fetchone()
        return None if row is None else int(row[0])

    # ----------------------------------------------------------------- records

    async def upsert(
        self,
        collection: Collection,
        records: Sequence[IndexRecord],
        vectors: NDArray[np.float32] | None = None,
    ) -> None:
        """Insert or replace records with their vectors (float32 ``[n, d]``, L2-normalised here).

        A replaced record keeps nothing of the old one: upserted without vectors, it has none.

        Raises:
            ValueError: ``vectors`` is not 2-D, has a row count other than ``len(records)``, or
                holds NaN or infinite values.
            EmbeddingMismatchError: the dimension differs from the bound (or stored) one.
        """
        matrix = checked_vectors(len(records), vectors)
        if not records:
            return

        def job(conn: sqlite3.Connection) -> None:
            if matrix is not None:
                self._check_dimension(conn, int(matrix.shape[1]))
            ns = namespace_number(conn, self._index, collection.value)
            written: list[tuple[int, str]] = []
            for i, record in enumerate(records):
                blob = None if matrix is None else matrix[i].tobytes()
                pk = conn.execute(
                    "INSERT INTO search_records (index_name, collection, id, text, fields, vector)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (index_name, collection, id) DO UPDATE"
                    " SET text = excluded.text, fields = excluded.fields, vector = excluded.vector"
                    " RETURNING pk",
                    (self._index, collection.value, record.id, record.text,
                     json.dumps(record.fields), blob),
                ).fetchone()[0]
                written.append((int(pk), record.text))
            unindex_records(conn, ns, [pk for pk, _ in written])
            index_records(conn, ns, written)
            self._invalidate(collection)

        await self._db.write(job)

    def _invalidate(self, collection: Collection) -> None:
        self._db.vectors.invalidate(self._index, collection.value)
        if self._ann is not None:
            self._ann.invalidate(self._index, collection.value)

    def _check_dimension(self, conn: sqlite3.Connection, dimension: int) -> None:
        row = conn.execute(
            "SELECT model_id, dimension FROM index_embeddings WHERE index_name = ?",
            (self._index,),
        ).fetchone()
        expected = int(row[1]) if row is not None else self._stored_dimension(conn)
        if expected is not None and expected != dimension:
            model = f" (model {row[0]!r})" if row is not None else ""
            raise EmbeddingMismatchError(
                f"index {self._index!r} holds vectors of dimension {expected}{model}; got "
                f"vectors of dimension {dimension}. Index into a new index instead "
                "(`ukr index PATH --index NAME`)"
            )

    async def delete(self, collection: Collection, ids: Sequence[str]) -> int:
        """Delete records by id; return how many existed."""

        def job(conn: sqlite3.Connection) -> int:
            pks = [row[0] for row in conn.execute(
                f"SELECT pk FROM search_records WHERE index_name = ? AND collection = ? "
                f"AND id IN {_IDS}",
                (self._index, collection.value, json.dumps(list(ids))),
            )]
            if pks:
                space = namespace(conn, self._index, collection.value)
                if space is not None:
                    unindex_records(conn, space.ns, pks)
                conn.execute(f"DELETE FROM search_records WHERE pk IN {_IDS}", (json.dumps(pks),))
                self._invalidate(collection)
            return len(pks)

        return await self._db.write(job)

    async def get(self, collection: Collection, ids: Sequence[str]) -> list[IndexRecord]:
        """Return the stored records with these ids, in the order of ``ids`` (missing skipped)."""
        found = await self._db.read(lambda conn: self._hydrate(conn, collection, ids))
        return [found[i] for i in ids if i in found]

    async def existing_ids(self, collection: Collection, ids: Sequence[str]) -> set[str]:
        """Return the subset of ``ids`` stored with a vector."""

        def job(conn: sqlite3.Connection) -> set[str]:
            return {row[0] for row in conn.execute(
                f"SELECT id FROM search_records WHERE index_name = ? AND collection = ? "
                f"AND vector IS NOT NULL AND id IN {_IDS}",
                (self._index, collection.value, json.dumps(list(ids))),
            )}

        return await self._db.read(job)

    async def vectors(
        self, collection: Collection, ids: Sequence[str]
    ) -> tuple[list[str], NDArray[np.float32]]:
        """Return the stored vectors of ``ids`` (see `SearchIndex.vectors`).

        One query however many ids (they travel as one JSON array, so SQLite's bound-variable
        limit does not apply); the float32 BLOBs are decoded as `VectorCache` does.

        Raises:
            StoreError: a stored vector has another dimension than the index's.
        """

        def job(conn: sqlite3.Connection) -> tuple[dict[str, NDArray[np.float32]], int]:
            found = {row[0]: np.frombuffer(row[1], dtype=np.float32) for row in conn.execute(
                f"SELECT id, vector FROM search_records WHERE index_name = ? AND collection = ? "
                f"AND vector IS NOT NULL AND id IN {_IDS}",
                (self._index, collection.value, json.dumps(list(dict.fromkeys(ids)))),
            )}
            bound = conn.execute(
                "SELECT dimension FROM index_embeddings WHERE index_name = ?", (self._index,),
            ).fetchone()
            dim = int(bound[0]) if bound is not None else self._stored_dimension(conn)
            return found, dim or 0

        found, dim = await self._db.read(job)
        return stacked_vectors(ids, found, dim)

    async def ids(self, collection: Collection) -> list[str]:
        """Return the id of every record of ``collection``, sorted (for orphan sweeps)."""

        def job(conn: sqlite3.Connection) -> list[str]:
            return [row[0] for row in conn.execute(
                "SELECT id FROM search_records WHERE index_name = ? AND collection = ? "
                "ORDER BY id",
                (self._index, collection.value),
            )]

        return await self._db.read(job)

    async def prepare_vector_search(self) -> list[str]:
        """Build, catch up and save the HNSW index of every collection past the threshold.

        Implements `ports.PreparesVectorSearch` (an indexing run's last step), so the first
        query after a large run does not build the index. Collections at or below
        ``stores.sqlite.ann.exact_search_max_vectors`` stay exact and cost one count each.

        Returns:
            The collections served by an HNSW index afterwards (none with ANN off).

        Raises:
            StoreConnectionError, StoreError: a database step failed.
        """
        if self._ann is None or not self._ann.available():
            return []
        served: list[str] = []
        for collection in Collection:
            await ensure_current(self._db, self._ann, self._index, collection.value,
                                 index_run=True)
            if self._ann.state(self._index, collection.value) is not None:
                served.append(collection.value)
        return served

    async def count(self, collection: Collection) -> int:
        """Return the number of records in ``collection``."""

        def job(conn: sqlite3.Connection) -> int:
            return int(conn.execute(
                "SELECT COUNT(*) FROM search_records WHERE index_name = ? AND collection = ?",
                (self._index, collection.value),
            ).fetchone()[0])

        return await self._db.read(job)

    def _hydrate(
        self, conn: sqlite3.Connection, collection: Collection, ids: Sequence[str]
    ) -> dict[str, IndexRecord]:
        rows = conn.execute(
            f"SELECT id, text, fields FROM search_records WHERE index_name = ? "
            f"AND collection = ? AND id IN {_IDS}",
            (self._index, collection.value, json.dumps(list(ids))),
        )
        return {r[0]: IndexRecord(id=r[0], text=r[1], fields=json.loads(r[2])) for r in rows}

    # ----------------------------------------------------------------- search

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
        """Return the best ``k`` records (see `SearchIndex.search`).

        Scores: ``-bm25`` (lexical), cosine (vector), the weighted RRF sum (hybrid).

        Raises:
            ValueError: the mode's query input is missing, ``k`` < 1, or a filter is malformed.
            EmbeddingMismatchError: ``query_vector`` has another dimension than the stored
                vectors.
        """
        plan = plan_search(mode, query_text, query_vector, k, candidate_k)
        where, params = filter_clause(filters, "r.fields")
        limit = plan.limit
        text = query_text if plan.use_text and query_text is not None else ""
        query = None
        if plan.use_vector and query_vector is not None:
            query = np.asarray(query_vector, dtype=np.float32)

        steps: list[Step] = []  # what the HNSW index asked for, in the query's snapshot

        def job(conn: sqlite3.Connection, defer_build: bool) -> list[SearchHit] | None:
            vector: list[tuple[str, float]] = []
            if query is not None:
                found = self._vector(conn, collection, query, where, params, limit, steps,
                                     defer_build)  # fmt: skip
                if found is None:
                    return None  # the HNSW index is built first, then the query runs again
                vector = found
            lexical = self._lexical(conn, collection, text, where, params, limit)
            if plan.mode is SearchMode.LEXICAL:
                ranked = lexical
            elif plan.mode is SearchMode.VECTOR:
                ranked = vector
            else:
                ranked = fuse(lexical, vector, k=k, lexical_weight=lexical_weight,
                              vector_weight=vector_weight, rrf_k=rrf_k)
            records = self._hydrate(conn, collection, [i for i, _ in ranked])
            return ranked_hits(ranked, lexical, vector, records)

        # the write steps (build, save) run only when the query's own look asked for them, so
        # a served collection is inspected once per query
        hits = await self._db.read(lambda conn: job(conn, True))
        if self._ann is not None and steps and steps[-1] in (Step.BUILD, Step.SAVE):
            await ensure_current(self._db, self._ann, self._index, collection.value)
        if hits is None:  # without defer_build the job always answers (never None)
            hits = await self._db.read(lambda conn: job(conn, False)) or []
        return hits

    def _lexical(
        self, conn: sqlite3.Connection, collection: Collection, text: str,
        where: str, params: list[object], limit: int,
    ) -> list[tuple[str, float]]:
        terms = lexical_query_terms(text)
        space = namespace(conn, self._index, collection.value) if terms else None
        if space is None:
            return []
        return bm25_search(conn, space, terms, where, params, limit)

    def _vector(
        self, conn: sqlite3.Connection, collection: Collection, query: NDArray[np.float32],
        where: str, params: list[object], limit: int, steps: list[Step], defer_build: bool,
    ) -> list[tuple[str, float]] | None:
        """The vector hits (HNSW or exact); None when ``defer_build`` and the index is due."""
        served = self._ann_vector(conn, collection, query, where, params, limit, steps)
        if served is not None:
            return served
        if defer_build and steps and steps[-1] is Step.BUILD:
            return None
        cached = self._db.vectors.load(conn, self._index, collection.value)
        if not cached.ids:
            return []
        if query.shape != (cached.matrix.shape[1],):
            raise EmbeddingMismatchError(
                f"query vector has shape {list(query.shape)}; index {self._index!r} holds "
                f"vectors of dimension {cached.matrix.shape[1]}"
            )
        allowed = None
        if where:
            allowed = {row[0] for row in conn.execute(
                "SELECT r.id FROM search_records AS r WHERE r.index_name = ? AND "
                f"r.collection = ? AND r.vector IS NOT NULL{where}",
                (self._index, collection.value, *params),
            )}
        return cached.nearest(normalised(query), limit, allowed)

    def _ann_vector(
        self, conn: sqlite3.Connection, collection: Collection, query: NDArray[np.float32],
        where: str, params: list[object], limit: int, steps: list[Step],
    ) -> list[tuple[str, float]] | None:
        """The hits of the HNSW index (None: the collection is served exactly).

        Appends what `AnnIndexes.inspect` asked for to ``steps``: the caller runs the write
        steps (`ensure_current`) after the query's read.
        """
        if self._ann is None:
            return None
        key = (self._index, collection.value)
        step = self._ann.inspect(conn, *key)
        steps.append(step)
        if step not in (Step.READY, Step.SAVE):
            return None
        state = self._ann.state(*key)
        if state is None:
            return None
        if query.shape != (int(state.index.ndim),):
            raise EmbeddingMismatchError(
                f"query vector has shape {list(query.shape)}; index {self._index!r} holds "
                f"vectors of dimension {state.index.ndim}"
            )
        unit = normalised(query)
        hits = self._ann.nearest(conn, key, unit, limit, where, params) if unit.any() else None
        if hits is None:  # a filter left too few candidates, or a zero query
            hits = exact_filtered(conn, key, unit, limit, where, params)
        return hits
