"""Approximate (HNSW) vector search of large SQLite collections, kept in step with the rows.

A collection with more than ``exact_search_max_vectors`` records is served by a `usearch`
HNSW index (Malkov & Yashunin 2018, "Efficient and robust approximate nearest neighbor search
using Hierarchical Navigable Small World graphs"), keyed by the rows' integer ``pk`` and kept in
memory, with a copy in ``<db dir>/ann/`` (`ann_files`). Smaller collections stay exact
(`VectorCache`).

Staying in step (migration ``0007_ann_change_log``): while a collection has a row in
``ann_collections``, triggers append ``(seq, pk)`` to ``ann_log`` in the transaction of every
change of one of its vectors (insert, replaced vector, delete), whichever process writes. An
index reflects the log up to its ``seq``; before each vector query it applies the entries
after it, re-reading each changed ``pk``'s current row in the query's snapshot (present with a
vector: re-added; otherwise removed), so replay is idempotent. Saved files carry their seq;
on registering a file the log of its collection is trimmed up to that seq
(``trimmed_seq``), and an index older than ``trimmed_seq`` is reloaded from the newest file.
A file is used only if its sidecar names this database, index, collection and settings, its
seq lies between ``trimmed_seq`` and the log's last seq, it loads, and after catching up it
holds exactly the collection's vector count and a sample of its vectors matches the rows;
otherwise it is rebuilt from the rows with one warning. A process killed anywhere therefore
leaves at worst an older file plus log entries, or no file: never an index out of step.

Queries: ``oversample × limit`` candidates from the graph, re-scored with the stored float32
vectors (scores are exact cosines; ties by id). A filtered query asks the graph for
``filter_oversample`` times more and keeps the candidates the filter allows; when fewer than
``limit`` survive it falls back to an exact scan of the allowed rows, so a selective filter
never loses matches.

Only the database thread touches these objects (as `VectorCache`), so they need no lock.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.adapters.sqlite.ann_files import (
    Sidecar,
    latest_file,
    remove_files,
    save_index,
    stem_of,
)
from unified_kg_rag.config.stores import SqliteAnnConfig

__all__ = ["AnnIndexes", "AnnState", "Step", "exact_filtered", "last_seq"]

logger = logging.getLogger(__name__)

_BY_PK = "json_each(?) AS j CROSS JOIN search_records AS r ON r.pk = j.value"
"""Rows by a JSON array of pks, looked up by pk (the planner would otherwise scan the
collection through its (index_name, collection, id) index)."""
_BATCH = 20_000
_SAMPLE = 32
_MIN_COSINE = {"f32": 0.999, "f16": 0.99, "i8": 0.9}
_FILTER_OVERSAMPLE = 8


class Step(Enum):
    """What `AnnIndexes.inspect` asks the caller to do before the query."""

    EXACT = "exact"
    """Serve the collection exactly (small, ANN off, or `usearch` missing)."""
    READY = "ready"
    """The in-memory index is current for this snapshot."""
    BUILD = "build"
    """Start logging the collection (a write) and build its index from the rows."""
    DROP = "drop"
    """Stop logging the collection (a write) and remove its files."""
    SAVE = "save"
    """The index is current but many changes are unsaved: save it, then register the file."""


@dataclass
class AnnState:
    """The in-memory index of one collection.

    Attributes:
        index: the `usearch.index.Index`.
        seq: the last change-log entry it reflects.
        unsaved: changes applied since it was last saved or loaded.
    """

    index: Any
    seq: int
    unsaved: int = 0


@dataclass
class AnnIndexes:
    """The HNSW indexes of one SQLite file, keyed by ``(index_name, collection)``.

    Args:
        db_path: the database file; files live in ``<its folder>/ann/``.
        config: the ``stores.sqlite.ann`` section.
    """

    db_path: Path
    config: SqliteAnnConfig
    _states: dict[tuple[str, str], AnnState] = field(default_factory=dict)
    _counts: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    _available: bool | None = None

    @property
    def directory(self) -> Path:
        """The folder of the index files."""
        return self.db_path.parent / "ann"

    def available(self) -> bool:
        """True when ANN is enabled and `usearch` imports (warns once when it does not)."""
        if not self.config.enabled:
            return False
        if self._available is None:
            try:
                import usearch.index  # noqa: F401
            except ImportError:
                logger.warning("stores.sqlite.ann: the `usearch` package is not installed "
                               "(install the `ann` extra); large collections are searched "
                               "exactly")
                self._available = False
            else:
                self._available = True
        return self._available

    def state(self, index_name: str, collection: str) -> AnnState | None:
        """The in-memory index of one collection, if one serves it now."""
        return self._states.get((index_name, collection))

    def invalidate(self, index_name: str, collection: str) -> None:
        """Forget the cached record count of one collection (call after writing to it)."""
        self._counts.pop((index_name, collection), None)

    def _count(self, conn: sqlite3.Connection, key: tuple[str, str]) -> int:
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        cached = self._counts.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        n = int(conn.execute(
            "SELECT COUNT(*) FROM search_records WHERE index_name = ? AND collection = ?", key
        ).fetchone()[0])
        self._counts[key] = (version, n)
        return n

    def forget(self) -> None:
        """Drop every in-memory index and cached count (the connection changed)."""
        self._states.clear()
        self._counts.clear()

    # ----------------------------------------------------------------- inspect (read txn)

    def inspect(self, conn: sqlite3.Connection, index_name: str, collection: str) -> Step:
        """Bring the in-memory index up to this snapshot when possible; say what else to do.

        Runs in a read transaction on the database thread: it loads or catches up an index
        (memory only) but never writes to the database.
        """
        key = (index_name, collection)
        row = conn.execute(
            "SELECT saved_seq, trimmed_seq FROM ann_collections "
            "WHERE index_name = ? AND collection = ?", key).fetchone()
        if not self.available():  # another process may still serve it: it stays logged
            self._states.pop(key, None)
            return Step.EXACT
        threshold = self.config.exact_search_max_vectors
        if row is None:
            self._states.pop(key, None)
            return Step.BUILD if self._count(conn, key) > threshold else Step.EXACT
        trimmed = int(row[1])
        if self._count(conn, key) <= threshold // 2:  # decided before loading any file
            self._states.pop(key, None)
            return Step.DROP
        state = self._states.get(key)
        if state is not None and state.seq < trimmed:
            state = None  # entries it needs may be trimmed: reload the newest file
        if state is None:
            state = self._load(conn, key, trimmed)
            if state is None:
                return Step.BUILD
        self.catch_up(conn, key, state)
        self._states[key] = state
        if state.unsaved >= max(1_000, len(state.index) // 100):
            return Step.SAVE
        return Step.READY

    def catch_up(self, conn: sqlite3.Connection, key: tuple[str, str], state: AnnState) -> None:
        """Apply the change-log entries after ``state.seq`` (the rows of this snapshot)."""
        last = conn.execute(
            "SELECT MAX(seq) FROM ann_log WHERE index_name = ? AND collection = ?", key
        ).fetchone()[0]
        if last is None or int(last) <= state.seq:
            return
        pks = [int(r[0]) for r in conn.execute(
            "SELECT DISTINCT pk FROM ann_log WHERE index_name = ? AND collection = ? "
            "AND seq > ? AND seq <= ?", (*key, state.seq, int(last)))]
        for lo in range(0, len(pks), _BATCH):
            self._apply(conn, key, state.index, pks[lo:lo + _BATCH])
        state.seq = int(last)
        state.unsaved += len(pks)

    def _apply(
        self, conn: sqlite3.Connection, key: tuple[str, str], index: Any, pks: list[int]
    ) -> None:
        current = dict(conn.execute(
            f"SELECT r.pk, r.vector FROM {_BY_PK} WHERE r.index_name = ? AND r.collection = ? "
            "AND r.vector IS NOT NULL", (json.dumps(pks), *key)).fetchall())
        asked = np.asarray(pks, dtype=np.uint64)
        gone = asked[np.asarray(index.contains(asked), dtype=bool)]
        if len(gone):
            index.remove(gone)
        if current:
            keys = np.fromiter(current, dtype=np.uint64, count=len(current))
            matrix = np.frombuffer(b"".join(current.values()), dtype=np.float32)
            index.add(keys, matrix.reshape(len(current), -1))

    # ----------------------------------------------------------------- load / build / save

    def _new_index(self, ndim: int) -> Any:
        from usearch.index import Index

        cfg = self.config
        return Index(ndim=ndim, metric="cos", dtype=cfg.dtype, connectivity=cfg.connectivity,
                     expansion_add=cfg.expansion_add, expansion_search=cfg.expansion_search)

    def _load(
        self, conn: sqlite3.Connection, key: tuple[str, str], trimmed: int
    ) -> AnnState | None:
        """Load and verify the newest file; None (with one warning) when it cannot serve."""
        saved = latest_file(self.directory, *key)
        if saved is None:
            return None
        state = None
        try:
            problem = self._check_sidecar(conn, saved.sidecar, trimmed, saved.path)
            if problem is None:
                problem = self._restore(conn, key, saved.path, saved.sidecar)
        except (ValueError, RuntimeError, OSError, MemoryError) as exc:
            problem = f"it does not load ({exc})"
        if problem is None:
            state = self._states.get(key)
        if state is None:
            logger.warning("vector index file %s is not used (%s); rebuilding it from the "
                           "rows", saved.path, problem)
            for bad in (saved.path, saved.path.with_suffix(".json")):
                bad.unlink(missing_ok=True)
        return state

    def _restore(
        self, conn: sqlite3.Connection, key: tuple[str, str], path: Path, side: Sidecar
    ) -> str | None:
        from usearch.index import Index

        index: Any = Index.restore(str(path), view=False)
        if index is None or len(index) != side.count or index.ndim != side.ndim:
            return "its content differs from its sidecar"
        index.expansion_search = self.config.expansion_search
        state = AnnState(index, side.seq)
        self.catch_up(conn, key, state)  # what it applies counts as unsaved
        problem = self._check_rows(conn, key, state)
        if problem is None:
            self._states[key] = state
        return problem

    def _check_sidecar(
        self, conn: sqlite3.Connection, side: Sidecar, trimmed: int, path: Path
    ) -> str | None:
        database_id = conn.execute("SELECT database_id FROM ann_database").fetchone()
        last = last_seq(conn)
        dim = _dimension(conn, (side.index_name, side.collection))
        cfg = self.config
        checks = [
            (database_id is not None and side.database_id == database_id[0],
             "it was built from another database"),
            (side.seq >= trimmed, f"it reflects change {side.seq}; the log starts after {trimmed}"),
            (side.seq <= last, f"it reflects change {side.seq}, beyond the log's last ({last})"),
            (dim is None or side.ndim == dim, f"dimension {side.ndim}, the rows have {dim}"),
            ((side.dtype, side.connectivity) == (cfg.dtype, cfg.connectivity),
             "it was built with other settings (dtype or connectivity)"),
            (path.stat().st_size == side.file_size, "its size differs from its sidecar's"),
        ]
        return next((why for ok, why in checks if not ok), None)

    def _check_rows(
        self, conn: sqlite3.Connection, key: tuple[str, str], state: AnnState
    ) -> str | None:
        n = int(conn.execute(
            "SELECT COUNT(*) FROM search_records WHERE index_name = ? AND collection = ? "
            "AND vector IS NOT NULL", key).fetchone()[0])
        if len(state.index) != n:
            return f"it holds {len(state.index)} vectors, the rows {n}"
        held_keys = np.asarray(state.index.keys, dtype=np.uint64)
        if len(held_keys) == 0:
            return None
        picked = np.random.default_rng().choice(held_keys, min(_SAMPLE, len(held_keys)),
                                                replace=False)  # fmt: skip
        rows = conn.execute(
            f"SELECT r.pk, r.vector FROM {_BY_PK} WHERE r.index_name = ? AND r.collection = ? "
            "AND r.vector IS NOT NULL", (json.dumps([int(k) for k in picked]), *key)).fetchall()
        if len(rows) != len(picked):  # with equal counts: the rows hold vectors it lacks
            return "it holds vectors the rows do not"
        keys = np.asarray([r[0] for r in rows], dtype=np.uint64)
        stored = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        held = np.asarray(state.index.get(keys, dtype=np.float32), dtype=np.float32)
        norms = np.linalg.norm(held, axis=1) * np.linalg.norm(stored, axis=1)
        cosines = np.sum(held * stored, axis=1) / np.maximum(norms, 1e-12)
        if float(cosines.min()) < _MIN_COSINE[self.config.dtype]:
            return "its vectors differ from the rows"
        return None

    def build(self, conn: sqlite3.Connection, index_name: str, collection: str) -> AnnState:
        """Build the index of one collection from the rows of this snapshot (read txn).

        The collection must already be logged (`pin`), so no change after the snapshot is
        missed. Keeps the new index in memory; the caller saves it (`save`).
        """
        key = (index_name, collection)
        last = last_seq(conn)
        dim = _dimension(conn, key)
        index = self._new_index(dim or 1)
        keys: list[int] = []
        blobs: list[bytes] = []
        for pk, blob in conn.execute(
            "SELECT pk, vector FROM search_records WHERE index_name = ? AND collection = ? "
            "AND vector IS NOT NULL", key):
            keys.append(int(pk))
            blobs.append(blob)
            if len(keys) == _BATCH:
                _add(index, keys, blobs)
                keys, blobs = [], []
        if keys:
            _add(index, keys, blobs)
        state = AnnState(index, last, unsaved=len(index))
        self._states[key] = state
        logger.info("built the vector index of %s/%s: %d vectors", index_name, collection,
                    len(index))
        return state

    def save(self, conn: sqlite3.Connection, index_name: str, collection: str) -> int | None:
        """Save the in-memory index of one collection; return the seq it reflects (None: none).

        Raises nothing: a failed save is logged (the change log still covers every change).
        """
        key = (index_name, collection)
        state = self._states.get(key)
        if state is None:
            return None
        database_id = conn.execute("SELECT database_id FROM ann_database").fetchone()[0]
        sidecar = Sidecar(str(database_id), index_name, collection, state.seq,
                          int(state.index.ndim), self.config.dtype, self.config.connectivity,
                          len(state.index), 0)
        try:
            save_index(state.index, self.directory, sidecar)
        except OSError as exc:
            logger.warning("could not save the vector index of %s/%s under %s: %s",
                           index_name, collection, self.directory, exc)
            return None
        state.unsaved = 0
        return state.seq

    def remove(self, index_name: str, collection: str, *, seq: int | None = None) -> None:
        """Forget the in-memory index of one collection and delete its files.

        Args:
            index_name: the index.
            collection: the collection.
            seq: delete only the file of this seq (a save that could not be registered).
        """
        self._states.pop((index_name, collection), None)
        if seq is None:
            remove_files(self.directory, index_name, collection)
        else:
            stem = stem_of(index_name, collection)
            for suffix in (".usearch", ".json"):
                (self.directory / f"{stem}-{seq}{suffix}").unlink(missing_ok=True)

    # ----------------------------------------------------------------- query

    def nearest(
        self, conn: sqlite3.Connection, key: tuple[str, str], query: NDArray[np.float32],
        limit: int, where: str, params: list[object],
    ) -> list[tuple[str, float]] | None:
        """Return the ``limit`` best ``(id, cosine)`` pairs; None when fewer candidates survive.

        Args:
            conn: the connection, in the query's read transaction.
            key: ``(index_name, collection)``; its index must be current (`inspect`).
            query: float32 ``[d]``, L2-normalised.
            limit: the most hits returned.
            where: a filter clause on ``r.fields`` (``""``: none).
            params: the filter clause's parameters.
        """
        state = self._states[key]
        size = len(state.index)
        want = limit * self.config.oversample * (_FILTER_OVERSAMPLE if where else 1)
        want = min(size, max(want, limit))
        if want == 0:
            return []
        state.index.expansion_search = max(self.config.expansion_search, want)
        found = state.index.search(query, want, threads=1)
        pks = [int(pk) for pk in found.keys]
        rows = conn.execute(
            f"SELECT r.id, r.vector FROM {_BY_PK} WHERE r.index_name = ? AND r.collection = ? "
            f"AND r.vector IS NOT NULL{where}", (json.dumps(pks), *key, *params)).fetchall()
        if len(rows) < min(limit, size):  # a filter (or the graph walk) left too few
            return None
        return _ranked(rows, query, limit)


def _ranked(rows: list[Any], query: NDArray[np.float32], limit: int) -> list[tuple[str, float]]:
    """Exact cosines of ``(id, float32 blob)`` rows; the best ``limit``, ties by id."""
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
    scores = matrix.reshape(len(rows), -1) @ query
    ranked = sorted(zip((str(r[0]) for r in rows), scores.tolist(), strict=True),
                    key=lambda hit: (-hit[1], hit[0]))
    return ranked[:limit]


def exact_filtered(
    conn: sqlite3.Connection, key: tuple[str, str], query: NDArray[np.float32], limit: int,
    where: str, params: list[object],
) -> list[tuple[str, float]]:
    """Exact kNN over the rows a filter allows, read in batches (no whole-collection matrix)."""
    best: list[tuple[str, float]] = []
    cursor = conn.execute(
        f"SELECT r.id, r.vector FROM search_records AS r WHERE r.index_name = ? AND "
        f"r.collection = ? AND r.vector IS NOT NULL{where}", (*key, *params))
    while batch := cursor.fetchmany(_BATCH):
        best = sorted([*best, *_ranked(batch, query, limit)],
                      key=lambda hit: (-hit[1], hit[0]))[:limit]
    return best


def _add(index: Any, keys: list[int], blobs: list[bytes]) -> None:
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(keys), -1)
    index.add(np.asarray(keys, dtype=np.uint64), matrix)


def _dimension(conn: sqlite3.Connection, key: tuple[str, str]) -> int | None:
    row = conn.execute(
        "SELECT length(vector) / 4 FROM search_records WHERE index_name = ? AND collection = ? "
        "AND vector IS NOT NULL LIMIT 1", key).fetchone()
    return None if row is None else int(row[0])


def last_seq(conn: sqlite3.Connection) -> int:
    """The last seq ever given to a change-log entry (0 when none): AUTOINCREMENT's counter."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'ann_log'").fetchone()
    return 0 if row is None else int(row[0])
