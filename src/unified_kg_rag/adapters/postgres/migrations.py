"""The PostgreSQL schema: a catalog schema plus one schema per index, each versioned.

Layout (why a schema per index rather than a tenant column): an index's vectors have one
dimension, and pgvector's HNSW index needs a typed ``vector(d)`` column, so two indexes built
with different embedding models cannot share one indexed column; a schema per index also keeps
each index's HNSW graph, GIN posting lists and BM25 statistics its own (a query on a small
index never walks a large one's graph, and one index's deletion never leaves another's
statistics stale), lets an operator drop or dump one index with ``DROP SCHEMA``/``pg_dump -n``,
and makes isolation a property of the catalog rather than of every ``WHERE`` clause.

The catalog schema (``stores.postgres.schema_name``, default ``ukr``) holds the list of indexes
and their schemas, the records of scopes that are not indexes (``_shared``: the LLM response
cache) and its own migration ledger. Each index schema holds every store table of that index
and its own ledger.

Migrations are append-only, named, and applied at start-up inside one transaction under a
transaction-scoped advisory lock, so concurrent processes migrate once. A ledger naming a
migration this code does not know was written by newer code: `StoreSchemaError`, nothing
touched. Text keys use the ``"C"`` collation so ``ORDER BY id`` is code-point order, as in the
SQLite store, whatever the database's locale.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATALOG_MIGRATIONS", "INDEX_MIGRATIONS", "PgMigration"]


@dataclass(frozen=True)
class PgMigration:
    """One named schema change.

    Attributes:
        name: unique, stable name recorded in the schema's ``schema_migrations`` ledger.
        statements: SQL run in order with ``search_path`` set to the target schema (so table
            names are unqualified); ``{schema}`` is replaced by the quoted schema name.
    """

    name: str
    statements: tuple[str, ...]


_KEY = 'text COLLATE "C" NOT NULL'

CATALOG_MIGRATIONS: tuple[PgMigration, ...] = (
    PgMigration(
        "0001_catalog",
        (
            f"""CREATE TABLE indexes (
                name {_KEY} PRIMARY KEY,
                schema_name {_KEY} UNIQUE,
                created_at timestamptz NOT NULL DEFAULT now()
            )""",
            f"""CREATE TABLE records (
                scope {_KEY}, namespace {_KEY}, key {_KEY}, value bytea NOT NULL,
                PRIMARY KEY (scope, namespace, key)
            )""",
        ),
    ),
)

INDEX_MIGRATIONS: tuple[PgMigration, ...] = (
    PgMigration(
        "0001_initial",
        (
            # --- search index. ``embedding`` is retyped to vector(d) when the index's dimension
            # is first known; its HNSW indexes (one partial index per collection) are created
            # then (see search_index.py). ``lexemes`` holds the lexical terms with positions
            # (GIN for matching); ``term_freqs``/``n_terms`` feed BM25.
            f"""CREATE TABLE search_records (
                collection {_KEY}, id {_KEY},
                text text NOT NULL,
                fields jsonb NOT NULL DEFAULT '{{}}',
                embedding vector,
                lexemes tsvector NOT NULL,
                term_freqs jsonb NOT NULL,
                n_terms integer NOT NULL,
                PRIMARY KEY (collection, id)
            )""",
            "CREATE INDEX search_records_lexemes ON search_records USING gin (lexemes)",
            "CREATE INDEX search_records_fields ON search_records "
            "USING gin (fields jsonb_path_ops)",
            f"""CREATE TABLE lexical_stats (
                collection {_KEY}, term {_KEY}, df bigint NOT NULL,
                PRIMARY KEY (collection, term)
            )""",
            f"""CREATE TABLE collection_stats (
                collection {_KEY} PRIMARY KEY,
                n_docs bigint NOT NULL, total_terms bigint NOT NULL
            )""",
            # settings an index is built with and must keep (text_search_config)
            f"CREATE TABLE index_settings (key {_KEY} PRIMARY KEY, value text NOT NULL)",
            """CREATE TABLE embedding_binding (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                model_id text NOT NULL, dimension integer NOT NULL
            )""",
            # --- graph
            f"CREATE TABLE entities (id {_KEY} PRIMARY KEY, data text NOT NULL)",
            f"""CREATE TABLE relationships (
                id {_KEY} PRIMARY KEY, source_id {_KEY}, target_id {_KEY},
                weight double precision NOT NULL, data text NOT NULL
            )""",
            "CREATE INDEX relationships_source ON relationships (source_id)",
            "CREATE INDEX relationships_target ON relationships (target_id)",
            f"""CREATE TABLE communities (
                id {_KEY} PRIMARY KEY, level integer NOT NULL, data text NOT NULL
            )""",
            "CREATE INDEX communities_level ON communities (level, id)",
            f"CREATE TABLE reports (community_id {_KEY} PRIMARY KEY, data text NOT NULL)",
            f"""CREATE TABLE lineage (
                item_kind {_KEY}, item_id {_KEY}, text_unit_id {_KEY},
                PRIMARY KEY (item_kind, item_id, text_unit_id)
            )""",
            "CREATE INDEX lineage_text_unit ON lineage (text_unit_id)",
            # --- doc registry
            f"""CREATE TABLE doc_records (
                document_id {_KEY} PRIMARY KEY, source_scope {_KEY}, path {_KEY},
                status {_KEY}, data text NOT NULL
            )""",
            "CREATE INDEX doc_records_path ON doc_records (path, document_id)",
            "CREATE INDEX doc_records_scope ON doc_records (source_scope, path, document_id)",
            # single-writer lease: one row, locked FOR UPDATE by lease calls only
            f"""CREATE TABLE lease (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                holder {_KEY}, acquired_at double precision NOT NULL,
                expires_at double precision NOT NULL
            )""",
            # --- record store (scopes that are this index)
            f"""CREATE TABLE records (
                namespace {_KEY}, key {_KEY}, value bytea NOT NULL,
                PRIMARY KEY (namespace, key)
            )""",
        ),
    ),
    # Documents may be recorded ``quarantined`` (with a ``failure_count`` in their JSON): the
    # status index serves `ukr status`; recording the migration makes an older version
    # refuse the schema (StoreSchemaError) instead of failing on a status it does not know.
    PgMigration(
        "0002_doc_status_quarantined",
        ("CREATE INDEX doc_records_status ON doc_records (status)",),
    ),
    # Retrieval counts (`AccessLog`, seed 002 "Access Count"), beside the index: written by a
    # query's background recorder without the index's write lock. Deleting search records
    # deletes their counts in the same statement (an upsert updates in place: no delete).
    PgMigration(
        "0003_access_counts",
        (
            f"""CREATE TABLE access_counts (
                collection {_KEY}, item_id {_KEY}, n bigint NOT NULL,
                PRIMARY KEY (collection, item_id)
            )""",
            """CREATE FUNCTION {schema}.forget_access_counts() RETURNS trigger
            LANGUAGE plpgsql AS $body$
            BEGIN
                DELETE FROM {schema}.access_counts a USING gone g
                WHERE a.collection = g.collection AND a.item_id = g.id;
                RETURN NULL;
            END
            $body$""",
            """CREATE TRIGGER search_records_forget_access AFTER DELETE ON search_records
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
            EXECUTE FUNCTION {schema}.forget_access_counts()""",
        ),
    ),
)
