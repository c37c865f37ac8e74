"""The rare-term guarantee of `auto`: passages holding the question's rare terms stay in context.

A question that names something few passages mention (a codename, a part number, a surname,
a year) is best served by an exact match: BM25 ranks that passage first, while a graph walk
(`ppr`'s concept graph keeps no term below ``graph.lazy.min_df``) or a dense search may rank
it below the context's cut. `auto` therefore keeps, whatever strategy it routed to, the best
BM25 matches of the question's *rare* terms in the context (`StrategyResult.pinned`).

A term is rare when it is one of the question's lexical terms (`lexical_query_terms`: no
stopwords) and at least one but at most ``query.auto.rare_term_max_df`` text units of the
index hold it (its document frequency, read from the lexical index, the whole index whatever
the query's filters). The kept passages are the best ``query.auto.rare_term_slots`` of a BM25
search over the rare terms alone, the query's filters applied. This is not a strategy and is
not registered.
"""

from __future__ import annotations

from unified_kg_rag.domain.models import Collection, SearchMode
from unified_kg_rag.domain.text.analysis import lexical_query_terms
from unified_kg_rag.retrieval.strategies.base import Candidate, QueryContext
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate

__all__ = ["MAX_PROBED_TERMS", "rare_term_passages", "rare_terms"]

MAX_PROBED_TERMS = 16
"""Most question terms whose document frequency is read (one lexical search each)."""


async def rare_terms(ctx: QueryContext) -> list[str]:
    """Return the question's rare terms, in question order.

    One lexical search of at most ``rare_term_max_df + 1`` hits per distinct question term
    (the first `MAX_PROBED_TERMS`), without the query's filters: a term whose search returns
    between 1 and ``rare_term_max_df`` hits is rare.

    Raises:
        StoreError: the lexical index failed.
    """
    max_df = ctx.config.auto.rare_term_max_df
    out: list[str] = []
    for term in lexical_query_terms(ctx.question)[:MAX_PROBED_TERMS]:
        hits = await ctx.stores.search.search(
            Collection.TEXT_UNITS, query_text=term, mode=SearchMode.LEXICAL, k=max_df + 1
        )
        if 1 <= len(hits) <= max_df:
            out.append(term)
    return out


async def rare_term_passages(ctx: QueryContext) -> list[Candidate]:
    """Return the passages `auto` keeps for the question's rare terms, best first.

    The best ``query.auto.rare_term_slots`` text units of a BM25 search over the rare terms
    (`rare_terms`) with the query's filters; none when the guarantee is off (0 slots), the
    search mode is ``vector`` (no lexical matching asked for), the query's deadline has
    passed, or the question has no rare term. ``ctx.metadata["rare_terms"]`` records the
    terms and the passages' ids.

    Raises:
        StoreError: the lexical index failed.
    """
    slots = ctx.config.auto.rare_term_slots
    if slots == 0 or ctx.config.search_mode == "vector" or ctx.out_of_time:
        return []
    terms = await rare_terms(ctx)
    if not terms:
        return []
    hits = await ctx.stores.search.search(
        Collection.TEXT_UNITS, query_text=" ".join(terms), mode=SearchMode.LEXICAL,
        filters=ctx.filters or None, k=slots,
    )  # fmt: skip
    kept = [text_unit_candidate(h) for h in hits]
    ctx.metadata["rare_terms"] = {"terms": terms, "passages": [c.id for c in kept]}
    return kept
