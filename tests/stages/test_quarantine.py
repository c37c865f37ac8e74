"""Attempts and quarantine (issue #15 item 5, seed 000 §5.3), on real SQLite files.

- A document that fails on ``indexing.quarantine_after`` consecutive runs is quarantined:
  the next run neither parses nor embeds it, ``--retry-quarantined`` and a change of its
  content release it, a success resets its count.
- An exception escaping a batch's write (an embedder raising on one document's text, at the
  port) is isolated by bisection: every other document of the batch is committed, the culprit
  is recorded failed (and counts toward quarantine). An error every document raises alike,
  or an error that is not a document's (transient, a store), is raised instead.
- A text unit whose extraction always fails (a real OpenAI-compatible server on 127.0.0.1)
  is quarantined likewise: no call for it on later runs, released by ``--retry-quarantined``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import _config, _user, reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection, DocStatus, ParsedDocument
from unified_kg_rag.ingestion.graph.build import graph_extractor
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ingestion.status import describe_index
from unified_kg_rag.ports import DocumentParser, Embedder
from unified_kg_rag.util.errors import EmbeddingModelError

pytestmark = pytest.mark.integration

BINARY = b"\x00\x01\x02 not text \xff\xfe" * 40


class CountingParser:
    """A real parser that counts the files it is asked to parse, by path."""

    def __init__(self, inner: DocumentParser, counts: Counter[str]) -> None:
        self._inner = inner
        self._counts = counts

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        self._counts[Path(path).name] += 1
        return self._inner.parse(data, path=path)


class PoisonedEmbedder:
    """The fake embedder, raising on any text that holds ``marker`` (or on every text)."""

    def __init__(self, marker: str | None, error: Exception | None = None) -> None:
        self._inner = FakeEmbedder()
        self.marker = marker
        self.error = error or ValueError("cannot embed this text")
        self.calls = 0
        self.poisoned_calls = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls += 1
        if self.marker is None or any(self.marker in t for t in texts):
            self.poisoned_calls += 1
            raise self.error
        return await self._inner.embed_documents(texts)

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        return await self._inner.embed_query(text)


def _text_only(**indexing: Any) -> UkrConfig:
    return UkrConfig(indexing={"methodologies": [], **indexing})  # type: ignore[arg-type]


def _pipeline(app: App, embedder: Embedder, counts: Counter[str] | None = None) -> IndexPipeline:
    parsers = app.parsers
    if counts is not None:
        parsers = {ext: CountingParser(p, counts) for ext, p in parsers.items()}
    return IndexPipeline(
        app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer, parsers=parsers,
        config=app.config, chat_model=app.chat_model, budget_tokenizer=app.budget_tokenizer,
        project_dir=app.project_dir,
    )


def test_a_document_that_always_fails_is_quarantined_then_skipped_then_released(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus", {"good.txt": "Ada Lovelace wrote notes."})
    (corpus / "bad.txt").write_bytes(BINARY)
    counts: Counter[str] = Counter()

    async def main() -> list[tuple[IndexReport, int, Any]]:
        out = []
        async with build_app(_text_only(), tmp_path / "p") as app:
            embedder = FakeEmbedder()
            for step in range(8):
                retry = step in (4, 7)
                if step == 5:
                    (corpus / "bad.txt").write_bytes(BINARY + b"\x00 other bytes")
                if step == 7:
                    (corpus / "bad.txt").write_text("Babbage fixed the file.", encoding="utf-8")
                report = await _pipeline(app, embedder, counts).run(
                    [corpus], retry_quarantined=retry)
                record = (await app.index().registry.list_records())
                bad = next(r for r in record if r.path == "bad.txt")
                out.append((report, counts["bad.txt"], bad))
        return out

    runs = asyncio.run(main())
    # runs 1-3 fail on the same bytes; the third quarantines it
    for n, (report, parsed, record) in enumerate(runs[:3], start=1):
        assert report.exit_code == 3 and parsed == n
        [failed] = report.failed
        assert failed.path.endswith("bad.txt") and "binary" in failed.reason
        assert failed.failures == n and failed.quarantined == (n == 3)
        assert record.failure_count == n
    assert runs[2][2].status is DocStatus.QUARANTINED and "binary" in (runs[2][2].error or "")
    # run 4: not parsed again, not a failure of this run
    report, parsed, record = runs[3]
    assert parsed == 3 and report.exit_code == 0 and report.failed == []
    assert report.documents_quarantined == 1 and report.documents_unchanged == 1
    assert record.status is DocStatus.QUARANTINED and record.failure_count == 3
    # run 5 (--retry-quarantined): tried again, fails again: quarantined again
    report, parsed, record = runs[4]
    assert parsed == 4 and report.documents_released == 1 and report.exit_code == 3
    assert report.failed[0].failures == 4 and record.status is DocStatus.QUARANTINED
    # run 6: new bytes release it (it fails again, counted from 1); run 7 retries it
    report, parsed, record = runs[5]
    assert parsed == 5 and report.documents_changed == 1 and record.failure_count == 1
    assert record.status is DocStatus.FAILED
    assert runs[6][1] == 6 and runs[6][2].failure_count == 2
    # run 8: fixed: processed, the count is gone
    report, parsed, record = runs[7]
    assert report.exit_code == 0 and record.status is DocStatus.PROCESSED
    assert record.failure_count == 0 and record.text_unit_ids


def test_a_poisoned_document_is_isolated_by_bisection_and_the_batch_committed(
    tmp_path: Path,
) -> None:
    docs = {f"d{i}.txt": f"Document number {i} talks about engines." for i in range(8)}
    docs["d4.txt"] = "Document four holds the POISON text."
    corpus = write_docs(tmp_path / "corpus", docs)

    async def main() -> tuple[list[IndexReport], dict[str, DocStatus], int, list[int]]:
        embedder = PoisonedEmbedder("POISON")
        reports, poisoned = [], []
        async with build_app(_text_only(batch_documents=16), tmp_path / "p") as app:
            for _ in range(4):
                reports.append(await _pipeline(app, embedder).run([corpus]))
                poisoned.append(embedder.poisoned_calls)
            stores = app.index()
            statuses = {r.path: r.status for r in await stores.registry.list_records()}
            units = await stores.search.count(Collection.TEXT_UNITS)
        return reports, statuses, units, poisoned

    reports, statuses, units, poisoned = asyncio.run(main())
    first = reports[0]
    assert first.exit_code == 3 and [Path(f.path).name for f in first.failed] == ["d4.txt"]
    assert "ValueError: cannot embed this text" in first.failed[0].reason
    # every other document of the batch is committed, its text units stored once
    assert first.documents_new == 8 and first.text_units_written == 7
    assert units == 7
    assert {p: s for p, s in statuses.items() if p != "d4.txt"} == {
        f"d{i}.txt": DocStatus.PROCESSED for i in range(8) if i != 4}
    # runs 2 and 3 fail it alone (a batch of one: no bisection), the third quarantines it
    assert [r.failed[0].failures for r in reports[:3]] == [1, 2, 3]
    assert reports[2].failed[0].quarantined and statuses["d4.txt"] is DocStatus.QUARANTINED
    # the batch of 8, then halves of 4 and 2 down to the culprit alone: 4 poisoned calls;
    # runs 2 and 3 one each; run 4: the culprit is not embedded again
    assert poisoned == [4, 5, 6, 6]
    assert reports[3].exit_code == 0 and reports[3].documents_quarantined == 1


def test_an_error_every_document_raises_alike_is_raised_not_recorded(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", {f"d{i}.txt": f"Text {i}." for i in range(4)})

    async def main() -> tuple[list[DocStatus], PoisonedEmbedder]:
        embedder = PoisonedEmbedder(None, RuntimeError("the embedding device is gone"))
        async with build_app(_text_only(), tmp_path / "p") as app:
            with pytest.raises(RuntimeError, match="embedding device is gone"):
                await _pipeline(app, embedder).run([corpus])
            records = await app.index().registry.list_records()
        return [r.status for r in records], embedder

    statuses, embedder = asyncio.run(main())
    # left pending (retried by the next run), never failed or quarantined
    assert statuses == [DocStatus.PENDING] * 4
    assert embedder.calls == 1 + 2 + 4  # the batch, its halves, each document alone


def test_an_error_that_is_not_a_documents_propagates_at_once(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", {f"d{i}.txt": f"Text {i}." for i in range(4)})
    down = EmbeddingModelError("embedding server unreachable", transient=True)

    async def main() -> PoisonedEmbedder:
        embedder = PoisonedEmbedder("Text 2", down)
        async with build_app(_text_only(), tmp_path / "p") as app:
            with pytest.raises(EmbeddingModelError, match="unreachable"):
                await _pipeline(app, embedder).run([corpus])
        return embedder

    assert asyncio.run(main()).calls == 1  # no bisection


def test_a_text_unit_whose_extraction_always_fails_is_quarantined_and_released(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")
    state = {"broken": True}

    def answer(body: dict[str, Any]) -> str:
        text = _user(body)
        if state["broken"] and "Kyoto University is" in text and "<current_items>" not in text:
            return "Sorry, I cannot comply."
        return reply(body)

    def kyoto_calls(server: FakeOpenAIServer) -> int:
        return sum("Kyoto University is" in _user(r.body) and "<current_items>" not in
                   _user(r.body) for r in server.requests_to("/chat/completions"))

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        out: dict[str, Any] = {"reports": [], "calls": []}
        async with build_app(_config(server), tmp_path / "p") as app:
            pipeline = _pipeline(app, FakeEmbedder())
            for step in range(6):
                if step == 5:
                    state["broken"] = False
                retry = step in (4, 5)
                out["reports"].append(await pipeline.run([corpus], retry_quarantined=retry))
                out["calls"].append(kyoto_calls(server))
                if step == 3:
                    assert app.chat_model is not None
                    index = app.index()
                    out["status"] = await describe_index(
                        index, extractor=graph_extractor(app.config, app.chat_model,
                                                         index.records))
            assert app.chat_model is not None
            index = app.index()
            out["after"] = await describe_index(
                index, extractor=graph_extractor(app.config, app.chat_model, index.records))
        return out

    with FakeOpenAIServer(reply=answer) as server:
        out = asyncio.run(main(server))
    reports: list[IndexReport] = out["reports"]
    graphs = [r.graph for r in reports]
    assert all(g is not None for g in graphs)
    for n in range(3):
        [failed] = graphs[n].units_failed  # type: ignore[union-attr]
        assert failed.path == "kyoto.txt" and failed.failures == n + 1
        assert failed.quarantined == (n == 2) and reports[n].exit_code == 3
    assert out["calls"][:3] == [1, 2, 3]
    # run 4: no call for it, the build is complete without it, the run succeeds
    assert out["calls"][3] == 3 and reports[3].exit_code == 0
    assert graphs[3].units_quarantined == 1 and graphs[3].units_failed == []  # type: ignore[union-attr]
    [item] = out["status"].quarantined
    assert (item.kind, item.path, item.failures) == ("text unit", "kyoto.txt", 3)
    assert "no <entities> section" in item.error
    # run 5 (--retry-quarantined): asked again, fails again; run 6: answered, released
    assert out["calls"][4] == 4 and graphs[4].units_failed[0].failures == 4  # type: ignore[union-attr]
    assert out["calls"][5] == 5 and reports[5].exit_code == 0 and graphs[5].complete  # type: ignore[union-attr]
    assert graphs[5].entities == 7 and out["after"].quarantined == []  # type: ignore[union-attr]


def test_units_are_not_quarantined_when_no_unit_was_ever_extracted(tmp_path: Path) -> None:
    # every extraction fails: a setting or the model is at fault, not every text
    corpus = write_docs(tmp_path / "corpus")

    def answer(body: dict[str, Any]) -> str:
        text = _user(body)
        if "<text>" in text and "<current_items>" not in text:
            return "Sorry, I cannot comply."
        return reply(body)

    async def main(server: FakeOpenAIServer) -> list[IndexReport]:
        async with build_app(_config(server), tmp_path / "p") as app:
            pipeline = _pipeline(app, FakeEmbedder())
            return [await pipeline.run([corpus]) for _ in range(4)]

    with FakeOpenAIServer(reply=answer) as server:
        reports = asyncio.run(main(server))
    for report in reports:
        assert report.graph is not None and report.exit_code == 3
        assert len(report.graph.units_failed) == 4 and report.graph.units_quarantined == 0
        assert all(f.failures == 0 and not f.quarantined for f in report.graph.units_failed)
