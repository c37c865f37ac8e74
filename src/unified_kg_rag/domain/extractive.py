"""Extractive answers: the context's sentences closest to the question, without an LLM.

Sentences are ranked by cosine similarity to the query vector and picked greedily, skipping a
sentence nearly identical (cosine above ``redundancy``) to one already picked, in the spirit of
maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998) with a hard redundancy cut.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["select_sentences"]


def select_sentences(
    query_vector: NDArray[np.float32],
    sentence_vectors: NDArray[np.float32],
    k: int,
    *,
    redundancy: float = 0.92,
    min_score: float = 0.0,
) -> list[tuple[int, float]]:
    """Pick up to ``k`` sentences most similar to the query, skipping near-duplicates.

    Args:
        query_vector: ``ndarray[d] float32``, L2-normalised.
        sentence_vectors: ``ndarray[n, d] float32``, rows L2-normalised.
        k: how many sentences to pick at most.
        redundancy: a candidate whose cosine with a picked sentence exceeds this is skipped.
        min_score: candidates scoring below this cosine are not picked.

    Returns:
        ``(row, score)`` pairs, best first; ties broken by lower row (earlier in the context).
    """
    if sentence_vectors.shape[0] == 0 or k <= 0:
        return []
    scores = sentence_vectors @ query_vector
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    picked: list[tuple[int, float]] = []
    for i in order:
        score = float(scores[i])
        if score < min_score:
            break
        if any(float(sentence_vectors[i] @ sentence_vectors[j]) > redundancy for j, _ in picked):
            continue
        picked.append((i, score))
        if len(picked) == k:
            break
    return picked
