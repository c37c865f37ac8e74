"""`SearchIndex` on PostgreSQL: BM25 over a GIN-indexed tsvector, HNSW kNN, weighted RRF.

Lexical: each record stores the terms of `domain.text.analysis.lexical_terms` (the analysis every
backend shares; CJK runs are character bigrams) as a ``tsvector`` with positions, written as
a literal (`lexical.tsvector_literal`) rather than by PostgreSQL's parser, so the SQLite and
PostgreSQL stores match the same terms.
With ``text_search_config`` set to a language configuration (``english``, ...), PostgreSQL
stems those terms instead. Matching uses the GIN index (``@@``). Ranking is Okapi BM25
(k1 = 1.2, b = 0.75, IDF floored at 1e-6: the formula of SQLite FTS5's ``bm25()``) from
per-collection statistics kept in ``lexical_stats``/``collection_stats`` and updated in the
same transaction as the records, or PostgreSQL's ``ts_rank_cd`` when configured.

Vector: ``embedding`` is a ``vector(d)`` column (typed once the dimension is known) with one
partial HNSW index (cosine) per collection, so a query walks only its collection's graph.
``hnsw.ef_search`` is raised to the number of hits asked for (pgvector returns at most
``ef_search`` rows). Small collections (``exact_search_max_vectors``), filtered queries,
requests for more than 1,000 hits and dimensions above pgvector's HNSW limit (2,000) use an
exact scan instead: HNSW is approximate, filters after its walk (missing matches of a
selective filter), and a graph built over many identical vectors can hide the other records.

Hybrid: both lists at once, on two pooled connections, fused and turned into hits by
`adapters.search_common` (the same code as the SQLite store).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from psycopg import sql
from psycopg.types.json import Jsonb

from unified_kg_rag.adapters.postgres.database import Conn, PgDatabase
from unified_kg_rag.adapters.postgres.filters import filter_clause, pg_text
from unified_kg_rag.adapters.postgres.lexical import (
    bm25_search,
    change_stats,
    count_stemmed_terms,
    indexable,
    ts_rank_cd_search,
    tsvector_literal,
)
from unified_kg_rag.adapters.search_common import (
    checked_vectors,
    fuse,
    normalised,
    plan_search,
    ranked_hits,
    stacked_vectors,
)
from unified_kg_rag.domain.models import (
    Collection,
    IndexRecord,
    MetadataValue,
    SearchHit,
    SearchMode,
)
from unified_kg_rag.domain.text.analysis import lexical_query_terms, lexical_terms
from unified_kg_rag.ports import Filters
from unified_kg_rag.util.errors import ConfigurationError, EmbeddingMismatchError

__all__ = ["PgSearchIndex"]

_HNSW_MAX_DIMENSION = 2000
_EF_SEARCH_MAX = 1000
def _fields(fields: Mapping[str, MetadataValue]) -> Jsonb:
    return Jsonb({pg_text(k): pg_text(v) if isinstance(v, str) else v for k, v in fields.items()})


class PgSearchIndex:
    """The search index of one index name on a PostgreSQL database.

    Args:
        db: the database of the backend.
        index: the index name every call is bound to.
    """

    def __init__(self, db: PgDatabase, index: str) -> None:
        self._db = db
        self._index = index
        self._ts_config = db.config.text_search_config
        self._stemmed = self._ts_config != "simple"

    # ----------------------------------------------------------------- embedding model

    async def bind_embedding(self, model_id: str, dimension: int) -> None:
        """Record the embedding model of this index, or check it matches the recorded one.

        A bound index that holds no vector may be re-bound to another model; the vector
        column is typed to ``dimension`` (and its HNSW indexes built) here.

        Raises:
            EmbeddingMismatchError: the index holds vectors of another model or dimension.
        """

        async def job(conn: Conn) -> None:
            row = await self._binding(conn)
            if row is not None and row == (model_id, dimension):
                return
            stored = await self._stored_dimension(conn)
            if stored is not None and (row is not None or stored != dimension):
                built = f"{row[0]!r} (dimension {row[1]})" if row else f"dimension {stored}"
                raise EmbeddingMismatchError(
                    f"index {self._index!r} was built with embedding model {built}; the "
                    f"configured model is {model_id!r} (dimension {dimension}). Configure the "
                    f"original model, or index into a new index (`ukr index PATH --index NAME`)"
                )
            await conn.execute(
                "INSERT INTO embedding_binding (model_id, dimension) VALUES (%s, %s) "
                "ON CONFLICT (singleton) DO UPDATE SET model_id = excluded.model_id, "
                "dimension = excluded.dimension",
                (model_id, dimension),
            )
            if stored is None:
                await self._type_vector_column(conn, dimension)

        await self._db.write_index(self._index, job)

    async def embedding(self) -> tuple[str, int] | None:
        """Return the ``(model_id, dimension)`` recorded for this index, if any."""
        return await self._db.read_index(self._index, self._binding, None)

    async def _binding(self, conn: Conn) -> tuple[str, int] | None:
        row = await (await conn.execute(
            "SELECT model_id, dimension FROM embedding_binding")).fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    async def _stored_dimension(self, conn: Conn) -> int | None:
        row = await (await conn.execute(
            "SELECT vector_dims(embedding) FROM search_records WHERE embedding IS NOT NULL "
            "LIMIT 1")).fetchone()
        return None if row is None else int(row[0])

    async def _column_dimension(self, conn: Conn) -> int | None:
        row = await (await conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'search_records'::regclass "
            "AND attname = 'embedding'")).fetchone()
        return None if row is None or int(row[0]) <= 0 else int(row[0])

    async def _type_vector_column(self, conn: Conn, dimension: int) -> None:
        """Type ``embedding`` as ``vector(dimension)`` and (re)build its HNSW indexes.

        Only called when the index holds no vector, so the ALTER rewrites nothing.
        """
        if await self._column_dimension(conn) == dimension:
            return
        config = self._db.config
        for collection in Collection:
            await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.Identifier(f"search_records_hnsw_{collection.value}")))
        await conn.execute(sql.SQL(
            "ALTER TABLE search_records ALTER COLUMN embedding TYPE vector({})"
        ).format(sql.Literal(dimension)))
        if dimension > _HNSW_MAX_DIMENSION:
            return  # pgvector cannot index it: kNN scans exactly
        for collection in Collection:
            await conn.execute(sql.SQL(
                "CREATE INDEX {name} ON search_records USING hnsw (embedding vector_cosine_ops) "
                "WITH (m = {m}, ef_construction = {ef}) WHERE collection = {c}"
            ).format(
                name=sql.Identifier(f"search_records_hnsw_{collection.value}"),
                m=sql.Literal(config.hnsw_m), ef=sql.Literal(config.hnsw_ef_construction),
                c=sql.Literal(collection.value),
            ))

    async def _check_dimension(self, conn: Conn, dimension: int) -> None:
        row = await self._binding(conn)
        stored = await self._stored_dimension(conn)
        expected = row[1] if row is not None else stored
        if expected is not None and expected != dimension:
            model = f" (model {row[0]!r})" if row is not None else ""
            raise EmbeddingMismatchError(
                f"index {self._index!r} holds vectors of dimension {expected}{model}; got "
                f"vectors of dimension {dimension}. Index into a new index instead "
                "(`ukr index PATH --index NAME`)"
            )
        if stored is None:
            await self._type_vector_column(conn, dimension)

    # ----------------------------------------------------------------- records

    async def upsert(
        self,
        collection: Collection,
        records: Sequence[IndexRecord],
        vectors: NDArray[np.float32] | None = None,
    ) -> None:
        """Insert or replace records with their vectors (float32 ``[n, d]``, L2-normalised here).

        A replaced record keeps nothing of the old one: upserted without vectors, it has none.
        BM25 statistics change in the same transaction. NUL characters, which PostgreSQL
        refuses, are stored as U+FFFD.

        Raises:
            ValueError: ``vectors`` is not 2-D, has a row count other than ``len(records)``, or
                holds NaN or infinite values.
            EmbeddingMismatchError: the dimension differs from the bound (or stored) one.
        """
        matrix = checked_vectors(len(records), vectors)
        if not records:
            return
        rows = [self._row(collection, record, None if matrix is None else matrix[i])
                for i, record in enumerate(records)]
        ids = list(dict.fromkeys(record.id for record in records))

        async def job(conn: Conn) -> None:
            if matrix is not None:
                await self._check_dimension(conn, int(matrix.shape[1]))
            await self._check_text_config(conn, record=True)
            await change_stats(conn, collection.value, ids, sign=-1)
            async with conn.cursor() as cur:
                await cur.executemany(self._upsert_sql(), rows)
            if self._stemmed:
                await count_stemmed_terms(conn, collection.value, ids)
            await change_stats(conn, collection.value, ids, sign=1)

        await self._db.write_index(self._index, job)

    def _row(
        self, collection: Collection, record: IndexRecord, vector: NDArray[np.float32] | None
    ) -> tuple[object, ...]:
        text = pg_text(record.text)
        terms = lexical_terms(text)
        if self._stemmed:
            lexemes: str = " ".join(t for t in terms if indexable(t))
            freqs: dict[str, int] = {}
            n_terms = 0
        else:
            lexemes, freqs, n_terms = tsvector_literal(terms)
        return (collection.value, pg_text(record.id), text, _fields(record.fields), vector,
                lexemes, Jsonb(freqs), n_terms)

    def _upsert_sql(self) -> sql.Composed:
        lexemes = (sql.SQL("to_tsvector({}::regconfig, %s)").format(sql.Literal(self._ts_config))
                   if self._stemmed else sql.SQL("%s::tsvector"))
        return sql.SQL(
            "INSERT INTO search_records (collection, id, text, fields, embedding, lexemes, "
            "term_freqs, n_terms) VALUES (%s, %s, %s, %s, %s, {lexemes}, %s, %s) "
            "ON CONFLICT (collection, id) DO UPDATE SET text = excluded.text, "
            "fields = excluded.fields, embedding = excluded.embedding, "
            "lexemes = excluded.lexemes, term_freqs = excluded.term_freqs, "
            "n_terms = excluded.n_terms"
        ).format(lexemes=lexemes)

    async def _check_text_config(self, conn: Conn, *, record: bool) -> bool:
        """Check the index was built with this ``text_search_config`` (record it on writes).

        Returns:
            False when the index has no lexical terms yet (nothing recorded, not writing).

        Raises:
            ConfigurationError: the index's terms were made with another configuration.
        """
        row = await (await conn.execute(
            "SELECT value FROM index_settings WHERE key = 'text_search_config'")).fetchone()
        if row is None:
            if record:
                await conn.execute(
                    "INSERT INTO index_settings (key, value) VALUES ('text_search_config', %s) "
                    "ON CONFLICT (key) DO NOTHING", (self._ts_config,))
            return record
        if row[0] != self._ts_config:
            raise ConfigurationError(
                f"index {self._index!r} was built with text_search_config {row[0]!r}, not "
                f"{self._ts_config!r}: its lexical terms would not match. Configure "
                f"{row[0]!r}, or index into a new index (`ukr index PATH --index NAME`)",
                field="stores.postgres.text_search_config",
            )
        return True

    async def delete(self, collection: Collection, ids: Sequence[str]) -> int:
        """Delete records by id; return how many existed."""
        wanted = [pg_text(i) for i in dict.fromkeys(ids)]
        if not wanted:
            return 0

        async def job(conn: Conn) -> int:
            await change_stats(conn, collection.value, wanted, sign=-1)
            cur = await conn.execute(
                "DELETE FROM search_records WHERE collection = %s AND id = ANY(%s)",
                (collection.value, wanted),
            )
            return cur.rowcount

        return await self._db.write_index(self._index, job, create=False, default=0)

    async def get(self, collection: Collection, ids: Sequence[str]) -> list[IndexRecord]:
        """Return the stored records with these ids, in the order of ``ids`` (missing skipped)."""
        empty: dict[str, IndexRecord] = {}
        stored = [pg_text(i) for i in ids]
        found = await self._db.read_index(
            self._index, lambda conn: self._hydrate(conn, collection, stored), empty
        )
        return [found[i] for i in stored if i in found]

    async def existing_ids(self, collection: Collection, ids: Sequence[str]) -> set[str]:
        """Return the subset of ``ids`` stored with a vector."""

        async def job(conn: Conn) -> set[str]:
            rows = await (await conn.execute(
                "SELECT id FROM search_records WHERE collection = %s AND id = ANY(%s) "
                "AND embedding IS NOT NULL",
                (collection.value, [pg_text(i) for i in ids]))).fetchall()
            return {str(r[0]) for r in rows}

        return await self._db.read_index(self._index, job, set())

    async def vectors(
        self, collection: Collection, ids: Sequence[str]
    ) -> tuple[list[str], NDArray[np.float32]]:
        """Return the stored vectors of ``ids`` (see `SearchIndex.vectors`); a binary read."""

        async def job(conn: Conn) -> tuple[dict[str, NDArray[np.float32]], int]:
            rows = await (await conn.execute(
                "SELECT id, embedding FROM search_records WHERE collection = %s AND id = ANY(%s)"
                " AND embedding IS NOT NULL", (collection.value, list({pg_text(i) for i in ids})),
                binary=True)).fetchall()
            bound = await self._binding(conn)
            dim = bound[1] if bound is not None else await self._stored_dimension(conn)
            return {str(r[0]): r[1].to_numpy() for r in rows}, dim or 0

        none: dict[str, NDArray[np.float32]] = {}
        got, dim = await self._db.read_index(self._index, job, (none, 0))
        return stacked_vectors(ids, {i: got[pg_text(i)] for i in ids if pg_text(i) in got}, dim)

    async def ids(self, collection: Collection) -> list[str]:
        """Return the id of every record of ``collection``, sorted (for orphan sweeps)."""

        async def job(conn: Conn) -> list[str]:
            rows = await (await conn.execute(
                "SELECT id FROM search_records WHERE collection = %s",
                (collection.value,))).fetchall()
            return sorted(str(r[0]) for r in rows)

        return await self._db.read_index(self._index, job, [])

    async def count(self, collection: Collection) -> int:
        """Return the number of records in ``collection``."""

        async def job(conn: Conn) -> int:
            row = await (await conn.execute(
                "SELECT count(*) FROM search_records WHERE collection = %s",
                (collection.value,))).fetchone()
            return int(row[0]) if row else 0

        return await self._db.read_index(self._index, job, 0)

    async def _hydrate(
        self, conn: Conn, collection: Collection, ids: Sequence[str]
    ) -> dict[str, IndexRecord]:
        rows = await (await conn.execute(
            "SELECT id, text, fields FROM search_records WHERE collection = %s AND id = ANY(%s)",
            (collection.value, list(ids)))).fetchall()
        return {str(r[0]): IndexRecord(id=r[0], text=r[1], fields=r[2]) for r in rows}

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

        Scores: BM25 (or ``ts_rank_cd``) for lexical, cosine for vector, the weighted RRF sum
        for hybrid.

        Raises:
            ValueError: the mode's query input is missing, ``k`` < 1, or a filter is malformed.
            EmbeddingMismatchError: ``query_vector`` has another dimension than the stored
                vectors.
        """
        plan = plan_search(mode, query_text, query_vector, k, candidate_k)
        where, params = filter_clause(filters, sql.SQL("r.fields"))
        limit = plan.limit
        terms = lexical_query_terms(pg_text(query_text or "")) if plan.use_text else []
        query = None
        if plan.use_vector and query_vector is not None:
            raw = np.asarray(query_vector, dtype=np.float32)
            if np.isfinite(raw).all() and np.any(raw):  # a zero vector is near nothing
                query = normalised(raw)

        async def lexical_job(conn: Conn) -> list[tuple[str, float]]:
            return await self._lexical(conn, collection, terms, where, params, limit)

        async def vector_job(conn: Conn) -> list[tuple[str, float]]:
            if query is None:
                return []
            return await self._vector(conn, collection, query, where, params, limit,
                                      filtered=bool(filters))

        if plan.mode is not SearchMode.HYBRID:
            async def single(conn: Conn) -> list[SearchHit]:
                lexical = await lexical_job(conn) if plan.use_text else []
                vector = await vector_job(conn) if plan.use_vector else []
                ranked = lexical if plan.use_text else vector
                records = await self._hydrate(conn, collection, [i for i, _ in ranked])
                return ranked_hits(ranked, lexical, vector, records)

            return await self._db.read_index(self._index, single, [])

        # hybrid: both lists at once on two connections, then one read of the fused hits
        none: list[tuple[str, float]] = []
        lexical, vector = await asyncio.gather(
            self._db.read_index(self._index, lexical_job, none),
            self._db.read_index(self._index, vector_job, none),
        )
        ranked = fuse(lexical, vector, k=k, lexical_weight=lexical_weight,
                      vector_weight=vector_weight, rrf_k=rrf_k)
        if not ranked:
            return []
        empty: dict[str, IndexRecord] = {}
        records = await self._db.read_index(
            self._index, lambda conn: self._hydrate(conn, collection, [i for i, _ in ranked]),
            empty)
        return ranked_hits(ranked, lexical, vector, records)

    async def _query_lexemes(self, conn: Conn, terms: list[str]) -> list[str]:
        if not self._stemmed or not terms:
            return [t for t in terms if indexable(t)]
        row = await (await conn.execute(
            sql.SQL("SELECT array_agg(l.lexeme ORDER BY l.lexeme) FROM unnest(to_tsvector("
                    "{}::regconfig, %s)) AS l").format(sql.Literal(self._ts_config)),
            (" ".join(terms),))).fetchone()
        return list(row[0]) if row and row[0] else []

    async def _lexical(
        self, conn: Conn, collection: Collection, terms: list[str],
        where: sql.Composable, params: list[object], limit: int,
    ) -> list[tuple[str, float]]:
        if not terms or not await self._check_text_config(conn, record=False):
            return []
        lexemes = await self._query_lexemes(conn, terms)
        if not lexemes:
            return []
        if self._db.config.lexical_ranking == "ts_rank_cd":
            return await ts_rank_cd_search(conn, collection.value, lexemes, where, params, limit)
        return await bm25_search(conn, collection.value, lexemes, where, params, limit)

    async def _vector(
        self, conn: Conn, collection: Collection, query: NDArray[np.float32],
        where: sql.Composable, params: list[object], limit: int, *, filtered: bool,
    ) -> list[tuple[str, float]]:
        config = self._db.config
        row = await (await conn.execute(  # the column's dimension and the collection's size
            "SELECT (SELECT atttypmod FROM pg_attribute WHERE attrelid = "
            "'search_records'::regclass AND attname = 'embedding'), "
            "(SELECT n_docs FROM collection_stats WHERE collection = %s)",
            (collection.value,))).fetchone()
        typmod, size = (row[0], row[1]) if row is not None else (None, None)
        stored = int(typmod) if typmod is not None and int(typmod) > 0 else None
        if stored is None:
            stored = await self._stored_dimension(conn)
            if stored is None:
                return []
        if query.shape != (stored,):
            if await self._stored_dimension(conn) is None:
                return []
            raise EmbeddingMismatchError(
                f"query vector has shape {list(query.shape)}; index {self._index!r} holds "
                f"vectors of dimension {stored}"
            )
        exact = (filtered or limit > _EF_SEARCH_MAX or stored > _HNSW_MAX_DIMENSION
                 or int(size or 0) <= config.exact_search_max_vectors)
        c = sql.Literal(collection.value)  # a literal, so the planner matches the partial index
        if exact:
            statement = sql.SQL(
                "WITH m AS MATERIALIZED (SELECT r.id, r.embedding <=> %s AS distance "
                "FROM search_records AS r WHERE r.collection = {c} "
                "AND r.embedding IS NOT NULL{where}) "
                "SELECT id, distance FROM m ORDER BY distance, id LIMIT %s"
            ).format(c=c, where=where)
            rows = await (await conn.execute(statement, [query, *params, limit])).fetchall()
        else:
            ef = max(config.hnsw_ef_search, limit)
            await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
            statement = sql.SQL(
                "SELECT r.id, r.embedding <=> %s AS distance FROM search_records AS r "
                "WHERE r.collection = {c} AND r.embedding IS NOT NULL "
                "ORDER BY r.embedding <=> %s LIMIT %s"
            ).format(c=c)
            rows = await (await conn.execute(statement, [query, query, limit])).fetchall()
        hits = [(str(r[0]), 1.0 - float(r[1])) for r in rows]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits

