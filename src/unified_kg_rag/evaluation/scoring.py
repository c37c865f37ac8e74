"""Per-query metrics of one saved answer: a pure function of the dataset item and the row.

Seed 000 §9: LLM-free metrics are first-class, and a comparison is a pure function of saved
files, so ``--from-results`` re-scores bit for bit. Metric names (the keys `--fail-if` reads):

- retrieval (strategies only, not ``closed_book``): ``recall@2``, ``recall@5``,
  ``recall@10`` and ``recall_in_context`` (HippoRAG's recall over the first k distinct
  documents of the packed text units, against ``supporting``; or, for a question with
  ``evidence`` snippets, over the first k text units holding a snippet), ``mrr`` and
  ``ndcg@10`` on the same ranking, ``graph_recall`` (``graph_aware``: a supporting document
  also counts when reached through an entity, relationship or report in the context — the
  cited ones when an answer was written), ``answer_in_context``;
- answers: ``em`` and ``f1`` (SQuAD's official normalisation, on the answer span
  ``evaluation.answer_span`` picks), ``answer_contains`` (a gold answer within the whole
  answer), ``abstained`` (0/1), ``abstention/recall`` (declined, on unanswerable items only);
  an abstention on an answerable item scores 0 on ``em``, ``f1`` and ``answer_contains``;
- provenance: ``message_recall`` (required message guids among the context's messages),
  ``message_cited_recall`` (among those the answer rests on), ``cited_documents`` and
  ``cited_share`` (distinct documents the answer cites, and their share of the corpus);
- cost (lower is better): ``cost/calls``, ``cost/cache_hits``, ``cost/input_tokens``,
  ``cost/output_tokens``, ``cost/latency_ms``, ``cost/retrieval_ms``,
  ``cost/context_tokens`` and, with a price for the answer model, ``cost/money``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from unified_kg_rag.config.evaluation import ModelPrice
from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.metrics import (
    answer_contains,
    answer_in_text,
    answer_span,
    evidence_mrr,
    evidence_ndcg_at_k,
    evidence_recall_at_k,
    exact_match,
    f1_score,
    mrr,
    ndcg_at_k,
    recall_at_k,
)
from unified_kg_rag.evaluation.results import CLOSED_BOOK, ResultRow, SourceRecord

__all__ = [
    "KNOWN_METRICS",
    "LOWER_IS_BETTER",
    "RETRIEVAL_KS",
    "ScoringSettings",
    "arm_metrics",
    "document_names",
    "lower_is_better",
    "price_for",
    "record_names",
    "score_row",
]

RETRIEVAL_KS = (2, 5, 10)

ABSTENTION_AGGREGATES = (
    "precision", "f1", "coverage", "accuracy", "selective_accuracy", "overall_accuracy",
)  # fmt: skip
"""An arm's abstention statistics (seed 000 §9.2) that gates read as ``abstention/<name>``:
ratios over the whole run, not per-query means (``abstention/recall`` is one)."""

KNOWN_METRICS = (
    *(f"recall@{k}" for k in RETRIEVAL_KS), "recall_in_context", "mrr", "ndcg@10",
    "graph_recall", "answer_in_context", "em", "f1", "answer_contains", "abstained",
    "abstention/recall", *(f"abstention/{k}" for k in ABSTENTION_AGGREGATES),
    "message_recall", "message_cited_recall", "cited_documents",
    "cited_share", "cost/calls", "cost/cache_hits", "cost/input_tokens", "cost/output_tokens",
    "cost/latency_ms", "cost/retrieval_ms", "cost/context_tokens", "cost/money",
    "judge/correctness", "assertion/recall", "assertion/contradiction_rate",
    "assertion/negative_violation_rate", "pairwise/comprehensiveness", "pairwise/diversity",
    "pairwise/empowerment", "pairwise/directness",
)  # fmt: skip
"""Every metric a run can report (what ``--fail-if`` may name)."""

_NEEDS_RETRIEVAL = (
    *(f"recall@{k}" for k in RETRIEVAL_KS), "recall_in_context", "mrr", "ndcg@10",
    "graph_recall", "answer_in_context", "message_recall", "message_cited_recall",
    "cited_documents", "cited_share", "cost/retrieval_ms", "cost/context_tokens",
)  # fmt: skip
_NEEDS_ANSWER = (
    "em", "f1", "answer_contains", "abstained", "abstention/recall", "message_cited_recall",
    "cited_documents", "cited_share", *(f"abstention/{k}" for k in ABSTENTION_AGGREGATES),
)  # fmt: skip
_JUDGED = {"correctness": "judge/", "assertions": "assertion/", "pairwise": "pairwise/"}


def arm_metrics(
    arm: str, *, baseline: str, retrieval_only: bool, judges: Iterable[str]
) -> tuple[str, ...]:
    """The metrics (of `KNOWN_METRICS`) ``arm`` can report in a run (what a gate may name).

    The closed-book arm reports no retrieval metric; a ``retrieval_only`` run no answer
    metric; judge metrics need their judge, and ``pairwise/*`` an arm other than the
    baseline and the closed-book arm.
    """
    judged = set(judges)
    out: list[str] = []
    for name in KNOWN_METRICS:
        if arm == CLOSED_BOOK and name in _NEEDS_RETRIEVAL:
            continue
        if retrieval_only and arm != CLOSED_BOOK and name in _NEEDS_ANSWER:
            continue
        judge = next((j for j, prefix in _JUDGED.items() if name.startswith(prefix)), None)
        if judge is not None and (judge not in judged or (
                judge == "pairwise" and arm in (baseline, CLOSED_BOOK))):  # fmt: skip
            continue
        out.append(name)
    return tuple(out)


LOWER_IS_BETTER = (
    "cost/", "assertion/contradiction_rate", "assertion/negative_violation_rate",
)  # fmt: skip
"""Metric names (or prefixes ending in ``/``) where less is better. A failed answer is left
unpaired on them rather than scored 0, which would count a crash as a perfect score."""


def lower_is_better(metric: str) -> bool:
    """True for cost metrics and the assertion rates (less is better)."""
    return any(metric.startswith(p) if p.endswith("/") else metric == p for p in LOWER_IS_BETTER)


@dataclass(frozen=True)
class ScoringSettings:
    """What scoring needs besides the item and the row.

    Attributes:
        answer_span: the text EM and F1 read (``first_line`` or ``whole``).
        prices: prices per model id (``evaluation.prices``).
        answer_model: the answer model's id, to price its tokens.
        corpus_documents: documents in the index, for ``cited_share``; None leaves it out.
    """

    answer_span: Literal["first_line", "whole"] = "first_line"
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    answer_model: str | None = None
    corpus_documents: int | None = None


def price_for(prices: Mapping[str, ModelPrice], model_id: str | None) -> ModelPrice | None:
    """Return the price of ``model_id`` (``openai:gpt-4o-mini@https://…/v1``), or None.

    Looked up by the full id, then without the ``@base_url`` part (``openai:gpt-4o-mini``),
    then by the bare model name (``gpt-4o-mini``).
    """
    if not model_id:
        return None
    short = model_id.split("@", 1)[0]
    for key in (model_id, short, short.split(":", 1)[-1]):
        if key in prices:
            return prices[key]
    return None


def document_names(path: str | None, title: str | None, document_id: str | None) -> set[str]:
    """Return the names a supporting item may use for a document (casefolded).

    Its path with and without the extension, its file name and stem, its title and its id.
    """
    names: set[str] = set()
    if path:
        p = PurePosixPath(path)
        names.update({path, p.name, p.stem, str(p.with_suffix(""))})
    if title:
        names.add(title)
    if document_id:
        names.add(document_id)
    return {n.casefold() for n in names}


def record_names(source: SourceRecord) -> set[str]:
    """Return the names a supporting item may use for a saved source's document."""
    return document_names(source.path, source.title, source.document_id)


def score_row(
    item: EvalItem, row: ResultRow, settings: ScoringSettings
) -> dict[str, float | None]:
    """Return the per-query metrics of ``row`` (see the module docstring for the names).

    A failed row (``ok`` False) scores only its cost: the comparison fills its other
    metrics with 0 where other rows of the question scored them (seed 000 §9).
    """
    scores: dict[str, float | None] = {}
    if row.ok:
        if row.arm != CLOSED_BOOK:
            scores.update(_retrieval(item, row))
        if row.answer is not None:
            scores.update(_answer(item, row, settings))
            scores.update(_cited(row, settings))
        scores.update(_provenance(item, row))
    scores.update(_cost(row, settings))
    return scores


def _text_units(row: ResultRow) -> list[SourceRecord]:
    return [s for s in row.sources if s.kind == "text_unit"]


def _documents(units: Iterable[SourceRecord]) -> list[set[str]]:
    """Distinct documents of ``units`` in rank order, each as its set of names."""
    docs: list[set[str]] = []
    seen: set[str] = set()
    for s in units:
        key = s.document_id or s.id
        if key not in seen:
            seen.add(key)
            docs.append(record_names(s))
    return docs


def _retrieval(item: EvalItem, row: ResultRow) -> dict[str, float | None]:
    units = _text_units(row)
    out: dict[str, float | None] = {}
    if item.evidence:
        texts = [s.text for s in units]
        for k in RETRIEVAL_KS:
            out[f"recall@{k}"] = evidence_recall_at_k(texts, item.evidence, k)
        out["recall_in_context"] = evidence_recall_at_k(texts, item.evidence, len(texts))
        out["mrr"] = evidence_mrr(texts, item.evidence)
        out["ndcg@10"] = evidence_ndcg_at_k(texts, item.evidence, 10)
    elif item.supporting:
        docs = _documents(units)
        for k in RETRIEVAL_KS:
            out[f"recall@{k}"] = recall_at_k(docs, item.supporting, k)
        out["recall_in_context"] = recall_at_k(docs, item.supporting, len(docs))
        out["mrr"] = mrr(docs, item.supporting)
        out["ndcg@10"] = ndcg_at_k(docs, item.supporting, 10)
        out["graph_recall"] = _graph_recall(item, row, docs)
    if item.answers and item.answerable:
        context = "\n".join(s.text for s in row.sources)
        out["answer_in_context"] = 1.0 if answer_in_text(item.answers, context) else 0.0
    return out


def _graph_recall(item: EvalItem, row: ResultRow, docs: list[set[str]]) -> float:
    """Supporting documents reached by text units or through graph items (seed §9)."""
    answered = row.answer is not None
    names: set[str] = set().union(*docs) if docs else set()
    for s in row.sources:
        if s.kind != "text_unit" and (s.cited or not answered):
            names.update(d.casefold() for d in s.document_ids)
    found = sum(1 for name in item.supporting if name.casefold() in names)
    return found / len(item.supporting)


def _answer(
    item: EvalItem, row: ResultRow, settings: ScoringSettings
) -> dict[str, float | None]:
    answer = row.answer or ""
    out: dict[str, float | None] = {"abstained": 1.0 if row.abstained else 0.0}
    if not item.answerable:
        out["abstention/recall"] = out["abstained"]
        return out
    if item.answers:
        if row.abstained:
            out.update({"em": 0.0, "f1": 0.0, "answer_contains": 0.0})
        else:
            span = answer_span(answer, settings.answer_span)
            out["em"] = exact_match(span, item.answers)
            out["f1"] = f1_score(span, item.answers)
            out["answer_contains"] = answer_contains(answer, item.answers)
    return out


def _cited(row: ResultRow, settings: ScoringSettings) -> dict[str, float | None]:
    if row.arm == CLOSED_BOOK:
        return {}
    docs: set[str] = set()
    for s in row.sources:
        if not s.cited:
            continue
        if s.kind == "text_unit":
            docs.add(s.document_id or s.id)
        else:
            docs.update(s.document_ids)
    out: dict[str, float | None] = {"cited_documents": float(len(docs))}
    if settings.corpus_documents:
        out["cited_share"] = len(docs) / settings.corpus_documents
    return out


def _provenance(item: EvalItem, row: ResultRow) -> dict[str, float | None]:
    if not item.messages or row.arm == CLOSED_BOOK:
        return {}
    required = set(item.messages)
    surfaced = {g for s in row.sources for g in s.messages}
    out: dict[str, float | None] = {"message_recall": len(required & surfaced) / len(required)}
    if row.answer is not None:
        rested = set(row.evidence_messages)
        out["message_cited_recall"] = len(required & rested) / len(required)
    return out


def _cost(row: ResultRow, settings: ScoringSettings) -> dict[str, float | None]:
    u = row.usage
    out: dict[str, float | None] = {
        "cost/calls": float(u.calls),
        "cost/cache_hits": float(u.cache_hits),
        "cost/input_tokens": float(u.input_tokens),
        "cost/output_tokens": float(u.output_tokens),
        "cost/latency_ms": row.latency_ms,
    }
    if row.arm != CLOSED_BOOK:
        out["cost/retrieval_ms"] = row.retrieval_ms
        out["cost/context_tokens"] = float(row.context_tokens)
    price = price_for(settings.prices, settings.answer_model)
    if price is not None:
        out["cost/money"] = (
            u.input_tokens * price.input_per_1m + u.output_tokens * price.output_per_1m
        ) / 1e6
    return out


def metric_names(scores: Sequence[Mapping[str, float | None]]) -> set[str]:
    """Names any of ``scores`` gives a value for."""
    return {k for s in scores for k, v in s.items() if v is not None}
