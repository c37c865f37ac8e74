"""The staged pipeline's machinery (seed 002) with stages of the test's own."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import (
    Candidate,
    NoCandidatesError,
    Pipeline,
    PipelineBuilder,
    PipelineError,
    RateLimitedError,
    StageConnectionError,
    StageInput,
    StageOutput,
    StageTimeoutError,
)
from unified_kg_rag.util.errors import ModelError, StoreConnectionError

pytestmark = pytest.mark.unit


@dataclass
class Seed:
    """Adds candidates with a semantic signal and records what it was given."""

    scores: dict[str, float]
    name: str = "semantic"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        found = [Candidate(i, signals={"semantic": s}) for i, s in self.scores.items()
                 if stage_input.filters.get("drop") != i]  # fmt: skip
        return StageOutput(stage_input.candidates + found, {**stage_input.context, "seen": 1})


@dataclass
class Boost:
    """Sets a graph signal on some candidates and drops one; reads the context."""

    graph: dict[str, float]
    drop: str = ""
    name: str = "graph"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        assert stage_input.context == {"seen": 1}
        kept = [c for c in stage_input.candidates if c.id != self.drop]
        for c in kept:
            if c.id in self.graph:
                c.signals["graph"] = self.graph[c.id]
        return StageOutput(kept, stage_input.context)


@dataclass
class Failing:
    error: BaseException
    name: str = "broken"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        raise self.error


@dataclass
class Slow:
    name: str = "slow"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        await asyncio.sleep(5)
        return StageOutput(stage_input.candidates)


SCORER = WeightedScorer({"semantic": 0.6, "graph": 0.4})


def test_stages_run_in_order_and_the_scorer_ranks() -> None:
    pipeline = (PipelineBuilder().add(Seed({"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.2}))
                .add(Boost({"b": 1.0, "c": 0.25}, drop="d")).scoring(SCORER).build())
    run = asyncio.run(pipeline.execute("q", k=2))
    # a: .6*.9 = .54; b: .6*.5 + .4*1 = .70; c: .6*.4 + .4*.25 = .34
    assert [(r.candidate.id, round(r.score, 6)) for r in run.results] == [("b", 0.7),
                                                                          ("a", 0.54)]
    assert run.results[0].signals == {"semantic": 0.5, "graph": 1.0}
    assert [(t.name, t.candidates_in, t.candidates_out) for t in run.stages] == [
        ("semantic", 0, 4), ("graph", 4, 3)]
    assert all(t.duration_s >= 0 for t in run.stages)


def test_min_score_and_filters_reach_the_result() -> None:
    pipeline = PipelineBuilder().add(Seed({"a": 0.9, "b": 0.5})).scoring(SCORER).build()
    run = asyncio.run(pipeline.execute("q", k=10, min_score=0.4))
    assert [r.candidate.id for r in run.results] == ["a"]  # b: .30 < .4
    filtered = asyncio.run(pipeline.execute("q", k=10, filters={"drop": "a"}))
    assert [r.candidate.id for r in filtered.results] == ["b"]


def test_an_empty_run_is_no_candidates_naming_the_last_stage() -> None:
    pipeline = (PipelineBuilder().add(Seed({"a": 0.9})).add(Boost({}, drop="a"))
                .scoring(SCORER).build())
    with pytest.raises(NoCandidatesError, match=r"^stage graph: no candidate") as caught:
        asyncio.run(pipeline.execute("q"))
    assert caught.value.stage == "graph"


@pytest.mark.parametrize(("error", "kind"), [
    (StoreConnectionError("database is down"), StageConnectionError),
    (ConnectionRefusedError("refused"), StageConnectionError),
    (ModelError("slow down", transient=True, status_code=429), RateLimitedError),
    (ModelError("bad request", status_code=400), PipelineError),
])  # fmt: skip
def test_stage_errors_are_typed_and_name_the_stage(error: Exception, kind: type) -> None:
    pipeline = PipelineBuilder().add(Seed({"a": 1.0})).add(Failing(error)).scoring(SCORER).build()
    with pytest.raises(kind) as caught:
        asyncio.run(pipeline.execute("q"))
    assert type(caught.value) is kind and caught.value.stage == "broken"
    assert str(caught.value).startswith("stage broken: ")
    assert caught.value.__cause__ is error


def test_a_stage_past_the_timeout_is_a_timeout_error() -> None:
    pipeline = PipelineBuilder().add(Slow()).stage_timeout(0.05).scoring(SCORER).build()
    with pytest.raises(StageTimeoutError, match=r"^stage slow: ran past 0\.05 s$"):
        asyncio.run(pipeline.execute("q"))


def test_bad_pipelines_are_refused() -> None:
    with pytest.raises(ValueError, match="scorer"):
        PipelineBuilder().add(Seed({})).build()
    with pytest.raises(ValueError, match="at least one stage"):
        PipelineBuilder().scoring(SCORER).build()
    with pytest.raises(ValueError, match="distinct"):
        Pipeline([Seed({}), Seed({})], SCORER)
    with pytest.raises(ValueError, match="positive"):
        PipelineBuilder().stage_timeout(0)
    with pytest.raises(ValueError, match="k must be"):
        asyncio.run(Pipeline([Seed({"a": 1})], SCORER).execute("q", k=0))


def test_no_candidates_names_the_stage_that_emptied_the_run(caplog: pytest.LogCaptureFixture) -> None:
    from unified_kg_rag.retrieval.pipeline import Candidate, NoCandidatesError, PipelineBuilder

    @dataclass
    class Emit:
        ids: tuple[str, ...]
        name: str

        async def execute(self, stage_input: StageInput) -> StageOutput:
            found = [Candidate(i, signals={"semantic": 0.5}) for i in self.ids]
            return StageOutput([*stage_input.candidates, *found], stage_input.context)

    @dataclass
    class Drop:
        name: str = "drop"

        async def execute(self, stage_input: StageInput) -> StageOutput:
            return StageOutput([], stage_input.context)

    def run(*stages: Any) -> str:
        builder = PipelineBuilder()
        for stage in stages:
            builder.add(stage)
        pipeline = builder.scoring(WeightedScorer({"semantic": 1.0})).build()
        with pytest.raises(NoCandidatesError) as caught:
            asyncio.run(pipeline.execute("q"))
        return caught.value.stage

    assert run(Emit((), "semantic"), Emit((), "other")) == "semantic"  # the first found none
    assert run(Emit(("a",), "semantic"), Drop(), Emit((), "late")) == "drop"
    # a weight naming a signal no stage set (a typo) is one warning per pipeline
    pipeline = (PipelineBuilder().add(Emit(("a",), "semantic"))
                .scoring(WeightedScorer({"semantic": 1.0, "access_signal": 1.0, "graph": 1.0}))
                .build())  # fmt: skip
    with caplog.at_level("WARNING", logger="unified_kg_rag.retrieval.pipeline"):
        asyncio.run(pipeline.execute("q"))
        asyncio.run(pipeline.execute("q"))
    warned = [r.getMessage() for r in caplog.records if "no stage set" in r.getMessage()]
    assert len(warned) == 1 and "access_signal" in warned[0] and "graph" not in warned[0].split(
        "(")[0]
