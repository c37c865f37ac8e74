"""Summaries of merged descriptions over the token budget (seed 000 §4.2 "Merged descriptions").

Resolution joins what each text unit said about an item; a joined description longer than
``summarize_over_tokens`` is summarized by the LLM. Fragments that do not fit one call's
input (``summary_max_input_tokens``) are summarized batch by batch and the batch summaries
summarized again (map-reduce). A failed call keeps the concatenation: a summary is an
improvement, never a reason to lose a description. A reply the provider cut (length limit,
content filter) fails that item for now: it is not cached, and the next run asks again.
Replies come back from the LLM response cache on a re-run, so an unchanged item costs no
call. A call that keeps failing fails its item while others are answered; when the server is
down the stage stops (`ingestion.graph.failures.FailureJudge`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from unified_kg_rag.config.graph import ResolutionConfig
from unified_kg_rag.domain.graph.resolution import render_summary_messages, summary_batches
from unified_kg_rag.domain.llm.finish import describe_finish
from unified_kg_rag.domain.llm.usage import spend_note
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ports import ChatModel, ProgressReporter, TokenCounter
from unified_kg_rag.util.aio import map_bounded
from unified_kg_rag.util.errors import ModelOutputError

from .failures import FailureJudge

__all__ = ["DescriptionSummarizer", "SummaryOutcome", "SummaryTask", "summary_tasks"]

logger = logging.getLogger(__name__)

_MAX_REDUCE_ROUNDS = 4


@dataclass(frozen=True)
class SummaryTask:
    """One item whose merged description is over the budget."""

    item_id: str
    name: str
    fragments: tuple[str, ...]


@dataclass
class SummaryOutcome:
    """Summaries by item id, and the number of items whose summary failed."""

    summaries: dict[str, str]
    failed: int


class DescriptionSummarizer:
    """Summarizes long merged descriptions with the LLM (map-reduce when needed).

    Args:
        chat: the wrapped chat model.
        counter: token counter the budgets are measured with.
        config: ``graph.resolution``.
        template: the summary prompt template.
        concurrency: items in flight at once.
    """

    def __init__(
        self,
        chat: ChatModel,
        counter: TokenCounter,
        config: ResolutionConfig,
        *,
        template: str,
        concurrency: int,
    ) -> None:
        self._chat = chat
        self._counter = counter
        self._config = config
        self._template = template
        self._concurrency = concurrency

    def needs_summary(self, fragments: Sequence[str]) -> bool:
        """True when the joined fragments are longer than ``summarize_over_tokens``."""
        if len(fragments) == 0:
            return False
        return self._counter.count("\n".join(fragments)) > self._config.summarize_over_tokens

    async def run(
        self, tasks: Sequence[SummaryTask], *, progress: ProgressReporter | None = None
    ) -> SummaryOutcome:
        """Summarize every task; failures keep their concatenation (counted in ``failed``).

        Raises:
            ModelError: a failure that is not the item's own (authentication, server down).
        """
        progress = progress or NULL_PROGRESS
        progress.start("summarize", len(tasks))
        judge = FailureJudge(self._chat, concurrency=self._concurrency, stage="summary")

        async def one(task: SummaryTask) -> str:
            judge.check()
            try:
                summary = await self._summarize(task)
            except Exception as exc:
                reason = await judge.judge(exc)
                logger.info("summary of %s failed (%s); keeping the concatenation",
                            task.name, reason)
                raise
            finally:
                progress.advance("summarize", note=spend_note())
            judge.answered()
            return summary

        results = await map_bounded(tasks, one, concurrency=self._concurrency)
        progress.finish("summarize")
        judge.raise_if_stopped()
        summaries = {r.item.item_id: r.value for r in results if r.value is not None}
        return SummaryOutcome(summaries, len(results) - len(summaries))

    async def _summarize(self, task: SummaryTask) -> str:
        fragments = list(task.fragments)
        limit = self._config.summary_max_input_tokens
        for _ in range(_MAX_REDUCE_ROUNDS):
            batches = summary_batches(fragments, max_input_tokens=limit, count=self._counter.count)
            if len(batches) <= 1:
                break
            fragments = [await self._call(task.name, batch) for batch in batches]
        return await self._call(task.name, fragments)

    async def _call(self, name: str, fragments: Sequence[str]) -> str:
        limit = self._config.summary_max_input_tokens
        fitted = [self._counter.truncate(f, limit) for f in fragments]
        reply = await self._chat.complete(
            render_summary_messages(
                name, fitted, max_words=self._config.summary_max_words, template=self._template
            ),
            max_tokens=max(64, self._config.summary_max_words * 3),
        )
        if not reply.complete:
            raise ModelOutputError(
                f"summary reply for {name!r} {describe_finish(reply.finish_reason)}"
            )
        text = reply.text.strip()
        if not text:
            raise ModelOutputError(f"empty summary reply for {name!r}")
        return text


def summary_tasks(
    names: Mapping[str, str],
    fragments: Mapping[str, Sequence[str]],
    summarizer: DescriptionSummarizer,
) -> list[SummaryTask]:
    """Return the items (sorted by id) whose merged description is over the budget."""
    return [
        SummaryTask(item_id, names[item_id], tuple(parts))
        for item_id, parts in sorted(fragments.items())
        if item_id in names and summarizer.needs_summary(parts)
    ]
