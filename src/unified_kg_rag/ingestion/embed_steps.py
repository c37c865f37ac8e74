"""Embedding text units in bounded steps, each stored as it finishes, with honest progress.

`UnitSteps` is what `ingestion.commit.commit_batch` embeds through:

- the embedding model is loaded as a step of its own (progress task ``load model``) before the
  first unit is embedded, when the model can be loaded ahead (`ports.LoadsModel`);
- the units to embed are embedded ``indexing.embed_batch_units`` at a time, and each step is
  written to the search index at once, so a run stopped inside a large document keeps every
  finished step (the document stays ``pending`` until its last step, and the next run embeds
  only the units not stored: `ingestion.units.units_to_embed`);
- progress task ``embed`` counts units embedded, advanced per step; its total grows as batches
  of documents are chunked (re-`start`ed with the larger total);
- `KeptWork` records what the run stored, for the message an interrupted run prints.

Not here: the write-ahead records and the commit (`ingestion.commit`), document progress
(`ingestion.pipeline`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import Collection, TextUnit
from unified_kg_rag.domain.text.embedding_input import embedding_input
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ingestion.units import text_unit_record, unit_title
from unified_kg_rag.ports import Embedder, LoadsModel, ProgressReporter, SearchIndex

__all__ = ["EMBED_TASK", "LOAD_TASK", "KeptWork", "UnitSteps"]

LOAD_TASK = "load model"
"""Progress task of loading the embedding model (no total: one step)."""

EMBED_TASK = "embed"
"""Progress task of embedding text units (total: the units to embed found so far)."""


@dataclass
class KeptWork:
    """What a run has stored so far; `describe` says it when the run is interrupted.

    Attributes:
        documents_committed: documents recorded ``processed`` by this run.
        units_embedded: text units embedded and stored by this run.
        partial: per unfinished document (its display path): ``(units stored with a vector,
            units in the document)``; a document leaves it when it is committed.
    """

    documents_committed: int = 0
    units_embedded: int = 0
    partial: dict[str, tuple[int, int]] = field(default_factory=dict)

    def describe(self) -> str:
        """Return what was kept, e.g. ``kept 1,024 of 4,000 text units of big.txt``.

        Up to three unfinished documents are named; ``"nothing new was stored"`` when the run
        stored nothing.
        """
        parts: list[str] = []
        if self.documents_committed:
            s = "" if self.documents_committed == 1 else "s"
            parts.append(f"{self.documents_committed:,} document{s} indexed")
        started = sorted((p for p in self.partial.items() if p[1][0]), key=lambda p: p[0])
        for path, (stored, total) in started[:3]:
            parts.append(f"{stored:,} of {total:,} text units of {path} embedded")
        if len(started) > 3:
            parts.append(f"units of {len(started) - 3:,} more unfinished documents")
        if not parts:
            return "nothing new was stored"
        return "kept " + ", ".join(parts)


class UnitSteps:
    """Embeds and stores text units in bounded steps (see the module docstring).

    Args:
        embedder: the embedding model.
        step_units: the most units embedded and stored at once (``indexing.embed_batch_units``).
        progress: receives the ``load model`` and ``embed`` tasks.
        kept: records what was stored (shared with the caller).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        step_units: int,
        progress: ProgressReporter | None = None,
        kept: KeptWork | None = None,
    ) -> None:
        self._embedder = embedder
        self._step = max(1, step_units)
        self._progress = progress or NULL_PROGRESS
        self.kept = kept if kept is not None else KeptWork()
        self._loaded = False
        self._planned: set[str] = set()
        self._done: set[str] = set()

    async def store(
        self,
        search: SearchIndex,
        units: Sequence[TextUnit],
        fresh: Sequence[TextUnit],
        paths: Mapping[str, str],
    ) -> float:
        """Embed ``fresh`` step by step, writing each step to the search index as it finishes.

        Args:
            search: the index's (fenced) search index.
            units: every text unit of the documents being written (``fresh`` among them).
            fresh: the units to embed (not stored with a vector from the same input).
            paths: document id → display path, for `KeptWork`.

        Returns:
            The seconds spent in the embedder.

        Raises:
            StoreError: the search index failed (the steps before stay stored).
            Exception: whatever the embedder raises.
        """
        self._plan(units, fresh, paths)
        if not fresh:
            return 0.0
        await self._load()
        seconds = 0.0
        for first in range(0, len(fresh), self._step):
            step = list(fresh[first : first + self._step])
            started = time.perf_counter()
            vectors = await self._embedder.embed_documents(
                [embedding_input(u.text, unit_title(u)) for u in step]
            )
            seconds += time.perf_counter() - started
            await self._write(search, step, vectors, paths)
        return seconds

    async def _write(
        self,
        search: SearchIndex,
        step: Sequence[TextUnit],
        vectors: NDArray[np.float32],
        paths: Mapping[str, str],
    ) -> None:
        """Store one step and count it in `KeptWork`, even when the run is cancelled meanwhile.

        A store may finish its write in a worker thread after the awaiting task was cancelled
        (Ctrl-C), so the write is shielded and, on cancellation, awaited to its end: the
        interrupt message then counts exactly the units stored.
        """
        write = asyncio.ensure_future(
            search.upsert(Collection.TEXT_UNITS, [text_unit_record(u) for u in step], vectors)
        )
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            try:
                await write
            except Exception:  # the write failed: nothing of this step was stored
                raise asyncio.CancelledError from None
            self._stored(step, paths)
            raise
        self._stored(step, paths)

    def committed(self, paths: Sequence[str]) -> None:
        """Record documents recorded ``processed`` (they leave `KeptWork.partial`)."""
        for path in paths:
            self.kept.partial.pop(path, None)
        self.kept.documents_committed += len(paths)

    def _plan(
        self, units: Sequence[TextUnit], fresh: Sequence[TextUnit], paths: Mapping[str, str]
    ) -> None:
        """Grow the ``embed`` total by units not planned before; note each document's counts."""
        new = [u.id for u in fresh if u.id not in self._planned]
        if new:
            self._planned.update(new)
            self._progress.start(EMBED_TASK, len(self._planned))
        fresh_ids = {u.id for u in fresh}
        counts: dict[str, tuple[int, int]] = {}
        for unit in units:
            path = paths.get(unit.document_id, unit.document_id)
            stored, total = counts.get(path, (0, 0))
            counts[path] = (stored + (unit.id not in fresh_ids), total + 1)
        self.kept.partial.update(counts)

    async def _load(self) -> None:
        """Load the model as a step of its own, once, before the first unit is embedded."""
        if self._loaded:
            return
        self._loaded = True
        if isinstance(self._embedder, LoadsModel):
            self._progress.start(LOAD_TASK, None)
            await self._embedder.load()
            self._progress.finish(LOAD_TASK)

    def _stored(self, step: Sequence[TextUnit], paths: Mapping[str, str]) -> None:
        new = [u for u in step if u.id not in self._done]
        self._done.update(u.id for u in new)
        self.kept.units_embedded += len(new)
        for unit in step:
            path = paths.get(unit.document_id, unit.document_id)
            stored, total = self.kept.partial.get(path, (0, 0))
            self.kept.partial[path] = (min(stored + 1, total), total)
        if new:
            self._progress.advance(EMBED_TASK, len(new))
