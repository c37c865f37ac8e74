"""Write the summary of one cluster of the RAPTOR tree: by the LLM, or extractively.

`ClusterSummarizer.summarize` takes a cluster's children (their texts and vectors) and
returns its summary text, or None when the model failed (the builder then promotes the
children and marks the tree partial). With an LLM (``graph.raptor.summaries: llm`` or
``auto`` with one configured) one call per cluster (prompt ``summarize_cluster.v1``, through
the run's wrapped model: retries, response cache, usage); a summary over the budget keeps its
longest prefix of whole sentences. Without one, the extractive summary: the children's
sentences nearest the cluster centroid within ``max_summary_tokens`` (seed 000 §6.5; RAPTOR,
Sarthi et al. 2024, writes them with an LLM — extractive summaries only select, they never
connect facts across passages, so `tree` over them is closer to a clustered `naive`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.config.raptor import RaptorConfig
from unified_kg_rag.domain.prompts.library import PACKAGED
from unified_kg_rag.domain.prompts.render import render_messages
from unified_kg_rag.domain.tree.extractive import extractive_summary, split_sentences
from unified_kg_rag.ingestion.graph.failures import FailureJudge, StageStoppedError
from unified_kg_rag.ports import ChatModel, Embedder, TokenCounter

__all__ = ["CLUSTER_PROMPT", "ClusterSummarizer"]

logger = logging.getLogger(__name__)

CLUSTER_PROMPT = "summarize_cluster.v1"
"""Name of the bundled cluster-summary template (`PromptLibrary.get`)."""

_WORDS_PER_TOKEN = 0.6
"""Words asked for per token of budget (the budget is in the index's token counter's tokens;
English runs at about 1.3 tokens a word, so 0.6 leaves room for the cut)."""


class ClusterSummarizer:
    """Summarises clusters of the tree (see the module docstring).

    Args:
        config: ``graph.raptor``.
        embedder: embeds sentences for extractive summaries.
        counter: counts summary tokens (``max_summary_tokens``).
        chat: the LLM; None writes extractive summaries.
        concurrency: the model calls in flight (``llm.max_concurrency``): a streak that long
            of transient failures sends a known-good request, and when it fails too the
            server is down and the stage stops (`ingestion.graph.failures.FailureJudge`).
        template: the cluster-summary template in effect (None: the packaged
            ``summarize_cluster.v1``).
    """

    def __init__(
        self,
        config: RaptorConfig,
        *,
        embedder: Embedder,
        counter: TokenCounter,
        chat: ChatModel | None,
        concurrency: int = 4,
        template: str | None = None,
    ) -> None:
        self._config = config
        self._embedder = embedder
        self._counter = counter
        self._chat = chat
        self._template = template if template is not None else PACKAGED.get(CLUSTER_PROMPT)
        self._sentence_vectors: dict[str, NDArray[np.float32]] = {}
        self._judge = (FailureJudge(chat, concurrency=concurrency, stage="tree summary")
                       if chat is not None else None)  # fmt: skip
        self.calls = 0
        self.failed = 0

    @property
    def mode(self) -> str:
        """``llm:<model id>`` or ``extractive``: part of the tree's fingerprint."""
        if self._chat is None:
            return "extractive"
        return f"llm:{self._chat.model_id}:{CLUSTER_PROMPT}"

    @property
    def extractive(self) -> bool:
        """True when summaries are written without an LLM."""
        return self._chat is None

    async def prime(self, texts: Sequence[str]) -> None:
        """Embed, in one batch, the sentences of ``texts`` not embedded yet (extractive only).

        The builder calls it with every text one level will summarise, so the embedder sees
        one long, length-sorted batch instead of one short batch per cluster.

        Raises:
            EmbeddingModelError: the embedder failed.
        """
        if self._chat is not None:
            return
        todo = list(dict.fromkeys(
            s for t in texts for s in split_sentences(t) if s not in self._sentence_vectors
        ))  # fmt: skip
        if todo:
            embedded = await self._embedder.embed_documents(todo)
            self._sentence_vectors.update(zip(todo, embedded, strict=True))

    async def summarize(
        self, texts: Sequence[str], vectors: NDArray[np.float32]
    ) -> str | None:
        """Return the summary of a cluster whose children are ``texts`` (``vectors[n, d]``).

        Raises:
            ModelError: access refused (401/403), or the server is down (a known-good
                request failed too); a failure of this cluster's own returns None and counts
                in ``failed``.
            EmbeddingModelError: the embedder failed (extractive summaries).
        """
        if self._chat is None:
            return await self._extractive(texts, vectors)
        return await self._written(texts)

    async def _written(self, texts: Sequence[str]) -> str | None:
        assert self._chat is not None
        budget = self._config.max_summary_tokens
        passages = "\n\n".join(f"[{i}] {' '.join(t.split())}" for i, t in enumerate(texts, 1))
        messages = render_messages(self._template, {
            "passages": passages, "count": str(len(texts)),
            "max_words": str(max(8, int(budget * _WORDS_PER_TOKEN))),
        })  # fmt: skip
        judge = self._judge
        assert judge is not None
        self.calls += 1
        try:
            judge.check()
            reply = await self._chat.complete(messages, max_tokens=budget * 2, temperature=0.0)
        except StageStoppedError:
            judge.raise_if_stopped()
            raise
        except Exception as exc:
            try:
                reason = await judge.judge(exc)
            except StageStoppedError:
                judge.raise_if_stopped()  # the server (or access) is at fault: stop the stage
                raise
            logger.warning("tree summary failed: %s", reason)
            self.failed += 1
            return None
        judge.answered()
        text = " ".join(reply.text.split())
        if not text:
            self.failed += 1
            return None
        return self._fit(text, budget)

    def _fit(self, text: str, budget: int) -> str:
        """Keep the longest prefix of whole sentences within ``budget`` tokens."""
        if self._counter.count(text) <= budget:
            return text
        kept: list[str] = []
        for sentence in split_sentences(text):
            if self._counter.count(" ".join([*kept, sentence])) > budget:
                break
            kept.append(sentence)
        return " ".join(kept) if kept else self._counter.truncate(text, budget)

    async def _extractive(
        self, texts: Sequence[str], vectors: NDArray[np.float32]
    ) -> str:
        sentences = list(dict.fromkeys(s for t in texts for s in split_sentences(t)))
        if not sentences:
            return ""
        await self.prime(texts)
        matrix = np.stack([self._sentence_vectors[s] for s in sentences]).astype(np.float32)
        centroid = vectors.astype(np.float32).mean(axis=0)
        return extractive_summary(
            sentences, matrix, centroid, max_tokens=self._config.max_summary_tokens,
            count_tokens=self._counter.count,
        )  # fmt: skip
