"""LLM-free evaluation metrics: retrieval recall@k, answer-in-context, latency percentiles.

Recall@k follows HippoRAG's definition: per question, the share of its supporting passages
found among the first k distinct retrieved documents, averaged over questions. Answer
normalisation follows SQuAD's evaluation script (lower case, punctuation and English articles
removed, whitespace collapsed).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence

import numpy as np

__all__ = ["answer_in_text", "normalize_answer", "percentile", "recall_at_k"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—"}


def normalize_answer(text: str) -> str:
    """Return ``text`` lower-cased, NFKC, without punctuation, English articles or extra spaces."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_in_text(answers: Sequence[str], text: str) -> bool:
    """Return True when any normalised answer occurs in the normalised ``text`` (as words)."""
    haystack = f" {normalize_answer(text)} "
    return any((needle := normalize_answer(a)) and f" {needle} " in haystack for a in answers)


def recall_at_k(retrieved: Sequence[set[str]], supporting: Sequence[str], k: int) -> float:
    """Share of ``supporting`` items matched by the first ``k`` retrieved documents.

    Args:
        retrieved: one set of names per retrieved document (its path, stem, title, id), in
            rank order, distinct documents.
        supporting: the supporting passages' names.
        k: cut-off.

    Returns:
        A value in [0, 1]; 1.0 when ``supporting`` is empty is avoided: such questions should be
        left out by the caller (this returns 0.0 for them).
    """
    if not supporting:
        return 0.0
    names: set[str] = set()
    for doc in retrieved[:k]:
        names |= doc
    found = sum(1 for s in supporting if s.casefold() in names)
    return found / len(supporting)


def percentile(values: Sequence[float], q: float) -> float:
    """Return the ``q``-th percentile (0-100, linear interpolation) of ``values``; 0 when empty."""
    if not values:
        return 0.0
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))
