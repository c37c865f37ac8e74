"""Extractive answers: the context's sentences closest to the question, without an LLM.

Sentences are ranked by cosine similarity to the query vector and picked greedily, skipping a
sentence nearly identical (cosine above ``redundancy``, 0.98: the same sentence repeated by
overlapping units, not two sentences that differ in a date or a name) to one already picked,
in the spirit of maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998) with a hard
redundancy cut.

Candidates come in tiers by shape (`domain.text.shapes`): sentences first; record lines
(``key: value`` fields, table rows) only after them, to fill what sentences leave; headings
and boilerplate (titles, footers, page numbers) only when nothing else is there. A structural
line can share every word of a question and answer nothing, so it never outranks a sentence
(`select_tiered`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["TIER_OF_SHAPE", "select_sentences", "select_tiered", "term_coverage"]

TIER_OF_SHAPE: dict[str, int] = {"sentence": 0, "record": 1, "heading": 2, "boilerplate": 2}
"""The tier a candidate of each shape is chosen in (lower first)."""


def term_coverage(query_terms: Sequence[str], sentences_terms: Sequence[set[str]]) -> list[float]:
    """Return, per sentence, the IDF-weighted share of the query's terms it contains.

    IDF is computed over the given sentences (``log((n + 1) / (df + 0.5))``), so a term
    every sentence has counts little and a rare query term counts most.

    Args:
        query_terms: the query's distinct lexical terms.
        sentences_terms: each sentence's set of lexical terms.

    Returns:
        One value in [0, 1] per sentence (0 for all when the query has no terms).
    """
    n = len(sentences_terms)
    weights = {
        t: math.log((n + 1) / (sum(t in s for s in sentences_terms) + 0.5)) for t in query_terms
    }
    total = sum(weights.values())
    if total <= 0:
        return [0.0] * n
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

    Returns:
        ``(row, score)`` pairs, best first; ties broken by lower row (earlier in the context).
    """
    if sentence_vectors.shape[0] == 0 or k <= 0:
        return []
    scores = sentence_vectors @ query_vector
    if boosts is not None:
        scores = scores + np.asarray(boosts, dtype=np.float32)
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    floor = max(min_score, min_relative * float(scores[order[0]]))
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


def select_tiered(
    query_vector: NDArray[np.float32],
    sentence_vectors: NDArray[np.float32],
    k: int,
    *,
    tiers: Sequence[int],
    boosts: Sequence[float] | None = None,
    min_relative: float = 0.0,
    redundancy: float = 0.98,
) -> list[tuple[int, float]]:
    """Pick up to ``k`` candidates tier by tier (`select_sentences` within each tier).

    Tier 0 (sentences) is picked first. Tier 1 (records) fills the places left, keeping
    only candidates scoring at least ``min_relative`` times the best tier-0 score (their
    own best when tier 0 is empty). Tier 2 (headings, boilerplate) is used only when the
    lower tiers hold no candidate at all.

    Args:
        query_vector: ``ndarray[d] float32``, L2-normalised.
        sentence_vectors: ``ndarray[n, d] float32``, rows L2-normalised.
        k: how many candidates to pick at most.
        tiers: ``n`` tiers, one per candidate (`TIER_OF_SHAPE`).
        boosts: added to each candidate's cosine before ranking.
        min_relative: candidates below this share of the reference best are not picked.
        redundancy: a candidate whose cosine with a picked one exceeds this is skipped.

    Returns:
        ``(row, score)`` pairs: tier 0's best first, then tier 1's; rows index the input.
    """
    picked: list[tuple[int, float]] = []
    floor: float | None = None
    for tier in sorted(set(tiers)):
        if len(picked) >= k or (tier >= 2 and picked):
            break
        rows = [i for i, t in enumerate(tiers) if t == tier]
        chosen = select_sentences(
            query_vector, sentence_vectors[rows], k - len(picked), redundancy=redundancy,
            boosts=None if boosts is None else [boosts[i] for i in rows],
            min_relative=min_relative if floor is None else 0.0,
            min_score=0.0 if floor is None else floor,
        )  # fmt: skip
        picked += [(rows[i], score) for i, score in chosen]
        if floor is None and chosen:
            floor = min_relative * chosen[0][1]
    return picked
