"""The weak-match verdict of an extractive answer: do its quotes answer the question?

Without an LLM nothing reads the quotes, so the answer must say when the closest sentences
are still far from the question. Two measures of the best quoted sentences (the caller
picks them: `retrieval.extractive` takes the three best), in [0, 1] and [-1, 1]:

- *coverage*: the IDF-weighted share of the question's content terms (`lexical_query_terms`:
  stopwords dropped) that occur in the quoted sentences together, IDF taken over every
  candidate sentence of the context (`domain.answers.extractive.term_coverage`'s weights),
  so a rare question term that no quote holds weighs most;
- *similarity*: the highest cosine between the question's embedding and a quoted sentence's.

The verdict is ``weak`` when coverage is below ``min_coverage`` or similarity below
``min_similarity``, unless one quote holds every content term of the question (a code
word or a name asked alone embeds far from the sentence stating it, yet that sentence is
the answer; terms spread over quotes of different sources do not count) (`judge_match`).
The thresholds are calibrated on held-out questions (``benchmarks/bench_extractive.py
--calibrate``; see the querying guide). A weak answer is still given (the closest
sentences), under `WEAK_MATCH_LEAD`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.answers.extractive import idf_weights

__all__ = ["WEAK_MATCH_LEAD", "MatchVerdict", "describe_match", "judge_match", "quoted_coverage"]

_ALL_TERMS = 0.999
"""Coverage from which the quotes hold every question term (rounding aside)."""

WEAK_MATCH_LEAD = "No passage answers this well; the closest are:"
"""The line a weak extractive answer starts its quotes with."""


class MatchVerdict(BaseModel):
    """How well an extractive answer's quotes match the question.

    Attributes:
        verdict: ``strong`` or ``weak``.
        coverage: IDF-weighted share of the question's content terms the quotes hold, [0, 1].
        similarity: highest cosine between the question and a quote, [-1, 1].
    """

    model_config = ConfigDict(frozen=True)

    verdict: Literal["strong", "weak"]
    coverage: float
    similarity: float


def quoted_coverage(
    query_terms: Sequence[str], candidate_terms: Sequence[set[str]], quoted: Sequence[int]
) -> float:
    """Return the IDF-weighted share of ``query_terms`` the ``quoted`` candidates hold together.

    Args:
        query_terms: the question's distinct content terms.
        candidate_terms: each candidate sentence's set of lexical terms (IDF is taken over
            these: `domain.answers.extractive.idf_weights`).
        quoted: rows of ``candidate_terms`` that were quoted.

    Returns:
        A share in [0, 1]; 0 when the question has no terms or nothing is quoted.
    """
    weights = idf_weights(query_terms, candidate_terms)
    total = sum(weights.values())
    if total <= 0 or not quoted:
        return 0.0
    held = set().union(*(candidate_terms[i] for i in quoted))
    return sum(w for t, w in weights.items() if t in held) / total


def judge_match(
    coverage: float,
    similarity: float,
    *,
    min_coverage: float,
    min_similarity: float,
    one_quote_coverage: float = 0.0,
) -> MatchVerdict:
    """Return the verdict: ``weak`` when either measure is below its threshold.

    A quote holding every question term on its own (``one_quote_coverage`` 1) makes the
    match ``strong`` whatever the similarity. On the calibration questions of
    ``benchmarks/bench_extractive.py`` no unanswerable question reached a coverage above
    0.7 even over its three quotes together, so the rule changed no verdict there.

    Args:
        coverage: `quoted_coverage` of the quotes together, [0, 1].
        similarity: highest question-quote cosine, [-1, 1].
        min_coverage: coverage below this is weak.
        min_similarity: similarity below this is weak.
        one_quote_coverage: the highest `quoted_coverage` of a single quote, [0, 1].
    """
    held_all = one_quote_coverage >= _ALL_TERMS
    weak = not held_all and (coverage < min_coverage or similarity < min_similarity)
    return MatchVerdict(
        verdict="weak" if weak else "strong",
        coverage=round(coverage, 3),
        similarity=round(similarity, 3),
    )


def describe_match(metadata: Mapping[str, object]) -> str | None:
    """Return the verdict line a reader sees under an extractive answer (None: no verdict).

    ``metadata`` is a `RAGOutput.metadata`; its ``match`` entry is a dumped `MatchVerdict`.
    """
    match = metadata.get("match")
    if not isinstance(match, Mapping) or match.get("verdict") not in ("strong", "weak"):
        return None
    verdict = str(match["verdict"])
    how = (
        "the quotes answer the question closely"
        if verdict == "strong"
        else "no passage answers this question well"
    )
    return (
        f"match: {verdict}, {how} (question terms covered {_num(match.get('coverage'))}, "
        f"similarity {_num(match.get('similarity'))})"
    )


def _num(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "?"
