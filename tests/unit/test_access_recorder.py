"""`AccessRecorder`: queued off the query's path, written by one task, never raising."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

import pytest
from tests.fakes import FakeAccessLog, FakeSearchIndex

from unified_kg_rag.domain.models import Collection, Source
from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.access import AccessRecorder
from unified_kg_rag.retrieval.pipeline import (
    Candidate,
    PipelineBuilder,
    StageInput,
    StageOutput,
)
from unified_kg_rag.util.errors import StoreConnectionError

TU = Collection.TEXT_UNITS


class FlakyLog(FakeAccessLog):
    """Fails its first ``failures`` increments (a locked database), then writes."""

    def __init__(self, failures: int) -> None:
        super().__init__(FakeSearchIndex())
        self.failures = failures

    async def increment(self, collection: Collection, counts: Mapping[str, int]) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise StoreConnectionError("SQLite database x.db: database is locked")
        await super().increment(collection, counts)


def _source(n: int, kind: str, item_id: str) -> Source:
    return Source(n=n, kind=kind, id=item_id, text="t")


def test_recorded_sources_are_written_in_one_batch_per_collection() -> None:
    log = FakeAccessLog(FakeSearchIndex())

    async def body() -> None:
        recorder = AccessRecorder(log, flush_interval_s=0.01)
        for _ in range(3):
            recorder.record_sources([
                _source(1, "text_unit", "u1"), _source(2, "text_unit", "u2"),
                _source(3, "report", "c1"), _source(4, "key_points", "global:1"),
            ])  # fmt: skip
        assert log.values == {}  # queued only: nothing written on the query's path
        assert recorder.pending == 9
        await asyncio.sleep(0.2)  # the writer gathers, then writes
        assert recorder.pending == 0
        await recorder.aclose()

    asyncio.run(body())
    assert dict(log.values) == {(TU, "u1"): 3, (TU, "u2"): 3, (Collection.REPORTS, "c1"): 3}
    assert log.increments == 2  # one transaction per collection: all 9 counts at once


def test_a_failed_write_keeps_its_counts_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    log = FlakyLog(failures=3)

    async def body() -> None:
        recorder = AccessRecorder(log, flush_interval_s=0.01)
        recorder.record(TU, ["a", "b", "a"])
        await asyncio.sleep(0.02)
        recorder.record(TU, ["b"])
        for _ in range(100):  # retried with a growing wait: 0.01, 0.02, 0.04 ... seconds
            await asyncio.sleep(0.02)
            if not recorder.pending:
                break
        await recorder.aclose()

    with caplog.at_level(logging.INFO, logger="unified_kg_rag.retrieval.access"):
        asyncio.run(body())
    assert dict(log.values) == {(TU, "a"): 2, (TU, "b"): 2}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "not written (kept to retry)" in warnings[0].getMessage()
    assert "database is locked" in warnings[0].getMessage()


def test_closing_writes_the_queue_and_reports_what_it_cannot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    written = FakeAccessLog(FakeSearchIndex())
    broken = FlakyLog(failures=10**6)

    async def body() -> None:
        first = AccessRecorder(written, flush_interval_s=3600)
        first.record(TU, ["a", "b"])
        await first.aclose()  # written now, not an hour later
        second = AccessRecorder(broken, flush_interval_s=3600)
        second.record(TU, ["a", "b", "c"])
        await second.aclose()
        second.record(TU, ["d"])  # after closing: queued, no writer started

    with caplog.at_level(logging.WARNING, logger="unified_kg_rag.retrieval.access"):
        asyncio.run(body())
    assert dict(written.values) == {(TU, "a"): 1, (TU, "b"): 1}
    assert broken.values == {}
    assert any("3 count(s) could not be written and are lost" in r.getMessage()
               for r in caplog.records)  # fmt: skip


def test_the_end_of_the_event_loop_writes_the_queue() -> None:
    """``asyncio.run`` cancels the writer at exit; it writes its queue as it stops."""
    log = FakeAccessLog(FakeSearchIndex())
    recorder = AccessRecorder(log, flush_interval_s=3600)

    async def one_query(item: str) -> None:
        recorder.record(TU, [item, "shared"])

    asyncio.run(one_query("a"))
    asyncio.run(one_query("b"))  # a new loop starts a new writer
    assert dict(log.values) == {(TU, "a"): 1, (TU, "b"): 1, (TU, "shared"): 2}


def test_the_queue_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    log = FakeAccessLog(FakeSearchIndex())

    async def body() -> None:
        recorder = AccessRecorder(log, flush_interval_s=3600, max_pending=3)
        recorder.record(TU, ["a", "b", "c", "d", "a"])  # d: a 4th distinct item, dropped
        assert recorder.pending == 4
        await recorder.aclose()

    with caplog.at_level(logging.WARNING, logger="unified_kg_rag.retrieval.access"):
        asyncio.run(body())
    assert dict(log.values) == {(TU, "a"): 2, (TU, "b"): 1, (TU, "c"): 1}
    assert any("1 item(s) dropped" in r.getMessage() for r in caplog.records)


def test_recording_never_raises_into_the_query(caplog: pytest.LogCaptureFixture) -> None:
    recorder = AccessRecorder(FakeAccessLog(FakeSearchIndex()))

    def bad_ids() -> Sequence[str]:
        raise RuntimeError("iterator broke")

    class Broken:
        def __iter__(self) -> object:
            return iter(bad_ids())

    with caplog.at_level(logging.WARNING, logger="unified_kg_rag.retrieval.access"):
        recorder.record(TU, Broken())  # type: ignore[arg-type]
    assert "iterator broke" in caplog.records[-1].getMessage()
    with pytest.raises(ValueError, match="flush_interval_s"):
        AccessRecorder(FakeAccessLog(FakeSearchIndex()), flush_interval_s=0)
    with pytest.raises(ValueError, match="max_pending"):
        AccessRecorder(FakeAccessLog(FakeSearchIndex()), max_pending=0)


class _Fixed:
    name = "fixed"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        found = [Candidate("u1", signals={"semantic": 0.9}),
                 Candidate("u2", signals={"semantic": 0.5}),
                 Candidate("e1", kind="entity", signals={"semantic": 0.7}),
                 Candidate("u3", signals={"semantic": 0.1})]  # fmt: skip
        return StageOutput(found)


def test_a_pipeline_observer_counts_each_runs_results() -> None:
    log = FakeAccessLog(FakeSearchIndex())

    class Exploding:
        def observe(self, query: str, run: object) -> None:
            raise RuntimeError("observer broke")

    async def body() -> None:
        recorder = AccessRecorder(log, flush_interval_s=3600)
        pipeline = (PipelineBuilder().add(_Fixed()).scoring(WeightedScorer({"semantic": 1.0}))
                    .observe(Exploding()).observe(recorder).build())  # fmt: skip
        for _ in range(4):
            run = await pipeline.execute("q", k=3)
            assert [r.candidate.id for r in run.results] == ["u1", "e1", "u2"]
        await recorder.aclose()

    asyncio.run(body())
    assert dict(log.values) == {(TU, "u1"): 4, (TU, "u2"): 4, (Collection.ENTITIES, "e1"): 4}
