"""Drives a `RAGChain` over an evaluation dataset and aggregates LLM-free metrics.

Per question: retrieve (at least 10 text units, so recall@10 is defined) and, unless
``retrieval_only``, answer; then recall@2/5/10 against the supporting passages (the passages of
the packed context in context order; entity, relationship and report sections do not count as
passages), recall anywhere in the context, context tokens, whether a gold answer occurs in the
packed context, latency (total, and of the retrieval steps alone), and model usage.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.models import Source, TokenUsage
from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.metrics import answer_in_text, percentile, recall_at_k
from unified_kg_rag.evaluation.scoring import document_names
from unified_kg_rag.retrieval.chain import RAGChain

__all__ = ["EvalReport", "QuestionResult", "evaluate", "source_names"]

logger = logging.getLogger(__name__)

_KS = (2, 5, 10)


class QuestionResult(BaseModel):
    """The outcome of one question."""

    id: str
    question: str
    recall: dict[str, float] = Field(default_factory=dict)
    recall_in_context: float | None = None
    context_tokens: int = 0
    retrieval_ms: float = 0.0
    answer_in_context: bool = False
    answer_match: bool | None = None
    latency_ms: float = 0.0
    retrieved: list[str] = Field(default_factory=list)
    answer: str | None = None


class EvalReport(BaseModel):
    """Aggregate results; ``--json`` prints this object (keys as aliased).

    The recall fields are None when no question names its ``supporting`` passages (recall
    is then undefined, not zero).
    """

    model_config = ConfigDict(populate_by_name=True)

    recall_at_2: float | None = Field(0.0, alias="recall@2")
    recall_at_5: float | None = Field(0.0, alias="recall@5")
    recall_at_10: float | None = Field(0.0, alias="recall@10")
    recall_in_context: float | None = 0.0
    context_tokens_mean: float = 0.0
    retrieval_ms_p50: float = 0.0
    retrieval_ms_p95: float = 0.0
    answer_in_context: float = 0.0
    answer_match: float | None = None
    latency_ms_p50: float = 0.0
    latency_ms_p95: float = 0.0
    n_questions: int = 0
    n_with_supporting: int = 0
    strategy: str = ""
    search_mode: str = ""
    index: str = ""
    retrieval_only: bool = False
    usage: TokenUsage = Field(default_factory=TokenUsage)
    questions: list[QuestionResult] = Field(default_factory=list)


def source_names(source: Source) -> set[str]:
    """Return the names a supporting item may use for a source's document (casefolded)."""
    return document_names(source.path, source.title, source.document_id)


