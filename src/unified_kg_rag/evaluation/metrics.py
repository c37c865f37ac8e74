"""LLM-free evaluation metrics: answer match, retrieval ranking, evidence, abstention, latency.

What belongs here: pure functions from one question's answer, retrieved documents or context
units (and its references) to a number, and the abstention counts over a run. Aggregation
over questions with intervals is `evaluation.statistics`; pass/fail gates are
`evaluation.gates`; nothing here calls a model or reads a file.

Sources:

- Answer match: the SQuAD v1.1/v2.0 evaluation script (``evaluate-v2.0.py``,
  ``normalize_answer``, ``compute_exact``, ``compute_f1``): lower case, punctuation removed,
  English articles removed, whitespace collapsed; token F1 over the bag of tokens, maximum
  over the reference answers. `normalize_answer` is this project's variant (NFKC, casefold,
  typographic quotes and dashes) used by `answer_in_text` and `answer_contains`.
- Recall@k follows HippoRAG's definition: per question, the share of its supporting
  passages found among the first k distinct retrieved documents, averaged over questions.
- MRR is the reciprocal rank of the first relevant document (Voorhees, TREC-8 QA track);
  nDCG@k is Järvelin & Kekäläinen (2002), "Cumulated gain-based evaluation of IR
  techniques", with binary gains and the log2(rank + 1) discount.
- Abstention scoring (`AbstentionCase`, `abstention_stats`) lives in
  `evaluation.abstention` (seed 000 §9.2) and is re-exported here.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np

from unified_kg_rag.evaluation.abstention import AbstentionCase, AbstentionStats, abstention_stats

__all__ = [
    "AbstentionCase",
    "AbstentionStats",
    "abstention_stats",
    "answer_contains",
    "answer_in_text",
    "answer_span",
    "evidence_hits",
    "evidence_mrr",
    "evidence_ndcg_at_k",
    "evidence_recall_at_k",
    "exact_match",
    "f1_score",
    "hits_mrr",
    "hits_ndcg_at_k",
    "hits_recall_at_k",
    "mrr",
    "name_hits",
    "ndcg_at_k",
    "normalize_answer",
    "normalize_evidence",
    "percentile",
    "recall_at_k",
    "squad_normalize",
]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"‘", "’", "“", "”", "–", "—"}
_SQUAD_PUNCT = set(string.punctuation)


# ----------------------------------------------------------------------------- answers


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


def squad_normalize(text: str) -> str:
    r"""Normalise an answer exactly as the official SQuAD v1.1/v2.0 evaluation script does.

    In order: ``str.lower()``; remove every character of ``string.punctuation``; replace the
    English articles (``\b(a|an|the)\b``) by a space; collapse whitespace. No Unicode
    normalisation: typographic quotes and dashes stay (see `normalize_answer` for that).

    Source: SQuAD ``evaluate-v2.0.py`` ``normalize_answer``.
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _SQUAD_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, references: Sequence[str]) -> float:
    """Return 1.0 when ``squad_normalize(prediction)`` equals a normalised reference, else 0.0.

    No references gives 0.0. Source: SQuAD ``compute_exact``, maximum over the gold answers.
    """
    pred = squad_normalize(prediction)
    return 1.0 if any(pred == squad_normalize(r) for r in references) else 0.0


def _token_f1(pred_tokens: list[str], ref_tokens: list[str]) -> float:
    if not pred_tokens or not ref_tokens:
        return 1.0 if pred_tokens == ref_tokens else 0.0
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, references: Sequence[str]) -> float:
    """Return the SQuAD token F1 of ``prediction``, the maximum over ``references``.

    Tokens are ``squad_normalize(text).split()``; the overlap is the multiset intersection.
    When either side has no tokens the score is 1.0 if both have none, else 0.0 (SQuAD v2.0).
    No references gives 0.0.

    Source: SQuAD ``evaluate-v2.0.py`` ``compute_f1``.
    """
    pred = squad_normalize(prediction).split()
    return max((_token_f1(pred, squad_normalize(r).split()) for r in references), default=0.0)


def answer_contains(prediction: str, references: Sequence[str]) -> float:
    """Return 1.0 when a reference occurs as whole words in ``prediction``, else 0.0.

    Both sides go through `normalize_answer`, as in `answer_in_text`; an empty reference never
    matches.
    """
    return 1.0 if answer_in_text(references, prediction) else 0.0


