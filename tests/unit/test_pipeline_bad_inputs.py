"""What a user throws at the staged pipeline: each bad input is one clear error, never a crash.

The cases come from the break-it review of issue #22: definitions with odd values (a
collection given as text, zero limits, timeouts that are not positive numbers, weights that
are not numbers), stages of one's own that misbehave, client-chosen stage names in the
service's metrics, and a Markdown date that does not exist.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

import pytest
from tests.fakes import FakeEmbedder
from tests.fakes.search_index import FakeSearchIndex

from unified_kg_rag.adapters.parsers.plaintext import front_matter_dates
from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import (
    Candidate,
    PipelineBuilder,
    PipelineError,
    StageInput,
    StageOutput,
    StageTimeoutError,
    StageTiming,
)
from unified_kg_rag.retrieval.pipeline_presets import (
    MAX_STAGES,
    PipelineComponents,
    pipeline_from_spec,
)
from unified_kg_rag.retrieval.pipeline_strategy import choose_pipeline
from unified_kg_rag.util.errors import ConfigurationError


def _components() -> PipelineComponents:
    async def fill() -> PipelineComponents:
        index, embedder = FakeSearchIndex(), FakeEmbedder()
        texts = ["caching keeps answers", "owls hunt at night"]
        await index.bind_embedding(embedder.model_id, embedder.dimension)
        await index.upsert(Collection.TEXT_UNITS, [
            IndexRecord(id=f"u{i}", text=t, fields={"path": f"{i}.txt"})
            for i, t in enumerate(texts)], await embedder.embed_documents(texts))  # fmt: skip
        return PipelineComponents(index=index, embedder=embedder)

    return asyncio.run(fill())


SEM = {"stage": "semantic", "limit": 5}


@pytest.mark.parametrize(("spec", "field", "message"), [
    ({"stages": [{"stage": "semantic", "collection": "bogus"}]}, "stages.0",
     "collection must be one of text_units"),
    ({"stages": [{"stage": "semantic", "limit": 0}]}, "stages.0",
     "limit must be a whole number >= 1, got 0"),
    ({"stages": [{"stage": "lexical", "limit": -1}]}, "stages.0",
     "limit must be a whole number >= 1, got -1"),
    ({"stages": [SEM, {"stage": "access", "cap": 0}]}, "stages.1",
     "cap must be a whole number >= 1, got 0"),
    ({"stages": [{"stage": "semantic", "min_score": math.nan}]}, "stages.0",
     "min_score must be a finite number"),
    ({"stages": [SEM, {"stage": "temporal_decay", "now_s": math.inf}]}, "stages.1",
     "now_s must be a finite time"),
    ({"stages": [{"stage": "semantic", "index": None}]}, "stages.0.index",
     "unknown parameter 'index'"),
    ({"stages": [{"stage": "semantic", "name": ""}]}, "pipeline",
     "a stage name must be printable text, got ''"),
    ({"stages": [SEM, {"stage": "semantic"}]}, "pipeline", "give a second use its own `name`"),
    ({"stages": [SEM], "stage_timeout_s": 0}, "stage_timeout_s",
     "must be a positive number of seconds, got 0"),
    ({"stages": [SEM], "stage_timeout_s": -1}, "stage_timeout_s", "got -1"),
    ({"stages": [SEM], "stage_timeout_s": math.nan}, "stage_timeout_s", "got nan"),
    ({"stages": [SEM], "stage_timeout_s": True}, "stage_timeout_s", "got True"),
    ({"stages": [SEM], "stage_timeout_s": "5"}, "stage_timeout_s", "got '5'"),
    ({"stages": [SEM], "scorer": {"kind": "weighted", "weights": None}}, "scorer",
     "weights must map signal names to numbers, got None"),
    ({"stages": [SEM], "scorer": {"kind": "weighted", "weights": ["semantic"]}}, "scorer",
     "weights must map signal names to numbers"),
    ({"stages": [SEM], "scorer": {"kind": "weighted", "weights": {"semantic": "0.5"}}},
     "scorer", "weight of signal 'semantic' must be a number, got '0.5'"),
    ({"stages": [SEM], "scorer": {"kind": "weighted", "weights": {"semantic": True}}},
     "scorer", "weight of signal 'semantic' must be a number, got True"),
    ({"stages": [SEM], "scorer": {"kind": "weighted", "weights": {"a": 1e308, "b": 1e308}}},
     "scorer", "the weights' sum must be finite"),
    ({"stages": [SEM] * (MAX_STAGES + 1)}, "stages", f"at most {MAX_STAGES} stages"),
])  # fmt: skip
def test_odd_definition_values_are_one_line_errors_naming_the_field(
    spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        pipeline_from_spec(spec, _components())
    assert caught.value.field == field
    assert message in caught.value.message
    assert "\n" not in str(caught.value)


def test_a_collection_given_as_text_searches_that_collection() -> None:
    components = _components()
    pipeline = pipeline_from_spec({"stages": [
        {"stage": "semantic", "collection": "text_units", "limit": 2},
        {"stage": "hydrate", "collection": "text_units"}]}, components)  # fmt: skip
    run = asyncio.run(pipeline.execute("caching", k=2))
    assert {r.candidate.id for r in run.results} == {"u0", "u1"}


@dataclass
class Misbehaving:
    mode: str
    name: str = "mine"

    async def execute(self, stage_input: StageInput) -> Any:
        if self.mode == "raise":
            raise KeyError("missing")
        if self.mode == "timeout":  # an HTTP client's own timeout, not the stage limit
            raise TimeoutError("read timed out")
        if self.mode == "none":
            return None
        return StageOutput([Candidate("a", signals={"semantic": 1.0})], {})


@dataclass
class SyncStage:
    name: str = "sync"

    def execute(self, stage_input: StageInput) -> StageOutput:
        return StageOutput([], {})


@pytest.mark.parametrize(("stage", "message"), [
    (Misbehaving("raise"), "stage mine: KeyError: 'missing'"),
    (Misbehaving("none"), "stage mine: returned NoneType, not a StageOutput"),
    (Misbehaving("timeout"), "stage mine: TimeoutError: read timed out"),
    (SyncStage(), "stage sync: TypeError: "),
])  # fmt: skip
def test_a_misbehaving_stage_of_ones_own_is_a_pipeline_error_naming_it(
    stage: Any, message: str
) -> None:
    pipeline = PipelineBuilder().add(stage).scoring(WeightedScorer({"semantic": 1.0})).build()
    with pytest.raises(PipelineError) as caught:
        asyncio.run(pipeline.execute("q"))
    assert str(caught.value).startswith(message)
    assert caught.value.stage == stage.name
    assert not isinstance(caught.value, StageTimeoutError)  # no stage limit was set


def test_k_must_be_a_whole_number() -> None:
    pipeline = (PipelineBuilder().add(Misbehaving("ok"))
                .scoring(WeightedScorer({"semantic": 1.0})).build())  # fmt: skip
    for k in (1.5, "3", True, 0):
        with pytest.raises(ValueError, match="k must be a whole number >= 1"):
            asyncio.run(pipeline.execute("q", k=k))  # type: ignore[arg-type]
    assert [r.candidate.id for r in asyncio.run(pipeline.execute("q", k=1)).results] == ["a"]


def test_an_empty_pipeline_choice_is_no_folder() -> None:
    with pytest.raises(ConfigurationError, match="no pipeline preset ''; presets: "):
        choose_pipeline("", _components(), field="--pipeline", files=True)


def test_client_named_stages_get_a_bounded_number_of_metric_series() -> None:
    from unified_kg_rag.service.metrics import MAX_STAGE_LABELS, ServiceMetrics

    metrics = ServiceMetrics()
    for i in range(MAX_STAGE_LABELS + 50):
        metrics.observe_stage(StageTiming(f"h{i}", 0.001, 1, 1))
    metrics.observe_stage(StageTiming("h0", 0.001, 1, 1))  # a name seen before keeps its own
    labels = {sample.labels["stage"]
              for family in metrics.registry.collect()
              if family.name == "ukr_pipeline_stage_duration_seconds"
              for sample in family.samples}  # fmt: skip
    assert len(labels) == MAX_STAGE_LABELS + 1 and "other" in labels and "h0" in labels


@pytest.mark.parametrize("front", ["date: 2024-13-45", "lastmod: 2024-02-30 10:00:00",
                                   "date: [2024, 1]", "date: {a: 1}"])
def test_an_impossible_front_matter_date_is_ignored_not_a_failed_file(front: str) -> None:
    assert front_matter_dates(f"---\n{front}\n---\nBody text.\n") == {}
