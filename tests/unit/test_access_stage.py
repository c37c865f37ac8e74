"""The ``access`` stage reading recorded counts: one batched read, `access_signal` values."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from tests.fakes import FakeAccessLog, FakeSearchIndex

from unified_kg_rag.domain.models import Collection
from unified_kg_rag.retrieval.pipeline import Candidate, StageInput
from unified_kg_rag.retrieval.pipeline_presets import PipelineComponents, pipeline_from_spec
from unified_kg_rag.retrieval.pipeline_stages import AccessStage

TU, ENT = Collection.TEXT_UNITS, Collection.ENTITIES


class CountingLog(FakeAccessLog):
    def __init__(self) -> None:
        super().__init__(FakeSearchIndex())
        self.reads: list[tuple[Collection, list[str]]] = []

    async def counts(self, collection: Collection, ids: Sequence[str]) -> dict[str, int]:
        self.reads.append((collection, list(ids)))
        return await super().counts(collection, ids)


def _log() -> CountingLog:
    log = CountingLog()

    async def fill() -> None:
        await log.increment(TU, {"hot": 5000, "warm": 40, "cool": 10})
        await log.increment(ENT, {"e": 20})

    asyncio.run(fill())
    return log


def test_access_reads_the_log_once_per_collection_and_caps_counts() -> None:
    log = _log()
    candidates = [Candidate("hot"), Candidate("warm"), Candidate("cool"), Candidate("new"),
                  Candidate("e", kind="entity"), Candidate("k", kind="key_points"),
                  Candidate("meta", metadata={"access_count": 900})]  # fmt: skip
    out = asyncio.run(AccessStage(cap=80, log=log).execute(StageInput("q", candidates, 5)))
    got = {c.id: c.signals["access"] for c in out.candidates}
    # capped at 80: hot 80/80, warm 40/80, cool 10/80, e 20/80; never recorded: 0; the
    # metadata field is not read when a log is given
    assert got == pytest.approx({"hot": 1.0, "warm": 0.5, "cool": 0.125, "new": 0.0,
                                 "e": 0.25, "k": 0.0, "meta": 0.0})  # fmt: skip
    assert log.reads == [(TU, ["hot", "warm", "cool", "new", "meta"]), (ENT, ["e"])]


def test_the_registered_access_stage_reads_the_components_log() -> None:
    log = _log()
    spec = {"stages": [{"stage": "access", "cap": 1000}]}
    with_log = pipeline_from_spec(spec, PipelineComponents(
        FakeSearchIndex(), embedder=None, access_log=log))  # type: ignore[arg-type]  # fmt: skip
    stage = with_log.stages[0]
    assert isinstance(stage, AccessStage) and stage.log is log and stage.cap == 1000
    candidates = [Candidate("hot"), Candidate("warm")]
    out = asyncio.run(stage.execute(StageInput("q", candidates, 2)))
    assert [c.signals["access"] for c in out.candidates] == pytest.approx([1.0, 0.04])
    without = pipeline_from_spec(spec, PipelineComponents(
        FakeSearchIndex(), embedder=None))  # type: ignore[arg-type]  # fmt: skip
    assert without.stages[0].log is None  # type: ignore[attr-defined]
