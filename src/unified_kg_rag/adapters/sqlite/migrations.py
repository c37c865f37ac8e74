"""The SQLite schema, as an append-only list of named migrations.

Each migration runs once per database file, in list order, inside one transaction that also
records its name in ``schema_migrations``. Never edit or reorder a released migration: add a new
one at the end. A database that records a migration this code does not know was written by a
newer version and is refused (`StoreSchemaError`), so old code never writes a newer schema.

Every index-bound table carries an ``index_name`` column: one file holds many indexes.
Item tables keep the whole pydantic model as JSON in ``data`` plus the columns SQL queries on.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from unified_kg_rag.adapters.sqlite.lexical import rebuild_lexical_index
from unified_kg_rag.domain.text.analysis import lexical_text
from unified_kg_rag.util.errors import StoreSchemaError

__all__ = ["MIGRATIONS", "Migration", "apply_migrations"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Migration:
    """One named schema change.

    Attributes:
        name: unique, stable name recorded in ``schema_migrations`` (``0001_initial``).
        statements: SQL statements run in order, in one transaction.
        then: a Python step run after the statements, in the same transaction (for data that
            only the application can compute, such as lexical terms).
    """

    name: str
    statements: tuple[str, ...]
    then: Callable[[sqlite3.Connection], None] | None = None


# FTS5 indexes the terms of `domain.text.analysis.lexical_terms` exactly as given: letters, marks,
# numbers, apostrophes and dots are token characters, and nothing is folded again, so every
# backend ranks the same terms.
_EXACT_TERMS = (
    "tokenize = \"unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '''.'\""
)


# Namespaced terms ("3:river") are split at spaces only: every non-ASCII character and the
# ASCII ' . : are token characters, and the terms hold no ASCII capital to fold.
_PREFIXED_TERMS = "tokenize = \"ascii tokenchars '''.:'\""


def _refill_fts(conn: sqlite3.Connection) -> None:
    rows = conn.execute("SELECT pk, text FROM search_records").fetchall()
    conn.executemany(
        "INSERT INTO search_fts (rowid, terms) VALUES (?, ?)",
        [(pk, lexical_text(text)) for pk, text in rows],
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_initial",
        (
            # --- search index: records, their lexical terms (FTS5) and the embedding binding
            """CREATE TABLE search_records (
                pk INTEGER PRIMARY KEY,
                index_name TEXT NOT NULL,
                collection TEXT NOT NULL,
                id TEXT NOT NULL,
                text TEXT NOT NULL,
                fields TEXT NOT NULL DEFAULT '{}',
                vector BLOB,
                UNIQUE (index_name, collection, id)
            )""",
            """CREATE VIRTUAL TABLE search_fts USING fts5(
                terms, tokenize = 'unicode61 remove_diacritics 2'
            )""",
            """CREATE TABLE index_embeddings (
                index_name TEXT PRIMARY KEY,
                model_id TEXT NOT NULL,
                dimension INTEGER NOT NULL
            )""",
            # --- graph
            """CREATE TABLE entities (
                index_name TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL,
                PRIMARY KEY (index_name, id)
            ) WITHOUT ROWID""",
            """CREATE TABLE relationships (
                index_name TEXT NOT NULL, id TEXT NOT NULL,
                source_id TEXT NOT NULL, target_id TEXT NOT NULL, weight REAL NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (index_name, id)
            ) WITHOUT ROWID""",
            "CREATE INDEX relationships_source ON relationships (index_name, source_id)",
            "CREATE INDEX relationships_target ON relationships (index_name, target_id)",
            """CREATE TABLE communities (
                index_name TEXT NOT NULL, id TEXT NOT NULL, level INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (index_name, id)
            ) WITHOUT ROWID""",
            """CREATE TABLE reports (
                index_name TEXT NOT NULL, community_id TEXT NOT NULL, data TEXT NOT NULL,
                PRIMARY KEY (index_name, community_id)
            ) WITHOUT ROWID""",
            """CREATE TABLE lineage (
                index_name TEXT NOT NULL, item_kind TEXT NOT NULL, item_id TEXT NOT NULL,
                text_unit_id TEXT NOT NULL,
                PRIMARY KEY (index_name, item_kind, item_id, text_unit_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX lineage_text_unit ON lineage (index_name, text_unit_id)",
            # --- doc registry
            """CREATE TABLE doc_records (
                index_name TEXT NOT NULL, document_id TEXT NOT NULL,
                source_scope TEXT NOT NULL, path TEXT NOT NULL, status TEXT NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (index_name, document_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX doc_records_path ON doc_records (index_name, path)",
            "CREATE INDEX doc_records_scope ON doc_records (index_name, source_scope, path)",
            # --- record store
            """CREATE TABLE records (
                scope TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (scope, namespace, key)
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        "0002_fts_exact_terms",
        (
            "DROP TABLE search_fts",
            f"CREATE VIRTUAL TABLE search_fts USING fts5(terms, {_EXACT_TERMS})",
        ),
        then=_refill_fts,
    ),
    Migration(
        "0003_leases",
        (
            """CREATE TABLE leases (
                index_name TEXT PRIMARY KEY, holder TEXT NOT NULL,
                acquired_at REAL NOT NULL, expires_at REAL NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
    # BM25 statistics per index and collection (see lexical.py): terms are re-indexed with
    # their namespace's prefix; each record's length and each namespace's totals are kept.
    Migration(
        "0004_bm25_per_collection",
        (
            """CREATE TABLE search_namespaces (
                ns INTEGER PRIMARY KEY,
                index_name TEXT NOT NULL,
                collection TEXT NOT NULL,
                n_docs INTEGER NOT NULL DEFAULT 0,
                total_terms INTEGER NOT NULL DEFAULT 0,
                UNIQUE (index_name, collection)
            )""",
            "CREATE TABLE search_lengths (pk INTEGER PRIMARY KEY, n_terms INTEGER NOT NULL)",
            "DROP TABLE search_fts",
            f"CREATE VIRTUAL TABLE search_fts USING fts5(terms, {_PREFIXED_TERMS})",
            "CREATE VIRTUAL TABLE search_postings USING fts5vocab(search_fts, instance)",
        ),
        then=rebuild_lexical_index,
    ),
    # Documents may be recorded ``quarantined`` (with a ``failure_count`` in their JSON): the
    # status index serves `ukr status`; recording the migration makes an older version
    # refuse the file (StoreSchemaError) instead of failing on a status it does not know.
    Migration(
        "0005_doc_status_quarantined",
        ("CREATE INDEX doc_records_status ON doc_records (index_name, status)",),
    ),
    # Retrieval counts (`AccessLog`, seed 002 "Access Count"), beside the index: written by a
    # query's background recorder, never under the write lease. Deleting a search record
    # deletes its count in the same transaction (an upsert updates in place: no delete).
    Migration(
        "0006_access_counts",
        (
            """CREATE TABLE access_counts (
                index_name TEXT NOT NULL, collection TEXT NOT NULL, item_id TEXT NOT NULL,
                n INTEGER NOT NULL,
                PRIMARY KEY (index_name, collection, item_id)
            ) WITHOUT ROWID""",
            """CREATE TRIGGER search_records_forget_access AFTER DELETE ON search_records
            BEGIN
                DELETE FROM access_counts WHERE index_name = OLD.index_name
                AND collection = OLD.collection AND item_id = OLD.id;
            END""",
        ),
    ),
    # The change log of the approximate vector indexes (adapters/sqlite/ann.py). A collection
    # served by an HNSW file has a row in ``ann_collections``; while it does, every change of
    # one of its vectors appends (seq, pk) to ``ann_log`` in the transaction of the change, so
    # a file that reflects the log up to ``seq`` is brought up to date by the entries after it.
    # ``trimmed_seq``: entries up to it may be gone (a file older than it is rebuilt).
    # ``ann_database``: a random id, written into every file's sidecar to refuse foreign files.
    Migration(
        "0007_ann_change_log",
        (
            """CREATE TABLE ann_database (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1), database_id TEXT NOT NULL
            )""",
            "INSERT INTO ann_database (singleton, database_id) "
            "VALUES (1, lower(hex(randomblob(16))))",
            """CREATE TABLE ann_collections (
                index_name TEXT NOT NULL, collection TEXT NOT NULL,
                saved_seq INTEGER NOT NULL, trimmed_seq INTEGER NOT NULL,
                PRIMARY KEY (index_name, collection)
            ) WITHOUT ROWID""",
            """CREATE TABLE ann_log (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                index_name TEXT NOT NULL, collection TEXT NOT NULL, pk INTEGER NOT NULL
            )""",
            "CREATE INDEX ann_log_collection ON ann_log (index_name, collection, seq)",
            # counts a collection's vectors without reading them (verifying an index file)
            """CREATE INDEX search_records_with_vector ON search_records (index_name, collection)
            WHERE vector IS NOT NULL""",
            """CREATE TRIGGER search_records_ann_insert AFTER INSERT ON search_records
            WHEN NEW.vector IS NOT NULL AND EXISTS (SELECT 1 FROM ann_collections
                WHERE index_name = NEW.index_name AND collection = NEW.collection)
            BEGIN
                INSERT INTO ann_log (index_name, collection, pk)
                VALUES (NEW.index_name, NEW.collection, NEW.pk);
            END""",
            """CREATE TRIGGER search_records_ann_update AFTER UPDATE OF vector ON search_records
            WHEN OLD.vector IS NOT NEW.vector AND EXISTS (SELECT 1 FROM ann_collections
                WHERE index_name = NEW.index_name AND collection = NEW.collection)
            BEGIN
                INSERT INTO ann_log (index_name, collection, pk)
                VALUES (NEW.index_name, NEW.collection, NEW.pk);
            END""",
            """CREATE TRIGGER search_records_ann_delete AFTER DELETE ON search_records
            WHEN OLD.vector IS NOT NULL AND EXISTS (SELECT 1 FROM ann_collections
                WHERE index_name = OLD.index_name AND collection = OLD.collection)
            BEGIN
                INSERT INTO ann_log (index_name, collection, pk)
                VALUES (OLD.index_name, OLD.collection, OLD.pk);
            END""",
        ),
    ),
)

_CREATE_LEDGER = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
)


def _recorded(conn: sqlite3.Connection) -> list[str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM schema_migrations")]


def _check_known(recorded: list[str], location: str, known: tuple[Migration, ...]) -> None:
    names = {m.name for m in known}
    unknown = sorted(n for n in recorded if n not in names)
    if unknown:
        raise StoreSchemaError(
            f"SQLite database {location} was written by a newer version of unified-kg-rag "
            f"(unknown schema migrations: {', '.join(unknown)}); upgrade unified-kg-rag to use it"
        )


def apply_migrations(
    conn: sqlite3.Connection,
    *,
    location: str,
    migrations: tuple[Migration, ...] = MIGRATIONS,
) -> list[str]:
    """Bring the schema of ``conn`` up to date.

    Args:
        conn: a connection in autocommit mode (``isolation_level=None``), not in a transaction.
        location: the database file, for messages.
        migrations: the known migrations, oldest first.

    Returns:
        The names of the migrations applied now (empty when the schema was current).

    Raises:
        StoreSchemaError: the database records a migration not in ``migrations``.
        sqlite3.Error: a statement failed (the transaction is rolled back).
    """
    recorded = _recorded(conn)
    _check_known(recorded, location, migrations)
    if all(m.name in recorded for m in migrations):
        return []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_CREATE_LEDGER)
        recorded = _recorded(conn)  # another process may have migrated meanwhile
        _check_known(recorded, location, migrations)
        applied: list[str] = []
        for migration in migrations:
            if migration.name in recorded:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            if migration.then is not None:
                migration.then(conn)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (migration.name, time.time()),
            )
            applied.append(migration.name)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if applied:
        logger.info("applied schema migrations %s to %s", ", ".join(applied), location)
    return applied
