"""Okapi BM25 over PostgreSQL, with exact pruning of uninformative query terms.

The score is SQLite FTS5's ``bm25()`` (k1 = 1.2, b = 0.75; IDF ``ln((N - n + 0.5) / (n + 0.5))``
floored at 1e-6; the same order of floating-point operations), so both stores rank alike.
Term statistics come from ``lexical_stats``/``collection_stats``; term frequencies from each
record's ``term_freqs`` (one JSONB lookup per record and query term).

Scoring is linear in the records that match, and a query term found in half the collection
matches half of it while adding almost nothing to any score. So the search first matches
only the *essential* terms (those found in at most `ESSENTIAL_DF_SHARE` of the records, most
informative first) while scoring every term, then checks the MaxScore bound (Turtle and
Flood, 1995): a term adds less than ``idf * (k1 + 1)`` to any score, so a record matching
none of the essential terms scores below the sum of that bound over the other terms. When
the last of the ``limit`` hits found scores above it, no other record can enter the list and
the result is exact; otherwise the search runs again matching every term.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from psycopg import sql

from unified_kg_rag.adapters.postgres.database import Conn

__all__ = ["ESSENTIAL_DF_SHARE", "K1", "TermStats", "bm25_search", "idf"]

K1 = 1.2
B = 0.75
ESSENTIAL_DF_SHARE = 0.05
"""Terms found in at most this share of a collection's records are matched first."""


def idf(n_docs: int, df: int) -> float:
    """Return FTS5's BM25 inverse document frequency of a term found in ``df`` of ``n_docs``."""
    value = math.log((n_docs - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


@dataclass(frozen=True)
class TermStats:
    """The statistics one query needs: records, mean length (terms), document frequencies."""

    n_docs: int
    avgdl: float
    df: dict[str, int]


async def term_stats(conn: Conn, collection: str, terms: Sequence[str]) -> TermStats | None:
    """Return the collection's statistics for ``terms`` (None when it holds no record)."""
    row = await (await conn.execute(
        "SELECT n_docs, total_terms FROM collection_stats WHERE collection = %s",
        (collection,))).fetchone()
    if row is None or int(row[0]) <= 0:
        return None
    rows = await (await conn.execute(
        "SELECT term, df FROM lexical_stats WHERE collection = %s AND term = ANY(%s) "
        "AND df > 0", (collection, list(terms)))).fetchall()
    n_docs = int(row[0])
    return TermStats(n_docs=n_docs, avgdl=float(row[1]) / n_docs,
                     df={str(t): int(df) for t, df in rows})


_SCORE = """
SELECT r.id, (
    SELECT sum(q.idf * ((f.tf * 2.2::float8)
                        / (f.tf + 1.2::float8 * (1::float8 - 0.75::float8
                                                  + 0.75::float8 * r.n_terms / %s::float8))))
    FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS q(term, idf, n)
    CROSS JOIN LATERAL (SELECT (r.term_freqs ->> q.term)::float8 AS tf) AS f
    WHERE f.tf IS NOT NULL
) AS score
FROM search_records AS r
WHERE r.collection = %s AND r.lexemes @@ %s::tsquery{where}
ORDER BY score DESC, r.id
LIMIT %s
"""


async def bm25_search(
    conn: Conn,
    collection: str,
    lexemes: Sequence[str],
    tsquery_of: Callable[[Sequence[str]], str],
    where: sql.Composable,
    params: list[object],
    limit: int,
) -> list[tuple[str, float]]:
    """Return the ``limit`` best ``(id, score)`` by BM25 for the query ``lexemes``.

    Args:
        conn: a connection with ``search_path`` on the index schema.
        collection: the collection.
        lexemes: the query's distinct terms, in query order.
        tsquery_of: a function turning a list of terms into a tsquery literal (OR).
        where: extra conditions on ``r`` (filters), starting with `` AND ``.
        params: their parameters.
        limit: hits wanted.

    Returns:
        Best first; ties by id (code-point order).
    """
    stats = await term_stats(conn, collection, lexemes)
    if stats is None:
        return []
    scored = [(t, idf(stats.n_docs, stats.df[t])) for t in lexemes if t in stats.df]
    if not scored:
        return []
    terms = [t for t, _ in scored]
    idfs = [w for _, w in scored]
    informative = sorted(scored, key=lambda p: (-p[1], p[0]))
    cutoff = ESSENTIAL_DF_SHARE * stats.n_docs
    essential = [t for t, _ in informative if stats.df[t] <= cutoff] or [informative[0][0]]
    statement = sql.SQL(_SCORE).format(where=where)

    async def run(match: list[str]) -> list[tuple[str, float]]:
        args = [stats.avgdl, terms, idfs, collection, tsquery_of(match), *params, limit]
        rows = await (await conn.execute(statement, args)).fetchall()
        return [(str(r[0]), float(r[1])) for r in rows]

    if len(essential) < len(terms):
        hits = await run(essential)
        bound = sum(w * (K1 + 1) for t, w in scored if t not in set(essential))
        if len(hits) == limit and hits[-1][1] > bound:
            return hits
    return await run(terms)