_CITE_ITEM = r"\d+(?:\.\d+|\s*[-–]\s*\d+)?"
_CITATION = re.compile(rf"[ \t]*\[\s*{_CITE_ITEM}(?:\s*[,;]\s*{_CITE_ITEM})*\s*\]")
_LINE_MARKER = re.compile(r"^\s*(?:(?:>\s*)+|#{1,6}(?=\s|$)|[-*+•](?=\s)|\d{1,3}[.)](?=\s))\s*")
_EMPHASIS = re.compile(r"\*\*|__|~~|`+|(?<!\w)[*_]+|[*_]+(?!\w)")


def _strip_markers(line: str) -> str:
    line = " ".join(line.split())  # first, so no pattern scans a long run of spaces
    line = _CITATION.sub("", line)
    previous = None
    while previous != line:  # "> - **x**": a quote around a bullet
        previous = line
        line = _LINE_MARKER.sub("", line, count=1)
    return " ".join(_EMPHASIS.sub("", line).split())


def answer_span(answer: str, mode: Literal["first_line", "whole"] = "first_line") -> str:
    """Return the part of a long RAG answer that EM and F1 score (seed 000 §9, "EM/F1 read a span").

    Removed everywhere: citation markers in the syntax of `domain.answers.citations`
    (``[1]``, ``[2, 3]``, ``[1-3]``, ``[2.3]``, with the spaces before them), line markers
    (Markdown headings ``#``, bullets ``-``/``*``/``+``/``•``, ordered items ``1.``/``1)``,
    block quotes ``>``) and emphasis (``**``, ``__``, ``~~``, backticks, and ``*``/``_``
    at a word's edge, so ``snake_case`` keeps its underscore); runs of spaces in a line become
    one.

    Args:
        answer: the generated answer.
        mode: ``first_line``: the first line that is not empty once stripped, kept whole
            (a sentence stays a sentence); ``whole``: every non-empty stripped line, joined by
            newlines.

    Returns:
        The span; ``""`` when nothing is left.
    """
    lines = [s for s in (_strip_markers(line) for line in answer.splitlines()) if s]
    if mode == "whole":
        return "\n".join(lines)
    return lines[0] if lines else ""


# ----------------------------------------------------------------------------- ranking


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


def name_hits(
    retrieved: Sequence[set[str]], supporting: Sequence[str]
) -> tuple[list[frozenset[int]], int]:
    """Return, per retrieved document, which distinct supporting names it matches.

    Args:
        retrieved: one set of casefolded names per document, in rank order (as for
            `recall_at_k`).
        supporting: the supporting names; casefolded here, duplicates counted once.

    Returns:
        ``(hits, n_items)``: ``hits[r]`` holds the indices (into the distinct casefolded
        names) matched by document ``r``; ``n_items`` is the number of distinct names.
    """
    distinct = list(dict.fromkeys(s.casefold() for s in supporting))
    return [frozenset(i for i, s in enumerate(distinct) if s in doc) for doc in retrieved], len(
        distinct
    )


def hits_recall_at_k(hits: Sequence[frozenset[int] | set[int]], n_items: int, k: int) -> float:
    """Share of ``n_items`` relevant items held by the first ``k`` entries of ``hits``; 0 if none.

    For several cut-offs over one ranking, compute ``hits`` once (`name_hits`,
    `evidence_hits`) and call this per ``k``.
    """
    if n_items == 0:
        return 0.0
    found: set[int] = set()
    for h in hits[:k]:
        found |= h
    return len(found) / n_items


def hits_mrr(hits: Sequence[frozenset[int] | set[int]]) -> float:
    """Return 1/rank (1-based) of the first entry of ``hits`` that is not empty; 0.0 if none."""
    return next((1.0 / rank for rank, h in enumerate(hits, start=1) if h), 0.0)


def hits_ndcg_at_k(hits: Sequence[frozenset[int] | set[int]], n_items: int, k: int) -> float:
    """Return binary nDCG@k over per-rank relevant-item sets.

    A rank (1-based) has gain 1 when it holds an item not found at an earlier rank (each item
    counts once, so a repeat of an already-found passage is not rewarded); DCG sums
    ``1 / log2(rank + 1)`` over the gains of the first ``k`` ranks, and IDCG is the DCG of
    ``min(k, n_items)`` gains at ranks 1, 2, ....

    Args:
        hits: per rank, the indices of the relevant items the document holds.
        n_items: the number of relevant items (distinct).
        k: cut-off (at least 1).

    Returns:
        A value in [0, 1]; 0.0 when ``n_items`` or ``k`` is 0.

    Source: Järvelin & Kekäläinen (2002), binary gains.
    """
    ideal = min(k, n_items)
    if ideal <= 0:
        return 0.0
    seen: set[int] = set()
    dcg = 0.0
    for rank, h in enumerate(hits[:k], start=1):
        if not h <= seen:
            dcg += 1.0 / math.log2(rank + 1)
            seen |= h
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, ideal + 1))
    return dcg / idcg


