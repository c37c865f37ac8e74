"""The writes that keep the HNSW indexes of a SQLite file in step, and the step before a query.

`ensure_current` runs before a vector query of a collection: `AnnIndexes.inspect` (a read)
says whether the collection is exact, served, or needs a write: start logging and build
(`pin`, then `AnnIndexes.build` in a read snapshot taken after the pin, so no change is
missed), save and register a file (`register` trims the change log up to the file's seq), or
stop (`unpin`: the collection went back to exact search, or ANN was switched off). See
``ann.py`` for the design.
"""

from __future__ import annotations

import logging
import sqlite3

from unified_kg_rag.adapters.sqlite.ann import AnnIndexes, Step, last_seq
from unified_kg_rag.adapters.sqlite.database import SqliteDatabase

__all__ = ["ensure_current", "pin", "register", "unpin"]

logger = logging.getLogger(__name__)


def pin(conn: sqlite3.Connection, key: tuple[str, str]) -> None:
    """Start logging the vector changes of a collection (write txn); no-op when logged.

    Changes before now were not logged, so ``trimmed_seq`` starts at a fresh seq (taken by a
    no-op entry for ``pk`` 0, which no row has): no index or file from before this moment,
    not even one of an earlier time the collection was logged, can be used.
    """
    if conn.execute("SELECT 1 FROM ann_collections WHERE index_name = ? AND collection = ?",
                    key).fetchone() is not None:  # fmt: skip
        return
    conn.execute("INSERT INTO ann_log (index_name, collection, pk) VALUES (?, ?, 0)", key)
    fresh = last_seq(conn)
    conn.execute(
        "INSERT INTO ann_collections (index_name, collection, saved_seq, trimmed_seq) "
        "VALUES (?, ?, ?, ?)", (*key, fresh, fresh))


def register(conn: sqlite3.Connection, key: tuple[str, str], seq: int) -> bool:
    """Record a saved file reflecting the log up to ``seq`` and trim the log up to it.

    Returns:
        False when the file cannot serve (the collection is no longer logged, or its log was
        already trimmed past ``seq`` by a newer file); nothing is changed then.
    """
    row = conn.execute(
        "SELECT trimmed_seq FROM ann_collections WHERE index_name = ? AND collection = ?",
        key).fetchone()
    if row is None or seq < int(row[0]):
        return False
    conn.execute(
        "UPDATE ann_collections SET saved_seq = ?, trimmed_seq = ? "
        "WHERE index_name = ? AND collection = ?", (seq, seq, *key))
    conn.execute(
        "DELETE FROM ann_log WHERE index_name = ? AND collection = ? AND seq <= ?", (*key, seq))
    return True


def unpin(conn: sqlite3.Connection, key: tuple[str, str]) -> None:
    """Stop logging a collection and drop its log (write txn)."""
    conn.execute("DELETE FROM ann_collections WHERE index_name = ? AND collection = ?", key)
    conn.execute("DELETE FROM ann_log WHERE index_name = ? AND collection = ?", key)


async def ensure_current(
    db: SqliteDatabase, ann: AnnIndexes, index_name: str, collection: str, *,
    index_run: bool = False,
) -> None:
    """Build, catch up, save or drop the HNSW index of one collection before a vector query.

    ``index_run``: the call ending an indexing run (`SqliteSearchIndex.prepare_vector_search`),
    which also saves any change not saved yet, so the next process loads a current file.
    Only an indexing run drops an index:
    a query process whose threshold puts the collection at or below half of it searches
    exactly and leaves the index, its files and its change log alone, so one process started
    with other settings cannot throw away a build that took minutes.

    Raises:
        StoreConnectionError, StoreError: a database step failed (a failed file save only
            logs a warning: the change log still holds every change).
    """
    key = (index_name, collection)
    step = await db.read(lambda conn: ann.inspect(conn, *key))
    if step is Step.READY and index_run:
        state = ann.state(*key)
        if state is not None and state.unsaved > 0:
            step = Step.SAVE
    if step is Step.DROP:
        if not index_run:
            return  # the query searches exactly

        def dropping(conn: sqlite3.Connection) -> None:
            unpin(conn, key)
            ann.remove(*key)

        await db.write(dropping)
        logger.warning(
            "%s/%s: at most half of stores.sqlite.ann.exact_search_max_vectors (%d) records "
            "left; its HNSW index is dropped and it is searched exactly",
            index_name, collection, ann.config.exact_search_max_vectors)  # fmt: skip
        return
    if step is Step.BUILD:
        await db.write(lambda conn: pin(conn, key))
        await db.read(lambda conn: ann.build(conn, *key))
    if step in (Step.BUILD, Step.SAVE):
        seq = await db.read(lambda conn: ann.save(conn, *key))
        if seq is not None and not await db.write(lambda conn: register(conn, key, seq)):
            await db.read(lambda conn: ann.remove(*key, seq=seq))
