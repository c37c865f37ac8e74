"""Bridge terms of a multi-hop question: names the top passages hold and the question does not.

A multi-hop question ("the spouse of the director of *Film X*") names its first hop only; the
passage that answers the first hop names the *bridge* entity (the director), whose own passage
holds the answer. Without an LLM, the `iterative` strategy takes bridge candidates from the
terms (entity names or `lazy` concepts) of the first round's top passages, ranks them here,
and searches again with them. Pure ranking, no I/O.

Source: seed 000 §6.3 (round 0 finds the passage naming the bridge entity, not the passage
about it); the weighting is this module's own, chosen on MuSiQue (`iterative` strategy).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["BridgeTerm", "rank_bridge_terms", "term_words"]

_WORD = re.compile(r"\w+")


def term_words(text: str) -> tuple[str, ...]:
    """Return the case-folded words of ``text`` (runs of word characters), in order."""
    return tuple(_WORD.findall(text.casefold()))


@dataclass(frozen=True)
class BridgeTerm:
    """A ranked bridge term.

    Attributes:
        term: the term as the index writes it.
        score: ``idf × Σ 1 / rank`` over the top passages holding it (higher is better).
        passages: how many of the top passages hold it.
    """

    term: str
    score: float
    passages: int


def _inside(words: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """True when ``words`` occur contiguously in ``other``."""
    n = len(words)
    return n > 0 and any(other[i : i + n] == words for i in range(len(other) - n + 1))


def rank_bridge_terms(
    passages: Sequence[Iterable[str]],
    question: str,
    *,
    document_frequency: Mapping[str, int],
    n_units: int,
    exclude: Iterable[str] = (),
    limit: int = 5,
) -> list[BridgeTerm]:
    """Rank the terms of the top passages as bridges for ``question``.

    A term scores ``log((1 + n_units) / (1 + df)) × Σ_p 1 / rank_p`` over the top passages
    ``p`` holding it (rank 1 = best passage): a rare term held by the best passages first.
    Dropped: terms without a word character, terms whose every word is in the question
    (the question names them already: they are not a next hop), terms in ``exclude``
    (compared case-folded: already followed), and a term whose words lie inside a better
    kept term's (``Paris`` after ``Paris Hilton``) or hold one. Ties: more passages, then the
    longer term, then the term.

    Args:
        passages: the terms of each top passage, best passage first.
        question: the question (its words are not bridges).
        document_frequency: term → how many text units hold it (missing: 1).
        n_units: text units in the index (> 0).
        exclude: terms already followed.
        limit: most terms returned (0: none).

    Returns:
        At most ``limit`` terms, best first.
    """
    asked = set(term_words(question))
    skip = {term_words(t) for t in exclude}
    credit: dict[str, float] = {}
    count: dict[str, int] = {}
    for rank, terms in enumerate(passages, start=1):
        for term in dict.fromkeys(terms):
            words = term_words(term)
            if not words or words in skip or all(w in asked for w in words):
                continue
            credit[term] = credit.get(term, 0.0) + 1.0 / rank
            count[term] = count.get(term, 0) + 1
    scored = []
    for term, weight in credit.items():
        df = max(1, document_frequency.get(term, 1))
        idf = math.log((1 + n_units) / (1 + df))
        scored.append(BridgeTerm(term, weight * idf, count[term]))
    scored.sort(key=lambda b: (-b.score, -b.passages, -len(b.term), b.term))
    kept: list[BridgeTerm] = []
    kept_words: list[tuple[str, ...]] = []
    for b in scored:
        if len(kept) >= limit:
            break
        words = term_words(b.term)
        if any(_inside(words, k) or _inside(k, words) for k in kept_words):
            continue
        kept.append(b)
        kept_words.append(words)
    return kept
