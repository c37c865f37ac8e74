"""Pipelines by preset and by definition, over the fake stores (seed 002 presets)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.fakes import FakeEmbedder, FakeGraphStore
from tests.fakes.search_index import FakeSearchIndex

from unified_kg_rag.domain.models import Collection, Entity, IndexRecord, Relationship
from unified_kg_rag.retrieval.pipeline import Candidate, StageInput, StageOutput
from unified_kg_rag.retrieval.pipeline_presets import (
    PIPELINE_STAGES,
    PipelineComponents,
    pipeline_from_spec,
    preset_pipeline,
)
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit

TEXTS = {
    "u1": "Ada Lovelace wrote Note G for the Analytical Engine.",
    "u2": "Charles Babbage designed the Analytical Engine.",
    "u3": "Babbage also built the Difference Engine in London.",
}


class _Reranker:
    async def rerank(self, query: str, texts: list[str]) -> list[float]:
        return [float("London" in t) for t in texts]


async def _components(reranker: bool = True) -> PipelineComponents:
    index, embedder, graph = FakeSearchIndex(), FakeEmbedder(), FakeGraphStore()
    ids = sorted(TEXTS)
    await index.bind_embedding(embedder.model_id, embedder.dimension)
    await index.upsert(Collection.TEXT_UNITS, [IndexRecord(id=i, text=TEXTS[i]) for i in ids],
                       await embedder.embed_documents([TEXTS[i] for i in ids]))  # fmt: skip
    await graph.upsert_entities([
        Entity(id="ada", name="Ada Lovelace", text_unit_ids=("u1",)),
        Entity(id="babbage", name="Charles Babbage", text_unit_ids=("u2", "u3"))])
    await graph.upsert_relationships([Relationship(id="r", source_id="ada",
                                                   target_id="babbage")])  # fmt: skip
    return PipelineComponents(index, embedder, graph, _Reranker() if reranker else None)


def test_every_preset_runs_and_reports_its_stages() -> None:
    async def main() -> dict[str, Any]:
        comps = await _components()
        out = {}
        for name in ("minimal", "no_rerank", "standard"):
            run = await preset_pipeline(name, comps).execute("Ada Lovelace", k=3)
            out[name] = ([r.candidate.id for r in run.results], [s.name for s in run.stages],
                         run.results)
        return out

    got = asyncio.run(main())
    assert got["minimal"][1] == ["semantic", "hydrate"]
    assert got["minimal"][0][0] == "u1"
    assert got["standard"][1] == ["semantic", "lexical", "hydrate", "graph", "hydrate_expanded",
                                  "temporal_decay", "rerank"]  # fmt: skip
    assert got["no_rerank"][1] == got["standard"][1][:-1]
    # every result of the standard preset is hydrated and carries the graph signal
    standard = got["standard"][2]
    assert all(r.candidate.text for r in standard)
    assert {"graph", "rerank", "temporal"} <= set(standard[0].signals)


def test_a_custom_stage_registered_by_name_runs_in_a_definition() -> None:
    class Pin:
        name = "pin"

        async def execute(self, stage_input: StageInput) -> StageOutput:
            return StageOutput([*stage_input.candidates, Candidate("pinned", text="P",
                                                                   signals={"pin": 1.0})])

    PIPELINE_STAGES.register("pin_for_test", lambda c, p: Pin(), replace=True)
    spec = {"stages": [{"stage": "semantic", "limit": 2}, {"stage": "pin_for_test"}],
            "scorer": {"kind": "weighted", "weights": {"semantic": 0.5, "pin": 0.5}}}

    async def main() -> list[str]:
        run = await pipeline_from_spec(spec, await _components()).execute("Babbage", k=2)
        return [r.candidate.id for r in run.results]

    assert asyncio.run(main())[0] == "pinned"


@pytest.mark.parametrize(("spec", "message"), [
    ({}, r"^stages: a pipeline lists at least one stage$"),
    ({"stages": [{"stage": "semantik"}]},
     r"^stages\.0\.stage: unknown pipeline stage 'semantik'; registered: access, .*semantic"),
    ({"stages": [{"stage": "semantic", "limt": 5}]}, r"^stages\.0\.limt: unknown parameter 'limt'$"),
    ({"stages": [{"stage": "rerank"}]},
     r"^stages\.0: stage 'rerank' needs a reranker, and none is configured: set `query\.rerank"),
    ({"stages": [{"stage": "semantic"}], "scorer": {"kind": "weighted", "weights": {}}},
     r"^scorer: at least one signal weight must be positive$"),
    ({"stages": [{"stage": "semantic"}], "stage_timeout": 3}, r"^pipeline: unknown key"),
    ({"stages": ["semantic"]}, r"^stages\.0: each stage is a mapping"),
])  # fmt: skip
def test_bad_definitions_are_one_line_errors(spec: dict[str, Any], message: str) -> None:
    async def main() -> None:
        pipeline_from_spec(spec, await _components(reranker=False))

    with pytest.raises(ConfigurationError, match=message) as caught:
        asyncio.run(main())
    assert "\n" not in str(caught.value)


def test_an_unknown_preset_lists_the_presets() -> None:
    async def main() -> None:
        preset_pipeline("fast", await _components())

    with pytest.raises(ConfigurationError, match="minimal, no_rerank, standard"):
        asyncio.run(main())