async def evaluate(
    chain: RAGChain,
    items: Sequence[EvalItem],
    *,
    retrieval_only: bool = False,
    strategy: str | None = None,
    search_mode: str | None = None,
    top_k: int | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> EvalReport:
    """Run every question through ``chain`` and aggregate the metrics.

    Args:
        chain: the chain over the index under test.
        items: the questions.
        retrieval_only: skip the answer step (latency is then retrieval only).
        strategy: strategy override.
        search_mode: search-mode override (``hybrid``, ``vector``, ``lexical``).
        top_k: text units retrieved (at least 10 are retrieved so recall@10 is defined).
        on_progress: called with the number of questions done.

    Raises:
        The errors of `RAGChain.retrieve` / `RAGChain.ainvoke`; a store or model failure stops
        the evaluation rather than scoring as a miss.
    """
    k = max(top_k or 0, max(_KS))
    results: list[QuestionResult] = []
    strategy_used = ""
    with usage_scope() as usage:
        for done, item in enumerate(items, start=1):
            t0 = time.perf_counter()
            answer: str | None = None
            if retrieval_only:
                out = await chain.retrieve(
                    item.question, strategy=strategy, search_mode=search_mode, top_k=k
                )
                sources, strategy_used = out.sources, out.strategy
                tokens, timings = out.context_tokens, out.timings_ms
            else:
                rag = await chain.ainvoke(
                    item.question, strategy=strategy, search_mode=search_mode, top_k=k
                )
                sources, strategy_used, answer = list(rag.sources), rag.strategy, rag.answer
                tokens = int(rag.metadata.get("context_tokens", 0))
                timings = rag.timings_ms
            latency = (time.perf_counter() - t0) * 1000.0
            result = _score(item, sources, answer, latency)
            result.context_tokens = tokens
            result.retrieval_ms = _retrieval_ms(timings)
            results.append(result)
            if on_progress is not None:
                on_progress(done)
    return _aggregate(results, usage, strategy_used, search_mode or "", retrieval_only)


def _retrieval_ms(timings: dict[str, float]) -> float:
    """Return the retrieval wall time: rewrite, route, retrieve, fuse and pack steps.

    The query embedding and any LLM calls of the strategy are included.
    """
    return round(sum(timings.get(k, 0.0) for k in ("rewrite", "route", "retrieve", "fuse",
                                                     "pack")), 3)  # fmt: skip


def _score(
    item: EvalItem, sources: Sequence[Source], answer: str | None, latency_ms: float
) -> QuestionResult:
    docs: list[set[str]] = []
    seen: set[str] = set()
    labels: list[str] = []
    for s in sources:
        if s.kind != "text_unit":
            continue
        key = s.document_id or s.id
        if key in seen:
            continue
        seen.add(key)
        docs.append(source_names(s))
        labels.append(s.path or s.title or key)
    context = "\n".join(s.text for s in sources)
    return QuestionResult(
        id=item.id,
        question=item.question,
        recall=(
            {f"@{k}": recall_at_k(docs, item.supporting, k) for k in _KS} if item.supporting else {}
        ),
        recall_in_context=(
            recall_at_k(docs, item.supporting, len(docs)) if item.supporting and docs
            else (0.0 if item.supporting else None)
        ),
        answer_in_context=answer_in_text(item.answers, context),
        answer_match=answer_in_text(item.answers, answer) if answer is not None else None,
        latency_ms=round(latency_ms, 3),
        retrieved=labels[: max(_KS)],
        answer=answer,
    )


def _aggregate(
    results: list[QuestionResult],
    usage: TokenUsage,
    strategy: str,
    search_mode: str,
    retrieval_only: bool,
) -> EvalReport:
    n = len(results)
    with_support = [r for r in results if r.recall]

    def mean_recall(k: int) -> float | None:
        vals = [r.recall[f"@{k}"] for r in with_support]
        return round(sum(vals) / len(vals), 4) if vals else None

    latencies = [r.latency_ms for r in results]
    retrieval = [r.retrieval_ms for r in results]
    in_context = [r.recall_in_context for r in with_support if r.recall_in_context is not None]
    matches = [r.answer_match for r in results if r.answer_match is not None]
    return EvalReport(
        recall_at_2=mean_recall(2),
        recall_at_5=mean_recall(5),
        recall_at_10=mean_recall(10),
        recall_in_context=round(sum(in_context) / len(in_context), 4) if in_context else None,
        context_tokens_mean=round(sum(r.context_tokens for r in results) / n, 1) if n else 0.0,
        retrieval_ms_p50=round(percentile(retrieval, 50), 2),
        retrieval_ms_p95=round(percentile(retrieval, 95), 2),
        answer_in_context=round(sum(r.answer_in_context for r in results) / n, 4) if n else 0.0,
        answer_match=round(sum(matches) / len(matches), 4) if matches else None,
        latency_ms_p50=round(percentile(latencies, 50), 2),
        latency_ms_p95=round(percentile(latencies, 95), 2),
        n_questions=n,
        n_with_supporting=len(with_support),
        strategy=strategy,
        search_mode=search_mode,
        retrieval_only=retrieval_only,
        usage=usage,
        questions=results,
    )
