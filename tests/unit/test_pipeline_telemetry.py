"""Spans, observers and log records of a staged pipeline run (issue 22, observability)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field

import pytest
from tests.support.otel import by_name, children_of, recorded_spans

from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import (
    Candidate,
    Pipeline,
    RateLimitedError,
    StageInput,
    StageOutput,
    StageTiming,
)
from unified_kg_rag.retrieval.pipeline_observers import observing
from unified_kg_rag.util import telemetry
from unified_kg_rag.util.errors import ModelError

pytestmark = pytest.mark.unit

__all__ = ["recorded_spans"]  # the fixture, used by name


@dataclass
class Seed:
    """Adds one candidate per id with a semantic signal."""

    ids: list[str]
    name: str = "semantic"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        found = [Candidate(i, signals={"semantic": 1.0 - n / 10}) for n, i in enumerate(self.ids)]
        return StageOutput(stage_input.candidates + found, stage_input.context)


@dataclass
class Keep:
    """Keeps the first ``n`` candidates."""

    n: int
    name: str = "trim"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        return StageOutput(stage_input.candidates[: self.n], stage_input.context)


@dataclass
class Failing:
    error: BaseException
    name: str = "rerank"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        raise self.error


@dataclass
class Collect:
    """A `PipelineObserver` that keeps what it hears."""

    stages: list[StageTiming] = field(default_factory=list)
    runs: list[tuple[float, int]] = field(default_factory=list)

    def stage_done(self, timing: StageTiming) -> None:
        self.stages.append(timing)

    def run_done(self, duration_s: float, results: int) -> None:
        self.runs.append((duration_s, results))


def pipeline(*stages: object) -> Pipeline:
    return Pipeline(list(stages), WeightedScorer({"semantic": 1.0}))  # type: ignore[arg-type]


def test_a_run_is_one_span_with_a_child_per_stage_then_scoring(recorded_spans: object) -> None:
    run = asyncio.run(pipeline(Seed(["a", "b", "c", "d"]), Keep(3)).execute("q", k=2))
    assert [r.candidate.id for r in run.results] == ["a", "b"]
    spans = recorded_spans.get_finished_spans()  # type: ignore[attr-defined]
    (root,) = by_name(spans, "ukr.pipeline")
    assert root.parent is None
    assert root.attributes["ukr.pipeline.stages"] == ("semantic", "trim")
    assert root.attributes["ukr.pipeline.k"] == 2 and root.attributes["ukr.pipeline.results"] == 2
    kids = children_of(spans, root)
    assert [s.name for s in kids] == ["ukr.stage.semantic", "ukr.stage.trim", "ukr.pipeline.scoring"]
    semantic, trim, scoring = kids
    assert dict(semantic.attributes) == {"ukr.stage.name": "semantic",
                                         "ukr.stage.candidates_in": 0,
                                         "ukr.stage.candidates_out": 4}
    assert trim.attributes["ukr.stage.candidates_in"] == 4
    assert trim.attributes["ukr.stage.candidates_out"] == 3
    assert scoring.attributes["ukr.pipeline.candidates"] == 3
    # the span's duration is the stage's, as PipelineRun reports it (same clock window)
    assert semantic.end_time - semantic.start_time >= run.stages[0].duration_s * 1e9 * 0.5
    assert len(spans) == 4


def test_a_failing_stage_ends_its_span_in_error_with_the_exception(recorded_spans: object) -> None:
    error = ModelError("slow down", transient=True, status_code=429)
    with pytest.raises(RateLimitedError):
        asyncio.run(pipeline(Seed(["a"]), Failing(error)).execute("q"))
    spans = recorded_spans.get_finished_spans()  # type: ignore[attr-defined]
    (stage,) = by_name(spans, "ukr.stage.rerank")
    (root,) = by_name(spans, "ukr.pipeline")
    assert stage.parent.span_id == root.context.span_id
    assert stage.status.status_code.name == "ERROR" and root.status.status_code.name == "ERROR"
    (event,) = [e for e in stage.events if e.name == "exception"]
    assert event.attributes["exception.type"].endswith("RateLimitedError")
    assert "stage rerank" in event.attributes["exception.message"]
    assert "ukr.stage.candidates_out" not in stage.attributes
    assert by_name(spans, "ukr.pipeline.scoring") == []


def test_observers_hear_each_stage_and_the_run() -> None:
    heard = Collect()
    with observing(heard):
        run = asyncio.run(pipeline(Seed(["a", "b", "c"]), Keep(2)).execute("q", k=1))
    assert heard.stages == run.stages
    assert [(t.name, t.candidates_in, t.candidates_out) for t in heard.stages] == [
        ("semantic", 0, 3), ("trim", 3, 2)]
    ((duration, results),) = heard.runs
    assert results == 1 and duration >= sum(t.duration_s for t in run.stages)
    # outside the block nobody hears
    asyncio.run(pipeline(Seed(["a"])).execute("q"))
    assert len(heard.runs) == 1


def test_an_observer_that_raises_is_logged_and_the_query_still_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        def stage_done(self, timing: StageTiming) -> None:
            raise RuntimeError("metrics backend gone")

        def run_done(self, duration_s: float, results: int) -> None:
            raise RuntimeError("metrics backend gone")

    heard = Collect()
    with observing(Broken()), observing(heard):  # type: ignore[arg-type]
        run = asyncio.run(pipeline(Seed(["a", "b"])).execute("q"))
    assert [r.candidate.id for r in run.results] == ["a", "b"]
    assert len(heard.stages) == 1 and len(heard.runs) == 1  # the next observer still heard
    failures = [r for r in caplog.records if "pipeline observer" in r.getMessage()]
    assert len(failures) == 2 and "metrics backend gone" in (failures[0].exc_text or "")


def test_without_opentelemetry_spans_are_a_shared_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # `import opentelemetry` fails
    telemetry.refresh()
    try:
        assert not telemetry.enabled()
        assert telemetry.span("ukr.x", {"a": 1}) is telemetry.NOOP_SPAN
        with telemetry.query_span() as current:
            current.set_attribute("k", "v")
            telemetry.set_current_attribute("k", "v")
        heard = Collect()
        with observing(heard):
            run = asyncio.run(pipeline(Seed(["a", "b"]), Keep(1)).execute("q"))
        assert [r.candidate.id for r in run.results] == ["a"]
        assert [t.candidates_out for t in heard.stages] == [2, 1]
        with pytest.raises(RateLimitedError):  # errors pass through the no-op span unchanged
            asyncio.run(pipeline(Failing(ModelError("x", status_code=429))).execute("q"))
    finally:
        monkeypatch.undo()
        telemetry.refresh()
    assert telemetry.enabled()


def test_stage_log_records_carry_the_stage_figures(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG", logger="unified_kg_rag.retrieval.pipeline")
    asyncio.run(pipeline(Seed(["a", "b", "c"]), Keep(1)).execute("q"))
    done = [r for r in caplog.records if getattr(r, "duration_ms", None) is not None]
    assert [(r.stage, r.candidates_in, r.candidates_out) for r in done] == [  # type: ignore[attr-defined]
        ("semantic", 0, 3), ("trim", 3, 1)]
    started = [r for r in caplog.records if "started" in r.getMessage()]
    assert [(r.stage, r.candidates_in) for r in started] == [("semantic", 0), ("trim", 3)]  # type: ignore[attr-defined]
