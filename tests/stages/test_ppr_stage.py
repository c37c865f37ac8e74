"""The ``ppr`` and ``pagerank`` stages in a pipeline built from a definition, on real SQLite.

The LLM-free `lazy` index of ``tests/stages/test_lazy_and_ppr.py``'s corpus; the ``ppr``
stage's order is checked against the ``ppr`` strategy's own answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import write_docs
from tests.stages.test_lazy_and_ppr import TOPICS
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.pipeline import Candidate, PipelineError, PipelineRun, StageInput
from unified_kg_rag.retrieval.pipeline_centrality import PageRankStage
from unified_kg_rag.retrieval.pipeline_presets import PipelineComponents, pipeline_from_spec
from unified_kg_rag.retrieval.strategies.base import QueryContext
from unified_kg_rag.retrieval.strategies.ppr import PPRStrategy
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.integration

EMBEDDER = FakeEmbedder()
QUESTION = "Which town was rebuilt in Baroque style after the earthquake of 1693?"
SPEC: dict[str, Any] = {
    "stages": [{"stage": "semantic", "limit": 2}, {"stage": "ppr", "limit": 4},
               {"stage": "pagerank"}],
    "scorer": {"kind": "weighted", "weights": {"semantic": 0.5, "ppr": 0.4, "pagerank": 0.1}},
}  # fmt: skip


async def _build(app: App, corpus: Path) -> IndexStores:
    report = await IndexPipeline(
        app.index(), embedder=EMBEDDER, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
    ).run([corpus])  # fmt: skip
    assert report.failed == []
    return app.index()


def _components(app: App, stores: IndexStores) -> PipelineComponents:
    return PipelineComponents(index=stores.search, embedder=EMBEDDER, graph=stores.graph,
                              stores=stores, settings=app.config.query)  # fmt: skip


def test_ppr_stage_adds_the_strategys_units_and_pagerank_scores_them(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", TOPICS)

    async def main() -> dict[str, Any]:
        async with build_app(UkrConfig(), tmp_path / "p") as app:
            stores = await _build(app, corpus)
            pipeline = pipeline_from_spec(SPEC, _components(app, stores))
            run = await pipeline.execute(QUESTION, k=10)
            noto = await pipeline.execute(QUESTION, k=10, filters={"path": "noto.txt"})
            config = app.config.query.model_copy(update={"top_k": 4})
            ctx = QueryContext(question=QUESTION, stores=stores, embedder=EMBEDDER,
                               chat_model=None, config=config, held=("lazy",))  # fmt: skip
            strategy = await PPRStrategy().retrieve(ctx)
            units = [Candidate(r.candidate.id) for r in run.results]
            scored = {}
            for graph in ("entities", "concepts"):  # a lazy index: no entity graph stored
                stage = PageRankStage(stores.records, stores.name, graph=graph, default=0.3)
                out = await stage.execute(StageInput(QUESTION, units, 5))
                scored[graph] = [c.signals["pagerank"] for c in out.candidates]
            return {"run": run, "noto": noto, "strategy": [c.id for c in strategy],
                    "scored": scored}

    out = asyncio.run(main())
    run: PipelineRun = out["run"]
    by_ppr = sorted((r for r in run.results if "ppr" in r.signals),
                    key=lambda r: (-r.signals["ppr"], r.candidate.id))  # fmt: skip
    assert [r.candidate.id for r in by_ppr] == out["strategy"] and len(out["strategy"]) == 4
    assert by_ppr[0].signals["ppr"] == 1.0 and all(0 < r.signals["ppr"] <= 1 for r in by_ppr)
    semantic = [r for r in run.results if "semantic" in r.signals]
    assert len(semantic) == 2 and len(run.results) == len({*out["strategy"],
                                                          *(r.candidate.id for r in semantic)})
    assert all("pagerank" in r.signals for r in run.results)
    assert max(r.signals["pagerank"] for r in run.results) > 0
    for r in run.results:  # the weighted score of every signal
        s = r.signals
        expected = 0.5 * s.get("semantic", 0) + 0.4 * s.get("ppr", 0) + 0.1 * s["pagerank"]
        assert r.score == pytest.approx(expected)
    assert [t.name for t in run.stages] == ["semantic", "ppr", "pagerank"]
    assert run.stages[1].candidates_out == len(run.results)
    assert out["scored"]["entities"] == [0.3] * len(run.results)
    assert out["scored"]["concepts"] == [r.signals["pagerank"] for r in run.results]
    # the run's filters hold for what ppr adds
    assert {r.candidate.metadata.get("path") for r in out["noto"].results} == {"noto.txt"}


def test_ppr_stage_is_refused_without_a_graph_and_without_its_components(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus", TOPICS)

    async def main() -> PipelineError:
        config = UkrConfig(indexing={"methodologies": []})  # type: ignore[arg-type]
        async with build_app(config, tmp_path / "p") as app:
            stores = await _build(app, corpus)
            with pytest.raises(PipelineError) as refused:
                await pipeline_from_spec(SPEC, _components(app, stores)).execute(QUESTION)
            bare = PipelineComponents(index=stores.search, embedder=EMBEDDER)
            with pytest.raises(ConfigurationError, match="stores") as missing:
                pipeline_from_spec(SPEC, bare)
            assert missing.value.field == "stages.1"
            return refused.value

    refused = asyncio.run(main())
    assert refused.stage == "ppr" and "'hipporag' or 'lazy'" in str(refused)
