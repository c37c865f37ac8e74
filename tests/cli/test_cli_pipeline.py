"""`ukr query --pipeline`: presets and definition files on a real project, and every bad input.

The project is `tests.support.graph_project`: ``default`` holds the hand-written entity
graph (seven one-passage documents), ``docs`` only the LLM-free concept graph. ``standard``
reranks through a real ``/rerank`` server on 127.0.0.1 (`FakeRerankServer`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.graph_fixture import DOCS, unit
from tests.support.graph_project import build_project
from tests.support.rerank_server import FakeRerankServer, fake_score
from unified_kg_rag.cli.app import app
from unified_kg_rag.cli.query import pipeline_line
from unified_kg_rag.domain.ranking.trace import PipelineTrace, StageFigures

pytestmark = pytest.mark.integration

QUESTION = "Where was Marie Curie born?"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``default``: the entity-graph fixture; ``docs``: a concept graph only."""
    path = tmp_path_factory.mktemp("pipeline_project")
    build_project(path)
    return path


@pytest.fixture
def reranker(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeRerankServer]:
    """A real rerank endpoint ``query.rerank`` points at."""
    with FakeRerankServer(style="cohere") as server:
        monkeypatch.setenv("UKR_QUERY__RERANK__KIND", "http")
        monkeypatch.setenv("UKR_QUERY__RERANK__URL", server.url)
        yield server


