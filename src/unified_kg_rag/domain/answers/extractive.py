"""Extractive answers: the context's sentences closest to the question, without an LLM.

Sentences are ranked by their score (cosine similarity to the query vector, plus a boost)
and picked greedily, skipping a sentence nearly identical (cosine above ``redundancy``,
0.98: the same sentence repeated by overlapping units, not two sentences that differ in a
date or a name) to one already picked, in the spirit of maximal marginal relevance
(Carbonell & Goldstein, SIGIR 1998) with a hard redundancy cut: over a whole pool
(`select_sentences`, used for messages), or source by source, every source's best before
any source's second (`select_per_source`, used for passages).

Candidates come in tiers by shape (`domain.text.shapes`): sentences first; record lines
(``key: value`` fields, table rows) only after a sentence of their source, or first in a
source without sentences; headings and boilerplate (titles, footers, page numbers) only when
nothing else is there. A structural line can share every word of a question and answer
nothing, so it never outranks the first sentence of its source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "TIER_OF_SHAPE",
    "idf_weights",
    "select_per_source",
    "select_sentences",
    "term_coverage",
]

TIER_OF_SHAPE: dict[str, int] = {"sentence": 0, "record": 1, "heading": 2, "boilerplate": 2}
"""The tier a candidate of each shape is chosen in (lower first)."""


def idf_weights(
    query_terms: Sequence[str], sentences_terms: Sequence[set[str]]
) -> dict[str, float]:
    """Return each query term's IDF over the given sentences: ``log((n + 1) / (df + 0.5))``.

    A term every sentence has weighs little; a rare query term weighs most.

    Args:
        query_terms: the query's distinct lexical terms.
        sentences_terms: each sentence's set of lexical terms.
    """
    n = len(sentences_terms)
    return {t: math.log((n + 1) / (sum(t in s for s in sentences_terms) + 0.5))
            for t in query_terms}  # fmt: skip


def term_coverage(query_terms: Sequence[str], sentences_terms: Sequence[set[str]]) -> list[float]:
    """Return, per sentence, the IDF-weighted share of the query's terms it contains.

    IDF is taken over the given sentences (`idf_weights`).

    Args:
        query_terms: the query's distinct lexical terms.
        sentences_terms: each sentence's set of lexical terms.

    Returns:
        One value in [0, 1] per sentence (0 for all when the query has no terms).
    """
    weights = idf_weights(query_terms, sentences_terms)
    total = sum(weights.values())
    if total <= 0:
        return [0.0] * len(sentences_terms)
    return [sum(w for t, w in weights.items() if t in s) / total for s in sentences_terms]


def select_sentences(
    query_vector: NDArray[np.float32],
    sentence_vectors: NDArray[np.float32],
    k: int,
    *,
    redundancy: float = 0.98,
    min_score: float = 0.0,
    boosts: Sequence[float] | None = None,
    min_relative: float = 0.0,
    asks: Sequence[bool] | None = None,
) -> list[tuple[int, float]]:
    """Pick up to ``k`` sentences most similar to the query, skipping near-duplicates.

    Args:
        query_vector: ``ndarray[d] float32``, L2-normalised.
        sentence_vectors: ``ndarray[n, d] float32``, rows L2-normalised.
        k: how many sentences to pick at most.
        redundancy: a candidate whose cosine with a picked sentence exceeds this is skipped.
        min_score: candidates scoring below this cosine are not picked.
        boosts: added to each sentence's cosine before ranking (e.g. weighted
            `term_coverage`); ``min_score`` applies to the boosted score.
        min_relative: candidates scoring below this share of the best score are not picked,
            so weak sentences are not quoted just to fill ``k``.
        asks: True for a candidate that asks (ends with ``?``); ``min_relative`` is a share
            of the best candidate that does not ask (a message repeating the question does
            not push out its reply).

    Returns:
        ``(row, score)`` pairs, best first; ties broken by lower row (earlier in the context).
    """
    if sentence_vectors.shape[0] == 0 or k <= 0:
        return []
    scores = sentence_vectors @ query_vector
    if boosts is not None:
        scores = scores + np.asarray(boosts, dtype=np.float32)
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    floor = max(min_score, min_relative * _floor_base(list(scores), order, asks))
    picked: list[tuple[int, float]] = []
    for i in order:
        score = float(scores[i])
        if score < floor:
            break
        if any(float(sentence_vectors[i] @ sentence_vectors[j]) > redundancy for j, _ in picked):
            continue
        picked.append((i, score))
        if len(picked) == k:
            break
    return picked


def select_per_source(
    scores: Sequence[float],
    sentence_vectors: NDArray[np.float32],
    *,
    groups: Sequence[str],
    tiers: Sequence[int],
    per_source: int,
    limit: int,
    min_relative: float = 0.0,
    min_first: float = 0.0,
    asks: Sequence[bool] | None = None,
    redundancy: float = 0.98,
) -> list[int]:
    """Pick every source's best candidate, then every source's second, and so on.

    Sources are visited from the one whose best candidate scores highest; each round takes
    one more candidate from every source until ``per_source`` rounds are done or ``limit``
    candidates are picked. Every source the strategy returned is read and the closest
    sentence of each is quoted before any source's second: on MuSiQue the sentence holding
    a multi-hop answer is often not the closest to the question (it answers the last hop),
    but it is among the two closest of its passage (issue 16, ``bench_extractive.py``).

    A source's first pick is its best sentence (tier 0) when it has one, else its best
    record (tier 1: a table row, a ``key: value`` field); its later picks are its best
    remaining sentences or records alike. Headings and boilerplate (tier 2) are picked only
    when no source has anything else. A candidate nearly identical (cosine above
    ``redundancy``) to one already picked is skipped (the same sentence repeated by
    overlapping units).

    Args:
        scores: ``n`` candidate scores (higher is closer).
        sentence_vectors: ``ndarray[n, d] float32``, rows L2-normalised.
        groups: ``n`` source keys, one per candidate.
        tiers: ``n`` tiers, one per candidate (`TIER_OF_SHAPE`).
        per_source: most candidates picked from one source.
        limit: most candidates picked in all.
        min_relative: a source's second and later candidates scoring below this share of
            the best candidate's score are not picked.
        min_first: a source whose best candidate scores below this share of the best
            candidate's score gives none (the best source always gives one; neither
            share applies when the best score is not positive).
        asks: ``n`` flags, True for a candidate that asks (ends with ``?``): it may be
            picked, but the floors are shares of the best candidate that does not ask, so
            a message repeating the question does not push out its reply.
        redundancy: a candidate whose cosine with a picked one exceeds this is skipped.

    Returns:
        Picked rows, highest score first.
    """
    n = len(scores)
    if n == 0 or per_source <= 0 or limit <= 0:
        return []
    lowest_tier = min(tiers)
    by_source: dict[str, list[int]] = {}
    for row in range(n):
        by_source.setdefault(groups[row], []).append(row)
    queues: list[list[int]] = []
    for rows in by_source.values():
        usable = [r for r in rows if tiers[r] < 2] if lowest_tier < 2 else rows
        if not usable:
            continue
        ranked = sorted(usable, key=lambda r: (-float(scores[r]), r))
        head_tier = min(tiers[r] for r in usable)
        head = next(r for r in ranked if tiers[r] == head_tier)  # a sentence when it has one
        queues.append([head, *(r for r in ranked if r != head)])
    queues.sort(key=lambda q: (-float(scores[q[0]]), q[0]))
    best = _floor_base(scores, [q[0] for q in queues], asks)
    floors = (min_first * best, min_relative * best) if best > 0 else (-math.inf, -math.inf)
    picked: list[int] = []
    for round_ in range(per_source):
        floor = floors[0] if round_ == 0 else floors[1]
        for queue in queues:
            while queue and len(picked) < limit:
                row = queue.pop(0)
                if float(scores[row]) < floor:
                    queue.clear()
                    break
                vector = sentence_vectors[row]
                if not any(float(vector @ sentence_vectors[p]) > redundancy for p in picked):
                    picked.append(row)
                    break
    return sorted(picked, key=lambda r: (-float(scores[r]), r))


def _floor_base(scores: Sequence[float], rows: Sequence[int], asks: Sequence[bool] | None) -> float:
    """The best score among ``rows`` that state something (an echo of the question asks)."""
    stating = [r for r in rows if asks is None or not asks[r]] or list(rows)
    return max((float(scores[r]) for r in stating), default=0.0)
