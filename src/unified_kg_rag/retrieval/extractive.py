"""The extractive answer (no LLM): the context's sentences closest to the question, quoted.

Candidates are the sentences of every packed source (not the first few: the passage holding
the answer may rank last), cut by `domain.text.sentences` and shaped by
`domain.text.shapes`; a transcript passage offers its messages, cited by ``[n.m]``. They are
scored by cosine with the question plus the weighted question-term coverage, picked tier by
tier (sentences, then records; headings and footers only when nothing else is there:
`domain.answers.extractive.select_tiered`), and judged (`domain.answers.match`): a weak
match is said so before the quotes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.answers.extractive import TIER_OF_SHAPE, select_tiered, term_coverage
from unified_kg_rag.domain.answers.match import (
    WEAK_MATCH_LEAD,
    MatchVerdict,
    judge_match,
    quoted_coverage,
)
from unified_kg_rag.domain.models import Source
from unified_kg_rag.domain.text.analysis import lexical_query_terms, lexical_terms
from unified_kg_rag.domain.text.sentences import sentence_segments
from unified_kg_rag.ports import Embedder

__all__ = ["EXTRACTIVE_HEADER", "ExtractiveAnswer", "extractive_answer"]

logger = logging.getLogger(__name__)

EXTRACTIVE_HEADER = (
    "Extractive answer (no language model is configured): the sentences of the retrieved "
    "passages closest to the question."
)
_MAX_CANDIDATES = 400
"""Most candidate sentences embedded per answer (a 6,000-token context holds about 250)."""
_MIN_CHARS = 12
_MAX_SENTENCE_CHARS = 600


@dataclass(frozen=True)
class ExtractiveAnswer:
    """An extractive answer and its match verdict.

    Attributes:
        text: the header, the `WEAK_MATCH_LEAD` line when the match is weak, then
            one quoted sentence per line with its ``[n]`` (or ``[n.m]``) citation.
        match: how well the quotes match the question.
    """

    text: str
    match: MatchVerdict


@dataclass(frozen=True)
class _Candidate:
    text: str
    label: str
    tier: int


async def extractive_answer(
    question: str,
    embedder: Embedder,
    question_vector: NDArray[np.float32],
    sources: Sequence[Source],
    *,
    sentences: int,
    lexical_weight: float = 1.0,
    min_relative: float = 0.6,
    min_coverage: float = 0.0,
    min_similarity: float = -1.0,
    header: str = EXTRACTIVE_HEADER,
) -> ExtractiveAnswer:
    """Quote the sentences of the context closest to the question, and judge the match.

    A sentence scores its cosine with the question plus ``lexical_weight`` times the
    IDF-weighted share of the question's terms it contains
    (`domain.answers.extractive.term_coverage`).

    Args:
        question: the question (its lexical terms score the sentences).
        embedder: embeds the candidate sentences.
        question_vector: the question's ``ndarray[d] float32`` embedding.
        sources: the packed sources, in the order to prefer on ties (passages first);
            sentences come from all of them (at most 400 candidates).
        sentences: how many sentences to quote at most.
        lexical_weight: weight of the term coverage added to the cosine.
        min_relative: sentences scoring below this share of the best are not quoted.
        min_coverage: quotes covering less of the question's terms are a weak match.
        min_similarity: quotes whose best cosine with the question is lower are weak.
        header: the answer's first line (`EXTRACTIVE_HEADER`, or why no model answered).

    Returns:
        The answer text and its `MatchVerdict`.
    """
    candidates = _candidates(sources)
    if not candidates:  # nothing long enough to quote: the best source's start
        best = sources[0]
        snippet = _clip(" ".join(best.text.split()))
        candidates = [_Candidate(snippet, str(best.n), 0)] if snippet else []
    if not candidates:
        match = MatchVerdict(verdict="weak", coverage=0.0, similarity=0.0)
        return ExtractiveAnswer(f"{header}\n\n{WEAK_MATCH_LEAD}", match)
    vectors = await embedder.embed_documents([c.text for c in candidates])
    query_terms = lexical_query_terms(question)
    terms = [set(lexical_terms(c.text)) for c in candidates]
    boosts = [lexical_weight * c for c in term_coverage(query_terms, terms)]
    picked = select_tiered(
        question_vector, vectors, sentences, tiers=[c.tier for c in candidates],
        boosts=boosts, min_relative=min_relative,
    )  # fmt: skip
    if not picked:  # every score below zero: still show the closest one
        best_row = int(np.argmax(vectors @ question_vector))
        picked = [(best_row, float(vectors[best_row] @ question_vector))]
    rows = [row for row, _ in picked]
    match = judge_match(
        quoted_coverage(query_terms, terms, rows),
        max(float(vectors[row] @ question_vector) for row in rows),
        min_coverage=min_coverage, min_similarity=min_similarity,
    )  # fmt: skip
    lines = [
        f"{i}. \u201c{candidates[row].text}\u201d [{candidates[row].label}]"
        for i, row in enumerate(rows, start=1)
    ]
    if match.verdict == "weak":
        lines.insert(0, WEAK_MATCH_LEAD)
    return ExtractiveAnswer(header + "\n\n" + "\n".join(lines), match)


def _candidates(sources: Sequence[Source]) -> list[_Candidate]:
    """Every quotable sentence of ``sources``, first seen first, duplicates dropped."""
    out: list[_Candidate] = []
    seen: set[str] = set()

    def add(text: str, label: str, tier: int) -> None:
        line = " ".join(text.split())
        if len(line) >= _MIN_CHARS and line.casefold() not in seen:
            seen.add(line.casefold())
            out.append(_Candidate(_clip(line), label, tier))

    for source in sources:
        if source.messages and source.kind == "text_unit":
            # a transcript passage: whole messages are the candidates, cited by [n.m] label
            for message in source.messages:
                add(message.text, message.label or str(source.n), 0)
            continue
        segments = sentence_segments(source.text)
        if source.truncated and len(segments) > 1:
            segments = segments[:-1]  # the budget cut the last sentence short
        for segment in segments:
            add(source.text[segment.start : segment.end], str(source.n),
                TIER_OF_SHAPE[segment.shape])  # fmt: skip
        if len(out) >= _MAX_CANDIDATES:
            logger.debug("extractive answer: %d candidates, the rest not read", len(out))
            return out[:_MAX_CANDIDATES]
    return out


def _clip(sentence: str) -> str:
    if len(sentence) > _MAX_SENTENCE_CHARS:
        return sentence[:_MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
    return sentence
