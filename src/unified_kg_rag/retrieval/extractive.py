"""The extractive answer (no LLM): each source's sentences closest to the question, quoted.

Candidates are the sentences of every packed source (not the first few: the passage holding
the answer may rank last), cut by `domain.text.sentences` and shaped by
`domain.text.shapes`; a transcript passage offers its messages, cited by ``[n.m]``. They are
scored by cosine with the question plus the weighted question-term coverage, picked source
by source (every source's closest sentence, then every source's second; sentences before
records, headings and footers only when nothing else is there:
`domain.answers.extractive.select_per_source`), and judged (`domain.answers.match`): a weak
match is said so before the quotes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import regex
from numpy.typing import NDArray

from unified_kg_rag.domain.answers.extractive import (
    TIER_OF_SHAPE,
    select_per_source,
    select_sentences,
    term_coverage,
)
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

__all__ = ["EXTRACTIVE_HEADER", "ExtractiveAnswer", "deadline_header", "extractive_answer"]

logger = logging.getLogger(__name__)

EXTRACTIVE_HEADER = (
    "Extractive answer (no language model is configured): the sentences of each retrieved "
    "passage closest to the question, the closest passage first."
)


def deadline_header(deadline_s: float | None) -> str:
    """The extractive answer's header when it stands in for a model cut by the deadline."""
    within = f" of {deadline_s:g} s" if deadline_s else ""
    return (f"Extractive answer (the language model did not answer before the query's "
            f"deadline{within}): the sentences of each retrieved passage closest to the "
            "question, the closest passage first.")  # fmt: skip


_MAX_CANDIDATES = 400
"""Most candidate sentences read per answer (a 6,000-token context holds about 250)."""
_EMBED_PER_SOURCE = 12
"""Candidates of one source embedded: those holding most question terms. On MuSiQue-100
and the novels the answer was quoted as often as when every candidate is embedded (6 lost
3 of 33 novel answers), and a long passage costs no more than 12 sentences (issue 16)."""
_VERDICT_QUOTES = 3
"""The best quotes the weak-match verdict is taken on."""
_MIN_CJK_CHARS = 4
_MAX_SENTENCE_CHARS = 600
_WORD = regex.compile(r"\w+")
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
_SPACE = regex.compile(r" +")
_CLIP_WINDOWS = 60
"""Most windows of an overlong sentence compared when choosing the part to quote."""


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
    source: str
    tier: int
    message: bool = False


