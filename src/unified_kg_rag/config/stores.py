"""Configuration of the storage backends: SQLite (default) and PostgreSQL + pgvector.

The ``stores`` section of `UkrConfig` (re-exported by `config.models`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

__all__ = ["PostgresConfig", "SqliteAnnConfig", "SqliteConfig", "StoresConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class SqliteAnnConfig(_Section):
    """The approximate (HNSW) vector index of large SQLite collections (`usearch`).

    A collection with more than ``exact_search_max_vectors`` records is searched through an
    HNSW graph kept in a file beside the database (``<db dir>/ann/``) and updated from a
    change log written in the same transaction as the records, so it never drifts from them
    (see docs/guides/scale.md). Smaller collections, and every collection when the
    `ann` extra (`usearch`) is not installed, are searched exactly. Give every process of a
    project (`ukr index`, queries, `ukr serve`) the same settings: a query process whose
    settings say "exact" searches exactly and leaves an existing index alone.
    """

    enabled: bool = Field(
        default=True,
        description="Serve collections above `exact_search_max_vectors` through the HNSW "
        "index. Off: every vector search is exact (a matrix of the whole collection in memory, "
        "1.5 GB per million 384-d vectors, re-read after every write).",
    )
    exact_search_max_vectors: int = Field(
        default=100_000,
        ge=0,
        description="Collections with at most this many records are searched exactly (one "
        "matrix product; measured 48-107 ms per query at 200,000 384-d vectors on 2 loaded "
        "cores). Above it the HNSW index answers. A collection that shrinks to half of it or "
        "below goes back to exact search; only `ukr index` (or a service index job) drops its "
        "index files, with a warning. Use the same value in every process of the project.",
    )
    connectivity: int = Field(
        default=16,
        ge=4,
        le=64,
        description="HNSW graph degree (usearch `connectivity`, pgvector `m`). Higher: better "
        "recall, larger file, slower build.",
    )
    expansion_add: int = Field(
        default=64,
        ge=8,
        le=1000,
        description="HNSW build-time candidate list size (usearch `expansion_add`, pgvector "
        "`ef_construction`).",
    )
    expansion_search: int = Field(
        default=256,
        ge=8,
        le=2000,
        description="HNSW query-time candidate list size (usearch `expansion_search`, raised to "
        "the number of candidates asked for). Higher: better recall, slower queries. Measured "
        "on clustered 384-d vectors, 2 cores: 128 gives recall@10 0.994 at 200,000 and 0.913 "
        "at 1,000,000; 256 gives 0.995 (2.7 ms) and 0.952 (3.5 ms).",
    )
    dtype: Literal["f32", "f16", "i8"] = Field(
        default="f16",
        description="How the index stores vectors: `f32`, `f16` (half the memory of `f32`, "
        "same recall on embeddings) or `i8` (a quarter; lower recall). Candidates are re-scored "
        "with the stored float32 vectors either way, so scores are exact cosines.",
    )
    oversample: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Candidates fetched from the HNSW index per hit asked for, re-scored "
        "exactly. A query with a metadata filter fetches 8 times as many and falls back to an "
        "exact scan of the allowed rows when fewer than the hits asked for pass the filter.",
    )


class SqliteConfig(_Section):
    """The embedded SQLite store (one file per project)."""

    path: str = Field(
        default=".ukr/ukr.db", description="Database file, relative to the project directory."
    )
    busy_timeout_s: float = Field(
        default=30.0, gt=0, description="How long a write waits for another writer, seconds."
    )
    ann: SqliteAnnConfig = Field(
        default_factory=SqliteAnnConfig,
        description="Approximate (HNSW) vector search of collections past "
        "`exact_search_max_vectors` records (install the `ann` extra).",
    )


class PostgresConfig(_Section):
    """A PostgreSQL server with the pgvector extension (managed or your own)."""

    url: SecretStr | None = Field(
        default=None,
        description="libpq connection URL, e.g. `postgresql://ukr:PASSWORD@db.example.com:5432/ukr"
        "?sslmode=require`. Prefer the environment variable `UKR_STORES__POSTGRES__URL` to "
        "keep the password out of the file. Required when `stores.kind` is `postgres`.",
    )
    schema_name: str = Field(
        default="ukr",
        pattern=r"^[a-z_][a-z0-9_]{0,30}$",
        description="Catalog schema (index list, shared records, schema version). Each index "
        "gets its own schema named `<schema_name>_<index>_<hash>`.",
    )
    pool_min_size: int = Field(default=1, ge=0, description="Connections kept open.")
    pool_max_size: int = Field(
        default=8, ge=1, description="Most connections open at once (per process)."
    )
    connect_timeout_s: float = Field(
        default=10.0, gt=0, description="How long to wait for a connection, seconds."
    )
    statement_timeout_s: float = Field(
        default=60.0,
        ge=0,
        description="Longest a statement may run before the server cancels it, seconds (0: no "
        "limit). A cancelled statement raises a store error, never an empty result.",
    )
    exact_search_max_vectors: int = Field(
        default=5_000,
        ge=0,
        description="Collections with at most this many records are searched exactly (a scan: "
        "about 3 ms per 1,000 384-d vectors on 2 cores) instead of through the HNSW index, "
        "which is approximate and has blind spots: a collection holding many identical "
        "vectors (a boilerplate paragraph repeated in every file) can hide other records "
        "from it.",
    )
    lexical_ranking: Literal["bm25", "ts_rank_cd"] = Field(
        default="bm25",
        description="How lexical hits are ranked: `bm25` (Okapi BM25 from term statistics "
        "kept per collection; the same ranking as the SQLite store) or PostgreSQL's "
        "`ts_rank_cd` (cover density; no inverse document frequency).",
    )
    text_search_config: str = Field(
        default="simple",
        pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description="PostgreSQL text-search configuration applied to the lexical terms: "
        "`simple` keeps them as the SQLite store does; a language configuration (`english`, "
        "`german`, `french`, ...) stems them. Chinese, Japanese and Korean are indexed as "
        "character bigrams either way. Changing it needs a new index.",
    )
    hnsw_m: int = Field(
        default=16, ge=2, le=100, description="HNSW graph degree (pgvector `m`)."
    )
    hnsw_ef_construction: int = Field(
        default=64, ge=4, le=1000, description="HNSW build-time candidate list size."
    )
    hnsw_ef_search: int = Field(
        default=200,
        ge=1,
        le=1000,
        description="HNSW query-time candidate list size (raised to the number of hits asked "
        "for). Higher: better recall, slower queries. Measured at 200,000 embedding-like "
        "384-d vectors on 2 cores: 100 gives recall@10 0.936 in 10 ms, 200 gives 0.983 in "
        "16 ms, 400 gives 0.997 in 30 ms.",
    )

    @model_validator(mode="after")
    def _pool_bounds(self) -> PostgresConfig:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        return self


class StoresConfig(_Section):
    """Where indexes live."""

    kind: str = Field(
        default="sqlite",
        description="Store backend: `sqlite` (one file in the project) or `postgres` "
        "(PostgreSQL + pgvector; install the `postgres` extra).",
    )
    sqlite: SqliteConfig = Field(
        default_factory=SqliteConfig, description="Settings of the `sqlite` backend."
    )
    postgres: PostgresConfig = Field(
        default_factory=PostgresConfig, description="Settings of the `postgres` backend."
    )