def ask(runner: CliRunner, project: Path, *args: str) -> Any:
    result = runner.invoke(app, ["query", QUESTION, "-C", str(project), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def refused(runner: CliRunner, project: Path, *args: str) -> str:
    """Run a query that must fail with exit 2; return its one-line message."""
    result = runner.invoke(app, ["query", QUESTION, "-C", str(project), *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def assert_stage_chain(trace: dict[str, Any], names: list[str]) -> None:
    """The stages ran in order and each received what the one before passed on."""
    stages = trace["stages"]
    assert [s["name"] for s in stages] == names
    assert stages[0]["candidates_in"] == 0
    for before, after in itertools.pairwise(stages):
        assert after["candidates_in"] == before["candidates_out"]
    assert all(s["duration_ms"] >= 0 for s in stages)


@pytest.mark.parametrize(("preset", "stages"), [
    ("minimal", ["semantic", "hydrate"]),
    ("no_rerank", ["semantic", "lexical", "hydrate", "graph", "hydrate_expanded", "temporal_decay"]),
])  # fmt: skip
def test_presets_answer_with_the_pipelines_top_results_as_sources(
    preset: str, stages: list[str], project: Path, runner: CliRunner
) -> None:
    out = ask(runner, project, "--pipeline", preset, "--top-k", "3")
    assert out["strategy"] == f"pipeline:{preset}"
    trace = out["pipeline"]
    assert trace["name"] == f"pipeline:{preset}"
    assert_stage_chain(trace, stages)
    assert trace["stages"][0]["candidates_out"] == len(DOCS)  # every passage, limit 50
    ranked = [r["id"] for r in trace["results"]]
    assert len(ranked) == 3 and ranked[0] == unit("marie")
    scores = [r["score"] for r in trace["results"]]
    assert scores == sorted(scores, reverse=True)
    assert [s["id"] for s in out["sources"]] == ranked  # the context, in score order
    marie = out["sources"][0]  # the lineage naive gives
    assert (marie["path"], marie["document_id"], marie["title"]) == ("marie.txt", unit("marie"),
                                                                     "Marie")  # fmt: skip
    assert marie["text_unit_ids"] == [unit("marie")] and marie["start_char"] == 0
    assert out["answer_kind"] == "extractive" and "Warsaw" in out["answer"]
    assert out["metadata"]["buckets"] == {f"pipeline:{preset}": 3}
    if preset == "minimal":
        assert set(trace["results"][0]["signals"]) == {"semantic"}
        assert scores[0] == trace["results"][0]["signals"]["semantic"]
    else:
        assert {"semantic", "graph", "temporal"} <= set(trace["results"][0]["signals"])


def test_standard_reranks_through_the_configured_reranker(
    project: Path, runner: CliRunner, reranker: FakeRerankServer
) -> None:
    out = ask(runner, project, "--pipeline", "standard")
    assert_stage_chain(out["pipeline"], ["semantic", "lexical", "hydrate", "graph",
                                         "hydrate_expanded", "temporal_decay", "rerank"])  # fmt: skip
    assert len(reranker.requests) == 1  # one call for the top 20 (all seven passages)
    raw = {unit(d): fake_score(QUESTION, text) for d, text in DOCS.items()}
    low, high = min(raw.values()), max(raw.values())
    for result in out["pipeline"]["results"]:
        expected = (raw[result["id"]] - low) / (high - low)
        assert result["signals"]["rerank"] == pytest.approx(expected)
    assert [s["id"] for s in out["sources"]] == [r["id"] for r in out["pipeline"]["results"]]
    assert "rerank" not in out["metadata"]  # the chain's own rerank step is not run again


def test_a_definition_file_is_named_after_the_file_and_filters_hold(
    project: Path, runner: CliRunner, tmp_path: Path
) -> None:
    spec = tmp_path / "graphy.yaml"
    spec.write_text("stages:\n  - {stage: semantic, limit: 2}\n  - {stage: graph, depth: 1}\n"
                    "  - {stage: hydrate}\nscorer: {kind: weighted, weights: {semantic: 1, "
                    "graph: 1}}\n", encoding="utf-8")  # fmt: skip
    out = ask(runner, project, "--pipeline", str(spec))
    assert out["strategy"] == "pipeline:graphy.yaml"
    stages = out["pipeline"]["stages"]
    assert stages[0]["candidates_out"] == 2 and stages[1]["candidates_out"] > 2  # expanded
    filtered = ask(runner, project, "--pipeline", str(spec), "--filter", "path=warsaw.txt")
    assert [s["path"] for s in filtered["sources"]] == ["warsaw.txt"]  # expansion kept out
    assert [r["id"] for r in filtered["pipeline"]["results"]] == [unit("warsaw")]


def test_verbose_prints_one_stage_line() -> None:
    trace = PipelineTrace(name="pipeline:minimal", stages=(
        StageFigures(name="semantic", duration_ms=12.34, candidates_in=0, candidates_out=7),
        StageFigures(name="hydrate", duration_ms=0.01, candidates_in=7, candidates_out=7)))
    assert pipeline_line(trace) == (
        "pipeline:minimal: semantic 7 (12.3 ms) → hydrate 7 (0.0 ms); 0 result(s)")


def test_strategy_and_pipeline_together_are_refused(project: Path, runner: CliRunner) -> None:
    line = refused(runner, project, "--pipeline", "minimal", "--strategy", "naive")
    assert line == ("UsageError: --pipeline: give either --strategy or --pipeline, not both: "
                    "the pipeline is the whole retrieval step")


def test_an_unknown_preset_lists_the_presets(project: Path, runner: CliRunner) -> None:
    line = refused(runner, project, "--pipeline", "fastest")
    assert line == ("ConfigurationError: --pipeline: no pipeline preset 'fastest'; presets: "
                    "minimal, no_rerank, standard; or a FILE.yaml pipeline definition")


def test_components_the_index_lacks_say_what_to_configure(
    project: Path, runner: CliRunner
) -> None:
    line = refused(runner, project, "--pipeline", "standard")
    assert line.startswith("ConfigurationError: --pipeline standard: stages.6: stage 'rerank' "
                           "needs a reranker, and none is configured: set `query.rerank.kind`")
    line = refused(runner, project, "--pipeline", "no_rerank", "--index", "docs")
    assert line.startswith("ConfigurationError: --pipeline no_rerank: stages.3: stage 'graph' "
                           "needs an entity graph, which this index does not hold")
    assert "graphrag, lightrag or hipporag" in line


@pytest.mark.parametrize(("text", "expected"), [
    (None, "no such pipeline definition file"),
    ("stages: [\n", "line 2: expected the node content"),
    ("- semantic\n", "the top level must be a pipeline definition (a mapping with `stages`)"),
    ("", "is empty; a pipeline definition lists its `stages`"),
    ("stages: [{stage: vector}]", "stages.0.stage: unknown pipeline stage 'vector'; "
     "registered: access, "),
    ("stages: [{stage: semantic, limt: 5}]", "stages.0.limt: unknown parameter 'limt'"),
    ("stages: [{stage: semantic, limit: ten}]", "stages.0: limit must be a whole number >= 1, got 'ten'"),
    ("stages: [{stage: semantic}]\nscorer: {kind: weighted, weights: {semantic: -1}}",
     "scorer: weight of signal 'semantic' must be finite and >= 0, got -1"),
    ("stages: [{stage: semantic}, {stage: rerank}]", "stages.1: stage 'rerank' needs a "
     "reranker"),
    ("stages: [{stage: semantic}]\nstage_timeout: 3", "unknown key(s) stage_timeout"),
])  # fmt: skip
def test_bad_definition_files_are_one_line_naming_the_file(
    text: str | None, expected: str, project: Path, runner: CliRunner, tmp_path: Path
) -> None:
    spec = tmp_path / "mine.yaml"
    if text is not None:
        spec.write_text(text, encoding="utf-8")
    line = refused(runner, project, "--pipeline", str(spec))
    assert line.startswith(f"ConfigurationError: {spec}: "), line
    assert expected in line


def test_a_folder_is_not_a_definition(project: Path, runner: CliRunner, tmp_path: Path) -> None:
    line = refused(runner, project, "--pipeline", str(tmp_path))
    assert line == (f"ConfigurationError: {tmp_path}: is a folder; give a pipeline definition "
                    "FILE.yaml")


def test_pagerank_and_ppr_stages_run_from_a_definition_over_the_concept_graph(
    project: Path, runner: CliRunner, tmp_path: Path
) -> None:
    spec = tmp_path / "central.yaml"
    spec.write_text("stages:\n  - {stage: semantic, limit: 3}\n  - {stage: ppr, limit: 5}\n"
                    "  - {stage: hydrate}\n  - {stage: pagerank}\n"
                    "scorer: {kind: weighted, weights: {semantic: 0.5, ppr: 0.3, "
                    "pagerank: 0.2}}\n", encoding="utf-8")  # fmt: skip
    result = runner.invoke(app, ["query", "Who did Marie Curie marry?", "-C", str(project),
                                 "--json", "--index", "docs", "--pipeline", str(spec)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert_stage_chain(out["pipeline"], ["semantic", "ppr", "hydrate", "pagerank"])
    results = out["pipeline"]["results"]
    assert results and all(0.0 <= r["signals"]["pagerank"] <= 1.0 for r in results)
    assert max(r["signals"].get("ppr", 0.0) for r in results) == pytest.approx(1.0)
    for r in results:  # the final score is the weighted sum of the signals
        s = r["signals"]
        expected = 0.5 * s.get("semantic", 0) + 0.3 * s.get("ppr", 0) + 0.2 * s["pagerank"]
        assert r["score"] == pytest.approx(expected)
    assert any(r["signals"]["pagerank"] > 0 for r in results)  # stored at index time


def test_a_stage_registered_by_a_pipeline_module_runs_from_the_cli(
    project: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = tmp_path / "my_stages.py"
    plugin.write_text(
        "from dataclasses import dataclass\n"
        "from unified_kg_rag.retrieval.pipeline import StageInput, StageOutput\n"
        "from unified_kg_rag.retrieval.pipeline_presets import PIPELINE_STAGES\n\n"
        "@dataclass\nclass Constant:\n    value: float = 0.25\n    name: str = 'constant'\n\n"
        "    async def execute(self, stage_input: StageInput) -> StageOutput:\n"
        "        for c in stage_input.candidates:\n"
        "            c.signals['constant'] = self.value\n"
        "        return StageOutput(stage_input.candidates, stage_input.context)\n\n"
        "PIPELINE_STAGES.register('constant', lambda c, p: Constant(**p), replace=True)\n",
        encoding="utf-8")  # fmt: skip
    spec = tmp_path / "const.yaml"
    spec.write_text("stages:\n  - {stage: semantic, limit: 3}\n  - {stage: constant, value: 0.5}"
                    "\nscorer: {kind: weighted, weights: {constant: 1}}\n",
                    encoding="utf-8")  # fmt: skip
    monkeypatch.setenv("UKR_QUERY__PIPELINE_MODULES", json.dumps([str(plugin)]))
    out = ask(runner, project, "--pipeline", str(spec))
    assert [s["name"] for s in out["pipeline"]["stages"]] == ["semantic", "constant"]
    assert {r["score"] for r in out["pipeline"]["results"]} == {0.5}
    monkeypatch.setenv("UKR_QUERY__PIPELINE_MODULES", json.dumps(["no_such_stages_module"]))
    line = refused(runner, project, "--pipeline", "minimal")
    assert line.startswith("ConfigurationError: query.pipeline_modules.0: no module "
                           "'no_such_stages_module'"), line
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('half written')\n", encoding="utf-8")
    monkeypatch.setenv("UKR_QUERY__PIPELINE_MODULES", json.dumps([str(broken)]))
    line = refused(runner, project, "--pipeline", "minimal")
    assert line == (f"ConfigurationError: query.pipeline_modules.0: importing '{broken}' "
                    "failed: RuntimeError: half written")
