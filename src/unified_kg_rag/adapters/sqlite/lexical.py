"""Lexical search on SQLite: namespaced FTS5 postings and BM25 per index and collection.

FTS5's ``bm25()`` takes its statistics (record count, mean length, document frequencies) from
the whole FTS5 table. One table serves every index and collection of a file, so a graph index's
tens of thousands of short entity and relationship records would shift the IDF and mean length
of its text units. Statistics here belong to one *namespace*, an (index, collection) pair,
without a table per namespace (indexes are user-named, so that would add tables at run time):

* ``search_namespaces`` numbers the pairs and keeps each one's record count and total terms;
* each record's terms (`domain.text.analysis.lexical_terms`) are indexed in ``search_fts`` as
  ``"<namespace>:<term>"`` (terms never contain ``:``), so the posting list of a prefixed term
  holds that namespace's records only and its length is the term's document frequency there;
* ``search_lengths`` keeps each record's number of terms (its BM25 document length);
* ``search_postings`` (an ``fts5vocab`` table of type ``instance``) reads one prefixed term's
  postings, from which each record's term frequency is counted.

The ``ascii`` tokenizer splits only at ASCII characters other than letters, digits, ``'``,
``.`` and ``:`` (in the stored text: the spaces between terms; terms hold no ASCII capital for
it to fold), so the indexed tokens are exactly the prefixed terms and a query term is looked
up as written. A query reads the postings of its own namespace only, never the whole file's.

The score is FTS5's ``bm25()`` negated (k1 = 1.2, b = 0.75, IDF ``ln((N - n + 0.5) /
(n + 0.5))`` floored at 1e-6; Robertson and Zaragoza, "The Probabilistic Relevance Framework:
BM25 and Beyond", 2009) over the namespace's statistics, summed in query-term order as FTS5
does; the PostgreSQL store computes the same. Statistics change in the same transaction as the
records.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from unified_kg_rag.domain.text.analysis import lexical_terms

__all__ = [
    "K1",
    "B",
    "Namespace",
    "bm25_search",
    "idf",
    "index_records",
    "namespace",
    "namespace_number",
    "namespaced_text",
    "prefixed",
    "rebuild_lexical_index",
    "unindex_records",
]

K1 = 1.2
B = 0.75
_IDS = "(SELECT value FROM json_each(?))"
_REBUILD_BATCH = 2000


@dataclass(frozen=True)
class Namespace:
    """One (index, collection) pair and its BM25 statistics.

    Attributes:
        ns: the number its terms are prefixed with.
        n_docs: records in the collection.
        total_terms: terms over those records (their mean length is ``total_terms / n_docs``).
    """

    ns: int
    n_docs: int
    total_terms: int


def prefixed(ns: int, term: str) -> str:
    """Return ``term`` as indexed for namespace ``ns`` (``"3:river"``)."""
    return f"{ns}:{term}"


def namespaced_text(ns: int, terms: Sequence[str]) -> str:
    """Return the FTS5 column text of a record of namespace ``ns`` with ``terms``."""
    return " ".join(prefixed(ns, term) for term in terms)


def namespace(conn: sqlite3.Connection, index: str, collection: str) -> Namespace | None:
    """Return the namespace of ``(index, collection)``; None when it was never written to."""
    row = conn.execute(
        "SELECT ns, n_docs, total_terms FROM search_namespaces "
        "WHERE index_name = ? AND collection = ?",
        (index, collection),
    ).fetchone()
    return None if row is None else Namespace(int(row[0]), int(row[1]), int(row[2]))


def namespace_number(conn: sqlite3.Connection, index: str, collection: str) -> int:
    """Return the number of the namespace of ``(index, collection)``, numbering it if new."""
    row = conn.execute(
        "INSERT INTO search_namespaces (index_name, collection) VALUES (?, ?) "
        "ON CONFLICT (index_name, collection) DO UPDATE SET ns = ns RETURNING ns",
        (index, collection),
    ).fetchone()
    return int(row[0])


def _change_stats(conn: sqlite3.Connection, ns: int, n_docs: int, total_terms: int) -> None:
    if n_docs or total_terms:
        conn.execute(
            "UPDATE search_namespaces SET n_docs = n_docs + ?, total_terms = total_terms + ? "
            "WHERE ns = ?",
            (n_docs, total_terms, ns),
        )


def index_records(conn: sqlite3.Connection, ns: int, records: Iterable[tuple[int, str]]) -> None:
    """Index the terms of records ``(pk, text)`` of namespace ``ns`` and count them in.

    The records must not be indexed already (see `unindex_records`); a ``pk`` given twice is
    indexed with its last text.
    """
    texts = dict(records)
    rows = [(pk, lexical_terms(text)) for pk, text in texts.items()]
    conn.executemany(
        "INSERT INTO search_fts (rowid, terms) VALUES (?, ?)",
        [(pk, namespaced_text(ns, terms)) for pk, terms in rows],
    )
    conn.executemany(
        "INSERT INTO search_lengths (pk, n_terms) VALUES (?, ?)",
        [(pk, len(terms)) for pk, terms in rows],
    )
    _change_stats(conn, ns, len(rows), sum(len(terms) for _, terms in rows))


def unindex_records(conn: sqlite3.Connection, ns: int, pks: Sequence[int]) -> None:
    """Remove the terms of the records ``pks`` of namespace ``ns`` and count them out.

    Records not indexed are skipped.
    """
    ids = json.dumps(list(dict.fromkeys(pks)))
    row = conn.execute(
        f"SELECT count(*), coalesce(sum(n_terms), 0) FROM search_lengths WHERE pk IN {_IDS}",
        (ids,),
    ).fetchone()
    if not row[0]:
        return
    conn.execute(f"DELETE FROM search_fts WHERE rowid IN {_IDS}", (ids,))
    conn.execute(f"DELETE FROM search_lengths WHERE pk IN {_IDS}", (ids,))
    _change_stats(conn, ns, -int(row[0]), -int(row[1]))


def idf(n_docs: int, df: int) -> float:
    """Return FTS5's BM25 inverse document frequency of a term found in ``df`` of ``n_docs``."""
    value = math.log((n_docs - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def bm25_search(
    conn: sqlite3.Connection,
    space: Namespace,
    terms: Sequence[str],
    where: str,
    params: Sequence[object],
    limit: int,
) -> list[tuple[str, float]]:
    """Return the ``limit`` best ``(id, score)`` of namespace ``space`` by BM25.

    Args:
        conn: the connection, in a transaction.
        space: the namespace searched.
        terms: the query's distinct terms, in query order.
        where: extra conditions on ``r`` (the ``search_records`` row), starting with
            `` AND `` (filters); empty for none.
        params: their parameters.
        limit: hits wanted.

    Returns:
        Best first (score ``-bm25()``, positive); ties by id (code-point order).
    """
    if space.n_docs <= 0 or not terms:
        return []
    avgdl = space.total_terms / space.n_docs
    postings: list[tuple[float, list[tuple[int, int]]]] = []
    for term in terms:
        rows = conn.execute(
            "SELECT doc, count(*) FROM search_postings WHERE term = ? GROUP BY doc",
            (prefixed(space.ns, term),),
        ).fetchall()
        if rows:
            postings.append((idf(space.n_docs, len(rows)), rows))
    if not postings:
        return []
    candidates = list(dict.fromkeys(pk for _, rows in postings for pk, _ in rows))
    lengths = dict(conn.execute(
        f"SELECT pk, n_terms FROM search_lengths WHERE pk IN {_IDS}", (json.dumps(candidates),)
    ).fetchall())
    scores: dict[int, float] = {}
    for weight, rows in postings:
        for pk, tf in rows:
            norm = K1 * (1 - B + B * lengths.get(pk, 0) / avgdl)
            scores[pk] = scores.get(pk, 0.0) + weight * (tf * (K1 + 1)) / (tf + norm)
    ranked = sorted(scores, key=scores.__getitem__, reverse=True)
    if not where and len(ranked) > limit:  # only the ties of the last hit can still enter
        floor = scores[ranked[limit - 1]]
        ranked = [pk for pk in ranked if scores[pk] >= floor]
    ids = conn.execute(
        f"SELECT r.pk, r.id FROM search_records AS r WHERE r.pk IN {_IDS}{where}",
        (json.dumps(ranked), *params),
    ).fetchall()
    hits = [(str(rid), scores[pk]) for pk, rid in ids]
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits[:limit]


def rebuild_lexical_index(conn: sqlite3.Connection) -> None:
    """Index every stored record into empty lexical tables and count its namespace's stats.

    Used by the schema migration that introduced namespaces; reads ``search_records`` in
    batches of primary keys, so memory stays bounded on large files.
    """
    conn.execute(
        "INSERT INTO search_namespaces (index_name, collection) "
        "SELECT DISTINCT index_name, collection FROM search_records ORDER BY 1, 2"
    )
    spaces = {(str(r[0]), str(r[1])): int(r[2]) for r in conn.execute(
        "SELECT index_name, collection, ns FROM search_namespaces")}
    last = -1
    while True:
        rows = conn.execute(
            "SELECT pk, index_name, collection, text FROM search_records WHERE pk > ? "
            "ORDER BY pk LIMIT ?",
            (last, _REBUILD_BATCH),
        ).fetchall()
        if not rows:
            return
        last = int(rows[-1][0])
        batches: dict[int, list[tuple[int, str]]] = {}
        for pk, index_name, collection, text in rows:
            batches.setdefault(spaces[(index_name, collection)], []).append((pk, text))
        for ns, records in batches.items():
            index_records(conn, ns, records)