async def extractive_answer(
    question: str,
    embedder: Embedder,
    question_vector: NDArray[np.float32],
    sources: Sequence[Source],
    *,
    sentences: int,
    per_source: int = 2,
    messages: int = 4,
    lexical_weight: float = 1.0,
    min_relative: float = 0.6,
    source_floor: float = 0.0,
    min_coverage: float = 0.0,
    min_similarity: float = -1.0,
    header: str = EXTRACTIVE_HEADER,
) -> ExtractiveAnswer:
    """Quote the sentences of each source closest to the question, and judge the match.

    A sentence scores its cosine with the question plus ``lexical_weight`` times the
    IDF-weighted share of the question's terms it contains
    (`domain.answers.extractive.term_coverage`). Every source gets its closest sentence
    before any source gets a second (`domain.answers.extractive.select_per_source`); a
    source is quoted only when its closest sentence scores at least ``source_floor`` times
    the best, and its further sentences at least ``min_relative`` times the best. Only
    the `_EMBED_PER_SOURCE` sentences of a source holding most question terms are embedded.
    Messages of a transcript are chosen apart: the ``messages`` closest over all
    transcripts, none below ``min_relative`` times the best message's score.

    The answer has one numbered line per quoted source, the closest source first, its
    quotes in reading order followed by the citation (``[n]``; a transcript's messages each
    keep their ``[n.m]``). The verdict is taken on the `_VERDICT_QUOTES` best quotes.

    Args:
        question: the question (its lexical terms score the sentences).
        embedder: embeds the candidate sentences.
        question_vector: the question's ``ndarray[d] float32`` embedding.
        sources: the packed sources, in the order to prefer on ties (passages first);
            sentences come from all of them (at most 400 candidates).
        sentences: how many sentences to quote at most, in all.
        per_source: how many sentences to quote at most from one source.
        messages: how many messages of conversation transcripts to quote at most: the
            closest to the question over all transcripts (each message is evidence of its
            own, so an answer cites few of an archive's messages).
        lexical_weight: weight of the term coverage added to the cosine.
        min_relative: a source's second and later sentences scoring below this share of
            the best sentence's score are not quoted.
        source_floor: a source whose closest sentence scores below this share of the best
            sentence's score is not quoted at all (so not cited).
        min_coverage: lead quotes covering less of the question's terms are a weak match.
        min_similarity: lead quotes whose best cosine with the question is lower are weak.
        header: the answer's first line (`EXTRACTIVE_HEADER`, or why no model answered).

    Returns:
        The answer text and its `MatchVerdict`.
    """
    query_terms = lexical_query_terms(question)
    candidates = _candidates(sources, set(query_terms))
    if not candidates:  # nothing long enough to quote: the best source's start
        best = sources[0]
        snippet = _clip(" ".join(best.text.split()), set(query_terms))
        candidates = [_Candidate(snippet, str(best.n), str(best.n), 0)] if snippet else []
    if not candidates:
        match = MatchVerdict(verdict="weak", coverage=0.0, similarity=0.0)
        return ExtractiveAnswer(f"{header}\n\n{WEAK_MATCH_LEAD}", match)
    all_terms = [set(lexical_terms(c.text)) for c in candidates]
    coverage = term_coverage(query_terms, all_terms)
    kept = _most_covering(candidates, coverage)
    vectors = await embedder.embed_documents([candidates[i].text for i in kept])
    cosines = vectors @ question_vector
    scores = [float(cosines[j]) + lexical_weight * coverage[i] for j, i in enumerate(kept)]
    asks = [_asks(candidates[i].text) for i in kept]
    in_text = [r for r, i in enumerate(kept) if not candidates[i].message]
    rows = [in_text[r] for r in select_per_source(
        [scores[r] for r in in_text], vectors[in_text],
        groups=[candidates[kept[r]].source for r in in_text],
        tiers=[candidates[kept[r]].tier for r in in_text], per_source=per_source,
        limit=sentences, min_relative=min_relative, min_first=source_floor,
        asks=[asks[r] for r in in_text],
    )]  # fmt: skip
    in_messages = [r for r, i in enumerate(kept) if candidates[i].message]
    if in_messages:  # each message is its own evidence: the closest few, not one per day
        picked = select_sentences(
            question_vector, vectors[in_messages], messages, min_relative=min_relative,
            boosts=[scores[r] - float(cosines[r]) for r in in_messages],
            asks=[asks[r] for r in in_messages],
        )  # fmt: skip
        rows += [in_messages[r] for r, _ in picked]
        rows.sort(key=lambda r: (-scores[r], r))
    if not rows:  # every message scored below zero: still show the closest one
        rows = [max(range(len(kept)), key=lambda r: (scores[r], -r))]
    lead = rows[:_VERDICT_QUOTES]
    match = judge_match(
        quoted_coverage(query_terms, all_terms, [kept[r] for r in lead]),
        max(float(cosines[r]) for r in lead),
        min_coverage=min_coverage, min_similarity=min_similarity,
        one_quote_coverage=max(coverage[kept[r]] for r in lead),
    )  # fmt: skip
    quoted = _grouped([kept[r] for r in rows], candidates)
    lines = [f"{i}. {line}" for i, line in enumerate(quoted, start=1)]
    if match.verdict == "weak":
        lines.insert(0, WEAK_MATCH_LEAD)
    return ExtractiveAnswer(header + "\n\n" + "\n".join(lines), match)


def _most_covering(candidates: Sequence[_Candidate], coverage: Sequence[float]) -> list[int]:
    """Rows worth embedding: per source, the `_EMBED_PER_SOURCE` holding most question terms.

    Sentences before records before headings; ties go to the earlier sentence; a
    transcript's messages are all kept. Returned in the candidates' order.
    """
    by_source: dict[str, list[int]] = {}
    for row, candidate in enumerate(candidates):
        by_source.setdefault(candidate.source, []).append(row)
    kept: list[int] = []
    for rows in by_source.values():
        if candidates[rows[0]].message:  # a transcript: every message is a candidate
            kept += rows
            continue
        ranked = sorted(rows, key=lambda r: (candidates[r].tier, -coverage[r], r))
        kept += ranked[:_EMBED_PER_SOURCE]
    return sorted(kept)


