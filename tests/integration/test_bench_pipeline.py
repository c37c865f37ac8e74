"""``benchmarks/bench_pipeline.py``'s core on the seven-passage graph fixture, so it cannot rot.

The fixture (`tests.support.graph_fixture`: real SQLite, the bundled embedder, an LLM graph)
stands in for the replay-built MuSiQue index; two questions with supporting passages; the
reranker of ``standard`` is a real ``/rerank`` HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmarks.bench_pipeline import (
    GRAPH_METHODOLOGIES,
    PassStage,
    machinery_overhead,
    measure_arms,
    result_documents,
)
from tests.support.graph_fixture import DOCS, graph_app
from tests.support.rerank_server import FakeRerankServer

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.evaluation.dataset import load_dataset
from unified_kg_rag.retrieval.pipeline import (
    Candidate,
    PipelineResult,
    StageInput,
)

pytestmark = pytest.mark.integration

QUESTIONS = [
    {"id": "q1", "question": "In which capital city was Marie Curie born?",
     "answers": ["Warsaw"], "supporting": ["marie", "warsaw"]},
    {"id": "q2", "question": "What does a sourdough starter culture hold?",
     "answers": ["wild yeast"], "supporting": ["starter"]},
]  # fmt: skip


def _dataset(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    return path


def _measure(project: Path, config: UkrConfig, items: Any, pipelines: list[str],
             strategies: list[str]) -> tuple[dict[str, Any], list[float]]:  # fmt: skip
    """Build the fixture, measure the arms; also each question's recall@5 by cosine, by hand."""

    async def body() -> tuple[dict[str, Any], list[float]]:
        async with graph_app(project, config) as fx:  # + hipporag: `ppr` reads its graph
            await fx.app.index().records.put(INDEX_NAMESPACE, METHODOLOGIES_KEY,
                                             json.dumps(GRAPH_METHODOLOGIES))  # fmt: skip
            rows = await measure_arms(fx.app, items, pipelines, strategies)
            names = list(DOCS)
            docs = np.asarray(await fx.app.embedder.embed_documents([DOCS[n] for n in names]))
            expected = []
            for item in items:
                query = np.asarray(await fx.app.embedder.embed_query(item.question))
                top5 = {names[i] for i in np.argsort(-(docs @ query), kind="stable")[:5]}
                expected.append(sum(s in top5 for s in item.supporting) / len(item.supporting))
            return rows, expected

    return asyncio.run(body())


def test_bench_measures_presets_yaml_pipelines_and_strategies(tmp_path: Path) -> None:
    items = load_dataset(_dataset(tmp_path))
    one_hit = tmp_path / "one_hit.yaml"
    one_hit.write_text("stages:\n  - {stage: semantic, limit: 1}\n  - {stage: hydrate}\n",
                       encoding="utf-8")  # fmt: skip
    with FakeRerankServer() as server:
        config = UkrConfig.model_validate({"query": {"rerank": {"kind": "http",
                                                                "url": server.url}}})  # fmt: skip
        rows, by_hand = _measure(tmp_path / "p", config, items,
                                 ["minimal", "no_rerank", "standard", str(one_hit)],
                                 ["naive", "ppr"])  # fmt: skip
        reranked = len(server.requests)
    assert list(rows) == ["naive", "ppr", "minimal", "no_rerank", "standard", "one_hit"]
    # minimal ranks by cosine alone: its recall@5 is the hand-computed one; all seven
    # documents fit in the first ten, so recall@10 is 1 for both questions
    assert rows["minimal"]["per_q"][5] == pytest.approx(by_hand)
    assert rows["minimal"]["per_q"][10] == [1.0, 1.0]
    assert rows["minimal"]["recall@10"] == 1.0
    # one semantic hit holds at most one of q1's two supporting passages
    assert rows["one_hit"]["per_q"][10][0] <= 0.5
    assert rows["one_hit"]["per_q"][5] == rows["one_hit"]["per_q"][10]
    assert list(rows["one_hit"]["stage_p50_ms"]) == ["semantic", "hydrate"]
    assert rows["one_hit"]["scored_p50"] == 1
    # standard reached the rerank server: one call per question, warm-up run and timed run
    assert "unmeasurable" not in rows["standard"]
    assert reranked == 2 * len(items)
    assert list(rows["standard"]["stage_p50_ms"]) == [
        "semantic", "lexical", "hydrate", "graph", "hydrate_expanded", "temporal_decay", "rerank"]
    for name, row in rows.items():
        assert len(row["per_q"][5]) == len(items)
        assert 0.0 <= row["recall@5"] <= row["recall@10"] <= 1.0
        assert row["retrieval_p95_ms"] >= row["retrieval_p50_ms"] > 0
        if name == "naive":
            assert "vs_naive@5" not in row
            continue
        for k in (5, 10):
            mean, low, high = row[f"vs_naive@{k}"]
            assert low <= mean <= high
            assert mean == pytest.approx(row[f"recall@{k}"] - rows["naive"][f"recall@{k}"],
                                         abs=1e-3)  # fmt: skip


def test_pipelines_that_cannot_run_here_are_reported_not_measured(tmp_path: Path) -> None:
    items = load_dataset(_dataset(tmp_path))
    rows, _ = _measure(tmp_path / "p", UkrConfig(), items,
                       ["standard", str(tmp_path / "missing.yaml")], [])  # fmt: skip
    assert "reranker" in rows["standard"]["unmeasurable"]
    assert "missing.yaml" in rows["missing"]["unmeasurable"]
    assert set(rows) == {"standard", "missing"}


def test_result_documents_counts_each_document_once_in_rank_order() -> None:
    def result(cid: str, kind: str = "text_unit", **meta: Any) -> PipelineResult:
        return PipelineResult(Candidate(cid, kind, "t", meta), 1.0, {})

    docs = result_documents([
        result("u1", document_id="d-a", path="corpus/Alpha.txt", title="Alpha Title"),
        result("e1", kind="entity", document_id="d-z"),
        result("u2", document_id="d-a", path="corpus/Alpha.txt"),
        result("u3"),
    ])  # fmt: skip
    assert docs == [
        {"corpus/alpha.txt", "alpha.txt", "alpha", "corpus/alpha", "alpha title", "d-a"},
        {"u3"},
    ]


def test_machinery_overhead_runs_no_work_pipelines() -> None:
    seed = [Candidate("a")]
    out = asyncio.run(PassStage("s0", seed).execute(StageInput("q", [], 3)))
    assert out.candidates is seed
    passed = asyncio.run(PassStage("s1").execute(StageInput("q", seed, 3, context={"x": 1})))
    assert passed.candidates is seed and passed.context == {"x": 1}
    figures = asyncio.run(machinery_overhead((1, 3), candidates=20, runs=20))
    assert figures["candidates"] == 20 and figures["runs"] == 20
    assert set(figures["stages"]) == {1, 3}
    assert all(us > 0 for us in figures["stages"].values())
    assert figures["scorer_us"] > 0
    assert "per_stage_us" in figures