def mrr(retrieved: Sequence[set[str]], supporting: Sequence[str]) -> float:
    """Reciprocal rank of the first retrieved document matching a supporting name; 0.0 if none.

    Args:
        retrieved: one set of casefolded names per document, in rank order.
        supporting: the supporting names (casefolded here).
    """
    return hits_mrr(name_hits(retrieved, supporting)[0])


def ndcg_at_k(retrieved: Sequence[set[str]], supporting: Sequence[str], k: int) -> float:
    """Binary nDCG@k of the retrieved documents against the supporting names (`hits_ndcg_at_k`).

    Args:
        retrieved: one set of casefolded names per document, in rank order.
        supporting: the supporting names (casefolded here; duplicates count once).
        k: cut-off.
    """
    hits, n_items = name_hits(retrieved, supporting)
    return hits_ndcg_at_k(hits, n_items, k)


# ----------------------------------------------------------------------------- evidence

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"'})


def normalize_evidence(text: str) -> str:
    """Return ``text`` NFKC-normalised, casefolded, with straight quotes and single spaces.

    Punctuation stays: an evidence snippet is a quotation, not an answer.
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().translate(_QUOTES).split())


def _distinct_evidence(evidence: Sequence[str]) -> list[str]:
    return [s for s in dict.fromkeys(normalize_evidence(e) for e in evidence) if s]


def evidence_hits(
    unit_texts: Sequence[str], evidence: Sequence[str]
) -> tuple[list[frozenset[int]], int]:
    """Return, per context unit, which evidence snippets it contains.

    Both sides go through `normalize_evidence`; a snippet is found in a unit when it is a
    substring of it. Blank snippets are dropped and duplicates (after normalising) count once.
    Cost: one normalisation per unit and one substring search per (unit, snippet), so pass
    only the units you rank (``unit_texts[:k]``).

    Args:
        unit_texts: the text of each retrieved unit, in rank order.
        evidence: the question's evidence snippets.

    Returns:
        ``(hits, n_items)``: ``hits[r]`` holds the indices of the distinct snippets unit ``r``
        contains; ``n_items`` is the number of distinct non-blank snippets.
    """
    snippets = _distinct_evidence(evidence)
    if not snippets:
        return [frozenset() for _ in unit_texts], 0
    hits = []
    for text in unit_texts:
        unit = normalize_evidence(text)
        hits.append(frozenset(i for i, s in enumerate(snippets) if s in unit))
    return hits, len(snippets)


def evidence_recall_at_k(unit_texts: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of the distinct evidence snippets contained in at least one of the first ``k`` units.

    Returns 0.0 when there is no non-blank snippet (leave such questions out, as for
    `recall_at_k`). Matching as in `evidence_hits`.
    """
    hits, n_items = evidence_hits(unit_texts[:k], evidence)
    return hits_recall_at_k(hits, n_items, k)


def evidence_mrr(unit_texts: Sequence[str], evidence: Sequence[str]) -> float:
    """Reciprocal rank of the first unit containing an evidence snippet; 0.0 if none."""
    snippets = _distinct_evidence(evidence)
    for rank, text in enumerate(unit_texts, start=1):
        unit = normalize_evidence(text)
        if any(s in unit for s in snippets):
            return 1.0 / rank
    return 0.0


def evidence_ndcg_at_k(unit_texts: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Binary nDCG@k of the units: a unit is relevant when it holds a snippet not found earlier.

    See `hits_ndcg_at_k`; IDCG counts ``min(k, distinct snippets)`` ideal hits.
    """
    hits, n_items = evidence_hits(unit_texts[:k], evidence)
    return hits_ndcg_at_k(hits, n_items, k)


# ----------------------------------------------------------------------------- latency


def percentile(values: Sequence[float], q: float) -> float:
    """Return the ``q``-th percentile (0-100, linear interpolation) of ``values``; 0 when empty."""
    if not values:
        return 0.0
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))