def _grouped(rows: Sequence[int], candidates: Sequence[_Candidate]) -> list[str]:
    """One line per source: its quotes in reading order (records last), then the citation.

    ``rows`` (candidate rows, best first) decide the order of the sources. A source's
    quotes sharing one label are followed by it once; a transcript's messages each keep
    their own ``[n.m]``.
    """
    by_source: dict[str, list[int]] = {}
    for row in rows:
        by_source.setdefault(candidates[row].source, []).append(row)
    lines = []
    for group in by_source.values():
        # sentences in reading order, then records (a table row never leads a sentence)
        quotes = [candidates[r] for r in sorted(group, key=lambda r: (candidates[r].tier, r))]
        if len({q.label for q in quotes}) == 1:
            text = " ".join(f"\u201c{q.text}\u201d" for q in quotes)
            lines.append(f"{text} [{quotes[0].label}]")
        else:
            lines.append(" ".join(f"\u201c{q.text}\u201d [{q.label}]" for q in quotes))
    return lines


def _candidates(sources: Sequence[Source], terms: set[str]) -> list[_Candidate]:
    """Every quotable sentence of ``sources``, first seen first, duplicates dropped.

    ``terms`` (the question's) choose the part of an overlong sentence that is kept.
    """
    out: list[_Candidate] = []
    seen: set[str] = set()

    def add(text: str, label: str, source: str, tier: int, message: bool = False) -> None:
        line = " ".join(text.split())
        if _quotable(line) and line.casefold() not in seen:
            seen.add(line.casefold())
            out.append(_Candidate(_clip(line, terms), label, source, tier, message))

    for source in sources:
        if source.messages and source.kind == "text_unit":
            # a transcript passage: whole messages are the candidates, cited by [n.m] label
            for message in source.messages:
                add(message.text, message.label or str(source.n), str(source.n), 0, True)
            continue
        segments = sentence_segments(source.text)
        if source.truncated and len(segments) > 1:
            segments = segments[:-1]  # the budget cut the last sentence short
        for segment in segments:
            add(source.text[segment.start : segment.end], str(source.n), str(source.n),
                TIER_OF_SHAPE[segment.shape])  # fmt: skip
        if len(out) >= _MAX_CANDIDATES:
            logger.debug("extractive answer: %d candidates, the rest not read", len(out))
            return out[:_MAX_CANDIDATES]
    return out


def _quotable(line: str) -> bool:
    """True for a line worth quoting: two words or more, or four CJK characters.

    "He was 42." and "东京是日本的首都。" are quoted; a lone number or symbol is not.
    """
    return len(_WORD.findall(line)) >= 2 or len(_CJK.findall(line)) >= _MIN_CJK_CHARS


def _asks(text: str) -> bool:
    """True for a sentence or message that asks (its last mark is a question mark)."""
    return text.rstrip(" \"'\u201d\u2019)]").endswith(("?", "\uff1f"))


def _clip(sentence: str, terms: set[str]) -> str:
    """``sentence``, or its `_MAX_SENTENCE_CHARS` window holding most question ``terms``.

    The window starts and ends at spaces; a cut side is marked with an ellipsis. Ties go
    to the earliest window.
    """
    if len(sentence) <= _MAX_SENTENCE_CHARS:
        return sentence
    last = len(sentence) - _MAX_SENTENCE_CHARS // 2
    starts = [0, *(m.end() for m in _SPACE.finditer(sentence) if m.end() <= last)]
    stride = max(1, len(starts) // _CLIP_WINDOWS)
    best_start, best_hits = 0, -1
    for start in starts[::stride]:
        window = sentence[start : start + _MAX_SENTENCE_CHARS]
        hits = sum(1 for t in lexical_terms(window) if t in terms)
        if hits > best_hits:
            best_start, best_hits = start, hits
    window = sentence[best_start : best_start + _MAX_SENTENCE_CHARS]
    cut_end = best_start + _MAX_SENTENCE_CHARS < len(sentence)
    if cut_end:
        window = window.rsplit(" ", 1)[0]
    return ("… " if best_start else "") + window + (" …" if cut_end else "")
