"""Indexing progress and bounded embedding steps (issue 16 items 5 and 6).

`IndexPipeline` on a real SQLite file with the real chunking tokenizer; the embedder is a fake
that records its calls in the same event list as a recording progress sink.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.fakes import FakeEmbedder
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection, DocStatus
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ports import LoadsModel

pytestmark = pytest.mark.integration

Event = tuple[str, str, int | None]


class Recorder:
    """A `ProgressReporter` that records every event: (kind, task, number)."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def start(self, task: str, total: int | None) -> None:
        self.events.append(("start", task, total))

    def advance(self, task: str, steps: int = 1, *, note: str | None = None) -> None:
        self.events.append(("advance", task, steps))

    def finish(self, task: str) -> None:
        self.events.append(("finish", task, None))

    def warn(self, message: str) -> None:
        self.events.append(("warn", message, None))


class LoadingEmbedder(FakeEmbedder):
    """A fake embedder with a model to load; logs loads and calls, can stop on call ``stop_at``."""

    def __init__(self, events: list[Event], *, stop_at: int | None = None) -> None:
        super().__init__()
        self.events = events
        self.calls = 0
        self.stop_at = stop_at
        self.loaded = False
        self.loading = False

    async def load(self) -> None:
        self.events.append(("load", "model", None))
        self.loaded = True

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls += 1
        if self.stop_at is not None and self.calls >= self.stop_at:
            raise asyncio.CancelledError  # as Ctrl-C cancels the run while it embeds
        self.events.append(("embed", "call", len(texts)))
        return await super().embed_documents(texts)


def _big_text(sentences: int) -> str:
    return " ".join(f"Fact {i} says that item{i} weighs {i % 97} grams." for i in range(sentences))


def _corpus(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "big.txt").write_text(_big_text(3000), encoding="utf-8")
    (folder / "a.md").write_text("# Alpha\n\nAlpha is the first letter.\n", encoding="utf-8")
    (folder / "b.txt").write_text("Beta follows alpha in the alphabet.\n", encoding="utf-8")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 8)
    return folder


def _app(project: Path, step: int) -> App:
    config = UkrConfig(indexing={"embed_batch_units": step, "methodologies": []})  # type: ignore[arg-type]
    return build_app(config, project)


def _pipeline(app: App, embedder: FakeEmbedder, events: list[Event]) -> IndexPipeline:
    return IndexPipeline(app.index("default"), embedder=embedder,
                         chunk_tokenizer=app.chunk_tokenizer, parsers=app.parsers,
                         config=app.config, progress=Recorder(events))


def test_progress_counts_units_per_step_loads_the_model_first_and_skips_failures(
    tmp_path: Path,
) -> None:
    corpus = _corpus(tmp_path / "corpus")
    events: list[Event] = []

    async def main() -> IndexReport:
        embedder = LoadingEmbedder(events)
        assert isinstance(embedder, LoadsModel)
        async with _app(tmp_path / "p", 16) as app:
            return await _pipeline(app, embedder, events).run([corpus])

    report = asyncio.run(main())
    assert report.text_units_embedded > 64  # big.txt alone is several steps
    assert len(report.failed) == 2
    # the model is loaded as a step of its own, once, before the first embedding
    kinds = [(kind, task) for kind, task, _ in events]
    assert kinds.count(("start", "load model")) == 1
    first_embed = kinds.index(("embed", "call"))
    assert kinds.index(("start", "load model")) < kinds.index(("load", "model")) < kinds.index(
        ("finish", "load model")) < first_embed
    # units embedded are counted per step of at most 16, and add up to what was embedded
    steps = [n for kind, task, n in events if (kind, task) == ("advance", "embed")]
    assert steps and all(n is not None and 0 < n <= 16 for n in steps)
    assert sum(n for n in steps if n is not None) == report.text_units_embedded
    assert len(steps) >= report.text_units_embedded // 16
    embed_totals = [n for kind, task, n in events if (kind, task) == ("start", "embed")]
    assert embed_totals[-1] == report.text_units_embedded
    # failed documents are not progress: they leave the total, and are reported on their own
    done = sum(n or 0 for kind, task, n in events if (kind, task) == ("advance", "index"))
    assert done == 3
    index_totals = [n for kind, task, n in events if (kind, task) == ("start", "index")]
    assert index_totals[0] == 5 and index_totals[-1] == 3
    assert sum(1 for kind, _, _ in events if kind == "warn") == 2


def test_a_run_stopped_inside_a_document_keeps_its_finished_steps(tmp_path: Path) -> None:
    """Issue 16 item 6: a large document's units are stored step by step; a run stopped in
    its 4th step keeps 3 steps, the document stays pending, and the next run embeds only the
    rest (the embedder never sees a stored unit again)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "big.txt").write_text(_big_text(3000), encoding="utf-8")
    events: list[Event] = []

    async def stopped() -> tuple[int, DocStatus, str]:
        async with _app(tmp_path / "p", 16) as app:
            pipeline = _pipeline(app, LoadingEmbedder(events, stop_at=4), events)
            with pytest.raises(asyncio.CancelledError):
                await pipeline.run([corpus])
            stores = app.index("default")
            ids = [r.document_id for r in await stores.registry.list_records()]
            status = (await stores.registry.get(ids))[ids[0]].status
            stored = await stores.search.count(Collection.TEXT_UNITS)
            return stored, status, pipeline.kept.describe()

    async def resumed() -> tuple[IndexReport, int]:
        embedder = LoadingEmbedder([])
        async with _app(tmp_path / "p", 16) as app:
            report = await _pipeline(app, embedder, []).run([corpus])
            return report, embedder.embedded_texts

    stored, status, said = asyncio.run(stopped())
    assert stored == 3 * 16
    assert status is DocStatus.PENDING  # never visible as complete before its last step
    assert said.startswith("kept 48 of ") and said.endswith("big.txt embedded")
    report, embedded = asyncio.run(resumed())
    total = report.text_units_embedded + report.text_units_reused
    assert report.text_units_reused == 48
    assert embedded == report.text_units_embedded == total - 48
    assert not report.failed and report.documents_retried == 1


def test_a_step_written_as_the_run_is_stopped_is_counted_as_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store can finish a step's write (in its worker thread) after the run was cancelled;
    the interrupt message must count that step: it said "kept 32" over 48 stored units."""
    from unified_kg_rag.adapters.sqlite.search_index import SqliteSearchIndex

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "big.txt").write_text(_big_text(3000), encoding="utf-8")
    real_upsert = SqliteSearchIndex.upsert
    writes = 0
    third_written = asyncio.Event()

    async def upsert_then_pause(self: SqliteSearchIndex, *args: object, **kwargs: object) -> None:
        nonlocal writes
        await real_upsert(self, *args, **kwargs)  # type: ignore[arg-type]
        writes += 1
        if writes == 3:
            third_written.set()
        await asyncio.sleep(0.5)  # written, not yet returned: where Ctrl-C can land

    monkeypatch.setattr(SqliteSearchIndex, "upsert", upsert_then_pause)

    async def stopped() -> tuple[int, str]:
        async with _app(tmp_path / "p", 16) as app:
            pipeline = _pipeline(app, LoadingEmbedder([]), [])
            run = asyncio.ensure_future(pipeline.run([corpus]))
            await third_written.wait()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            stored = await app.index("default").search.count(Collection.TEXT_UNITS)
            return stored, pipeline.kept.describe()

    stored, said = asyncio.run(stopped())
    assert stored == 3 * 16
    assert said.startswith(f"kept {stored} of "), said
