"""An in-memory matrix of the stored vectors of each (index, collection), for exact kNN.

A query is then one matrix-vector product instead of a table scan that decodes every BLOB.
An entry is dropped by any write to its collection through this backend, and rebuilt when
``PRAGMA data_version`` shows another connection (another process) committed since it was
built. Only the database thread touches the cache, so it needs no lock.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.util.errors import StoreError

__all__ = ["VectorCache", "VectorMatrix"]


@dataclass(frozen=True)
class VectorMatrix:
    """The vectors of one collection.

    Attributes:
        ids: record ids, sorted, one per row.
        rows: ``id -> row`` of ``matrix``.
        matrix: float32 ``[n, d]``, L2-normalised rows (``[0, 0]`` when empty).
        data_version: ``PRAGMA data_version`` when the matrix was read.
    """

    ids: list[str]
    rows: dict[str, int]
    matrix: NDArray[np.float32]
    data_version: int

    def nearest(
        self, query: NDArray[np.float32], limit: int, allowed: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """Return the ``limit`` rows most similar to ``query``, best first.

        Args:
            query: float32 ``[d]``, L2-normalised, so a dot product is the cosine.
            limit: the most ids returned.
            allowed: when given, only these ids are candidates.

        Returns:
            ``(id, cosine)`` pairs ordered by cosine descending, then id.
        """
        if not self.ids or limit < 1:
            return []
        scores = self.matrix @ query
        if allowed is None:
            candidates = np.arange(len(self.ids), dtype=np.int64)
        else:
            rows = sorted(self.rows[i] for i in allowed if i in self.rows)
            candidates = np.asarray(rows, dtype=np.int64)
        if len(candidates) > limit:
            candidates = candidates[np.argpartition(-scores[candidates], limit - 1)[:limit]]
        order = np.lexsort((candidates, -scores[candidates]))
        return [(self.ids[i], float(scores[i])) for i in candidates[order]]


@dataclass
class VectorCache:
    """Vector matrices keyed by ``(index_name, collection)``."""

    _entries: dict[tuple[str, str], VectorMatrix] = field(default_factory=dict)

    def invalidate(self, index_name: str, collection: str) -> None:
        """Drop the matrix of one collection (call after writing to it)."""
        self._entries.pop((index_name, collection), None)

    def clear(self) -> None:
        """Drop every matrix (call when the connection changes)."""
        self._entries.clear()

    def load(self, conn: sqlite3.Connection, index_name: str, collection: str) -> VectorMatrix:
        """Return the current matrix of one collection, reading it when stale or absent.

        Raises:
            StoreError: stored vectors have different dimensions.
            sqlite3.Error: the read failed.
        """
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        key = (index_name, collection)
        entry = self._entries.get(key)
        if entry is not None and entry.data_version == version:
            return entry
        rows = conn.execute(
            "SELECT id, vector FROM search_records WHERE index_name = ? AND collection = ? "
            "AND vector IS NOT NULL ORDER BY id",
            key,
        ).fetchall()
        ids = [row[0] for row in rows]
        if rows:
            blob = b"".join(row[1] for row in rows)
            dim = len(rows[0][1]) // 4
            if dim == 0 or len(blob) != len(rows) * dim * 4:
                raise StoreError(
                    f"index {index_name!r} collection {collection!r} holds vectors of "
                    "different dimensions; index into a new index (`ukr index PATH --index NAME`)"
                )
            matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        entry = VectorMatrix(ids, {id_: i for i, id_ in enumerate(ids)}, matrix, version)
        self._entries[key] = entry
        return entry
