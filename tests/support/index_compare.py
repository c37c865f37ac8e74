"""Comparing two indexes item by item: what an incremental run must converge to (issue #7).

`snapshot` reads everything an index holds from its SQLite file (read-only): search records
(text, fields, vector) and the BM25 statistics of each collection, lineage rows, registry records, graph-store entities, relationships,
communities and reports, and the extraction records, extraction-failure entries and
concept-graph records. `assert_same_index`
compares two snapshots exactly, except vectors (`numpy.allclose`: embedding batches may pad
differently) and a text unit's file modification time (a ``timestamp`` whose
``timestamp_source`` is ``modified``: a clock reading, compared as present, not by value; a
file rewritten with the same content keeps the time it was indexed with, by design). `ranked` and `assert_same_ranking` compare search results: ids in order, with
items whose scores tie (within float noise) allowed in either order.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from unified_kg_rag.domain.models import Collection, SearchMode
from unified_kg_rag.ports import Embedder, IndexStores

__all__ = [
    "COMPARED",
    "assert_same_index",
    "assert_same_ranking",
    "diff_keys",
    "ranked",
    "snapshot",
]

COMPARED = ("search", "bm25", "lineage", "docs", "entities", "relationships", "communities",
            "reports", "extraction_records", "lazy", "raptor", "claim_records")
"""Snapshot keys `assert_same_index` compares exactly (``vectors`` is compared with a tolerance)."""

_SCORE_TOL = 1e-4


def snapshot(db: str, index: str = "default") -> dict[str, Any]:
    """Return everything index ``index`` of the SQLite file ``db`` holds (vectors as float32)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = con.execute
        out: dict[str, Any] = {
            "search": {(c, i): (t, clockless(json.loads(f))) for c, i, t, f in q(
                "SELECT collection, id, text, fields FROM search_records WHERE index_name = ?",
                (index,))},
            "vectors": {(c, i): np.frombuffer(bytes(v), dtype=np.float32) for c, i, v in q(
                "SELECT collection, id, vector FROM search_records WHERE index_name = ? "
                "AND vector IS NOT NULL", (index,))},
            "bm25": set(q("SELECT collection, n_docs, total_terms FROM search_namespaces "
                          "WHERE index_name = ? AND n_docs > 0", (index,))),
            "lineage": set(q("SELECT item_kind, item_id, text_unit_id FROM lineage "
                             "WHERE index_name = ?", (index,))),
            "docs": {d: (s, json.loads(data)["path"], tuple(json.loads(data)["text_unit_ids"]))
                     for d, s, data in q("SELECT document_id, status, data FROM doc_records "
                                         "WHERE index_name = ?", (index,))},
        }
        for table, key in (("entities", "id"), ("relationships", "id"),
                           ("communities", "id"), ("reports", "community_id")):
            out[table] = {i: json.loads(d) for i, d in q(
                f"SELECT {key}, data FROM {table} WHERE index_name = ?", (index,))}
        for ns in ("extraction_records", "lazy", "extraction_failures", "raptor",
                   "claim_records"):
            out[ns] = dict(q("SELECT key, value FROM records WHERE scope = ? AND namespace = ?",
                             (index, ns)).fetchall())
        return out
    finally:
        con.close()


def clockless(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with a file modification time replaced by a marker (see the docstring)."""
    if fields.get("timestamp_source") == "modified" and "timestamp" in fields:
        return {**fields, "timestamp": "<file mtime>"}
    return fields


def diff_keys(got: dict[str, Any], want: dict[str, Any], key: str) -> str:
    """Return a short description of how ``got[key]`` differs from ``want[key]``."""
    a, b = got[key], want[key]
    if isinstance(a, dict) and isinstance(b, dict):
        extra = sorted(set(a) - set(b), key=str)[:5]
        missing = sorted(set(b) - set(a), key=str)[:5]
        changed = [k for k in a if k in b and a[k] != b[k]][:3]
        return (f"{key}: extra {extra}, missing {missing}, changed "
                f"{[(k, a[k], b[k]) for k in changed]}")
    if isinstance(a, set) and isinstance(b, set):
        return f"{key}: extra {sorted(a - b)[:5]}, missing {sorted(b - a)[:5]}"
    return f"{key}: {a!r} != {b!r}"


def assert_same_index(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Assert two snapshots hold the same items (vectors within ``atol=1e-5``)."""
    for key in COMPARED:
        assert got[key] == want[key], diff_keys(got, want, key)
    assert got["vectors"].keys() == want["vectors"].keys()
    for k, v in want["vectors"].items():
        assert np.allclose(got["vectors"][k], v, atol=1e-5), k


async def ranked(
    stores: IndexStores, embedder: Embedder, queries: Sequence[str], *, k: int = 50
) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    """Return (collection, mode, query) → [(id, score)] for every collection and mode."""
    out: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
    for query in queries:
        vector = await embedder.embed_query(query)
        for collection in (Collection.TEXT_UNITS, Collection.ENTITIES,
                           Collection.RELATIONSHIPS, Collection.REPORTS, Collection.CLAIMS):
            for mode in (SearchMode.LEXICAL, SearchMode.VECTOR, SearchMode.HYBRID):
                hits = await stores.search.search(
                    collection, query_text=query, query_vector=vector, mode=mode, k=k
                )
                out[(collection.value, mode.value, query)] = [(h.id, h.score) for h in hits]
    return out


def assert_same_ranking(
    got: dict[tuple[str, str, str], list[tuple[str, float]]],
    want: dict[tuple[str, str, str], list[tuple[str, float]]],
) -> None:
    """Assert the same ids in the same order; tied items (score within 1e-4) may swap."""
    assert got.keys() == want.keys()
    for key, expected in want.items():
        actual = got[key]
        assert [i for i, _ in actual] == [i for i, _ in expected] or _same_up_to_ties(
            actual, expected
        ), (key, actual, expected)


def _same_up_to_ties(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    if len(a) != len(b) or {i for i, _ in a} != {i for i, _ in b}:
        return False
    score_a = dict(a)
    for (id_a, s_a), (id_b, s_b) in zip(a, b, strict=True):
        if abs(s_a - s_b) > _SCORE_TOL:
            return False
        if id_a != id_b and abs(score_a[id_b] - s_a) > _SCORE_TOL:
            return False
    return True
