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

__all__ = ["NAME_BOOST", "BridgeTerm", "is_written_as_name", "rank_bridge_terms", "term_words"]

_WORD = re.compile(r"\w+")
_MINOR = frozenset({"of", "the", "and", "de", "a", "an", "in", "on", "for", "to", "von", "van",
                    "la", "le", "du", "del", "da", "di", "at", "by"})  # fmt: skip

NAME_BOOST = 3.0
"""Score factor of a term its passage writes as a name (capitalised): a bridge is an entity,
and a concept such as ``book written`` is not (on MuSiQue-100 the boost lifted recall@10)."""


def is_written_as_name(term: str, text: str) -> bool:
    """True when ``text`` writes ``term`` (matched case-insensitively, whole words) as a name.

    A name: every word of an occurrence starts with an upper-case letter (or a digit), the
    minor words of names (``of``, ``the``, ``de`` ...) aside, and not every word is minor.
    """
    words = term_words(term)
    if not words:
        return False
    pattern = r"(?<!\w)" + r"\W+".join(re.escape(w) for w in words) + r"(?!\w)"
    for m in re.finditer(pattern, text, re.IGNORECASE):
        found = _WORD.findall(m.group(0))
        major = [w for w in found if w.casefold() not in _MINOR]
        if major and all(w[0].isupper() or w[0].isdigit() for w in major):
            return True
    return False


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


def _singular(word: str) -> str:
    """Drop an English plural ``s`` (``siblings`` → ``sibling``; not ``ss``, not short words)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


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
    texts: Sequence[str] | None = None,
    name_boost: float = NAME_BOOST,
) -> list[BridgeTerm]:
    """Rank the terms of the top passages as bridges for ``question``.

    A term scores ``log((1 + n_units) / (1 + df)) × Σ_p 1 / rank_p`` over the top passages
    ``p`` holding it (rank 1 = best passage): a rare term held by the best passages first.

    Dropped: terms without a word character; terms whose every word is in the question, an
    English plural ``s`` aside (the question names them already: not a next hop); terms
    whose words lie inside a term of ``exclude`` or hold one (case-folded: already followed,
    ``Tobias`` after ``Tobias Quillfeather``); and a term whose words lie inside a better
    kept term's (``Paris`` after ``Paris Hilton``) or hold one. With ``texts``, a passage
    credits ``name_boost / rank`` instead of ``1 / rank`` to a term it writes as a name
    (`is_written_as_name`). Ties: more passages, then the longer term, then the term.

    Args:
        passages: the terms of each top passage, best passage first.
        question: the question (its words are not bridges).
        document_frequency: term → how many text units hold it (missing: 1).
        n_units: text units in the index (> 0).
        exclude: terms already followed.
        limit: most terms returned (0: none).
        texts: the passages' texts, in the order of ``passages`` (None: no name boost).
        name_boost: credit factor of a term written as a name (>= 0).

    Returns:
        At most ``limit`` terms, best first.
    """
    asked = {_singular(w) for w in term_words(question)}
    skip = [w for w in (term_words(t) for t in exclude) if w]
    credit: dict[str, float] = {}
    count: dict[str, int] = {}
    for rank, terms in enumerate(passages, start=1):
        for term in dict.fromkeys(terms):
            words = term_words(term)
            if not words or all(_singular(w) in asked for w in words) or any(
                _inside(words, k) or _inside(k, words) for k in skip
            ):
                continue
            boost = 1.0
            if texts is not None and rank <= len(texts) and is_written_as_name(
                term, texts[rank - 1]
            ):
                boost = name_boost
            credit[term] = credit.get(term, 0.0) + boost / rank
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
