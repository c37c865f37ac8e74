"""Lexical search on PostgreSQL: lexemes, BM25 statistics, and ranking.

Lexemes: the terms of `domain.text.analysis.lexical_terms` written as ``tsvector``/``tsquery``
literals (PostgreSQL's parser never re-tokenizes them), so both stores match the same terms.
Statistics: per-collection document frequencies and lengths, changed in the same transaction
as the records. Ranking: Okapi BM25 with exact pruning of uninformative query terms, or
PostgreSQL's ``ts_rank_cd``.

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
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import sql

from unified_kg_rag.adapters.postgres.database import Conn

__all__ = [
    "ESSENTIAL_DF_SHARE",
    "K1",
    "TermStats",
    "bm25_search",
    "change_stats",
    "count_stemmed_terms",
    "idf",
    "indexable",
    "ts_rank_cd_search",
    "tsquery_literal",
    "tsvector_literal",
]

K1 = 1.2
B = 0.75
ESSENTIAL_DF_SHARE = 0.05
"""Terms found in at most this share of a collection's records are matched first."""
_MAX_LEXEME_BYTES = 2046
_MAX_POSITION = 16383
_MAX_POSITIONS = 256


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def indexable(term: str) -> bool:
    """Return whether PostgreSQL can store ``term`` as a lexeme (1 to 2,046 bytes)."""
    return 0 < len(term.encode("utf-8")) <= _MAX_LEXEME_BYTES


def tsvector_literal(terms: Sequence[str]) -> tuple[str, dict[str, int], int]:
    """Return ``(tsvector literal, term -> frequency, number of terms)`` for ``terms``.

    Positions are 1-based (PostgreSQL keeps at most 256 per lexeme, each at most 16,383);
    frequencies and the count are exact. Terms over PostgreSQL's 2,046-byte lexeme limit are
    left out of all three.
    """
    positions: dict[str, list[int]] = defaultdict(list)
    n = 0
    for term in terms:
        if not indexable(term):
            continue
        n += 1
        positions[term].append(min(n, _MAX_POSITION))
    literal = " ".join(
        f"{_quote(t)}:{','.join(map(str, dict.fromkeys(p[:_MAX_POSITIONS])))}"
        for t, p in positions.items()
    )
    return literal, {t: len(p) for t, p in positions.items()}, n


def tsquery_literal(terms: Sequence[str]) -> str:
    """Return the tsquery matching any of ``terms`` (``'a' | 'b'``); empty for no terms."""
    return " | ".join(_quote(t) for t in terms if indexable(t))



async def count_stemmed_terms(conn: Conn, collection: str, ids: list[str]) -> None:
    """Fill ``term_freqs``/``n_terms`` of records ``ids`` from the lexemes PostgreSQL made.

    With a language configuration the stemmed terms exist only in the database.
    """
    await conn.execute(
        "UPDATE search_records AS r SET term_freqs = s.freqs, n_terms = s.n FROM ("
        " SELECT r2.id, coalesce(jsonb_object_agg(l.lexeme, cardinality(l.positions)) "
        "   FILTER (WHERE l.lexeme IS NOT NULL), '{}') AS freqs,"
        "  coalesce(sum(cardinality(l.positions)), 0) AS n"
        " FROM search_records AS r2 LEFT JOIN LATERAL unnest(r2.lexemes) AS l ON true"
        " WHERE r2.collection = %s AND r2.id = ANY(%s) GROUP BY r2.id) AS s "
        "WHERE r.collection = %s AND r.id = s.id",
        (collection, ids, collection),
    )


async def change_stats(conn: Conn, collection: str, ids: list[str], *, sign: int) -> None:
    """Add (``sign`` 1) or remove (-1) the BM25 statistics of the stored records ``ids``.

    Called in the same transaction as the records' writes: before a replace or delete with
    -1, after an insert with 1.
    """
    c = collection
    await conn.execute(
        "INSERT INTO lexical_stats AS s (collection, term, df) "
        "SELECT %s, k.term, %s * count(*) FROM search_records AS r, "
        "jsonb_object_keys(r.term_freqs) AS k(term) "
        "WHERE r.collection = %s AND r.id = ANY(%s) GROUP BY k.term ORDER BY k.term "
        "ON CONFLICT (collection, term) DO UPDATE SET df = s.df + excluded.df",
        (c, sign, c, ids),
    )
    await conn.execute(
        "INSERT INTO collection_stats AS s (collection, n_docs, total_terms) "
        "SELECT %s, %s * count(*), %s * coalesce(sum(r.n_terms), 0) FROM search_records AS r "
        "WHERE r.collection = %s AND r.id = ANY(%s) "
        "ON CONFLICT (collection) DO UPDATE SET n_docs = s.n_docs + excluded.n_docs, "
        "total_terms = s.total_terms + excluded.total_terms",
        (c, sign, sign, c, ids),
    )
    if sign < 0:
        await conn.execute(
            "DELETE FROM lexical_stats WHERE collection = %s AND df <= 0 AND term IN ("
            "SELECT jsonb_object_keys(term_freqs) FROM search_records "
            "WHERE collection = %s AND id = ANY(%s))",
            (c, c, ids),
        )


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
    where: sql.Composable,
    params: list[object],
    limit: int,
) -> list[tuple[str, float]]:
    """Return the ``limit`` best ``(id, score)`` by BM25 for the query ``lexemes``.

    Args:
        conn: a connection with ``search_path`` on the index schema.
        collection: the collection.
        lexemes: the query's distinct terms, in query order.
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
        args = [stats.avgdl, terms, idfs, collection, tsquery_literal(match), *params, limit]
        rows = await (await conn.execute(statement, args)).fetchall()
        return [(str(r[0]), float(r[1])) for r in rows]

    if len(essential) < len(terms):
        hits = await run(essential)
        bound = sum(w * (K1 + 1) for t, w in scored if t not in set(essential))
        if len(hits) == limit and hits[-1][1] > bound:
            return hits
    return await run(terms)


async def ts_rank_cd_search(
    conn: Conn,
    collection: str,
    lexemes: Sequence[str],
    where: sql.Composable,
    params: list[object],
    limit: int,
) -> list[tuple[str, float]]:
    """Return the ``limit`` best ``(id, score)`` by PostgreSQL's ``ts_rank_cd``.

    Cover density, without inverse document frequency (``lexical_ranking: ts_rank_cd``).
    """
    statement = sql.SQL(
        "SELECT r.id, ts_rank_cd(r.lexemes, q.tsq) AS score "
        "FROM search_records AS r, (SELECT %s::tsquery AS tsq) AS q "
        "WHERE r.collection = %s AND r.lexemes @@ q.tsq{where} "
        "ORDER BY score DESC, r.id LIMIT %s"
    ).format(where=where)
    args = [tsquery_literal(lexemes), collection, *params, limit]
    rows = await (await conn.execute(statement, args)).fetchall()
    return [(str(r[0]), float(r[1])) for r in rows]
