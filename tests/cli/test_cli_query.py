"""`ukr query` on a graph index: strategies, --filter, --json, --stream, --show-context."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.graph_fixture import graph_app, unit
from unified_kg_rag.cli.app import app
from unified_kg_rag.cli.query import parse_filters
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project holding the graph fixture index (graphrag and lightrag)."""
    path = tmp_path_factory.mktemp("graph_project")

    async def build() -> None:
        async with graph_app(path):
            pass

    asyncio.run(build())
    return path


def test_parse_filters() -> None:
    assert parse_filters(["path=a.md", "title=A", "path=b.md"]) == {
        "path": ["a.md", "b.md"], "title": "A"}
    assert parse_filters(["path=x=y"]) == {"path": "x=y"}
    with pytest.raises(UsageError, match="expected key=value"):
        parse_filters(["path"])


@pytest.mark.parametrize("strategy", ["local", "hybrid", "mix", "simple", "global", "drift"])
def test_every_graph_strategy_answers_from_the_cli(
    strategy: str, project: Path, runner: CliRunner
) -> None:
    result = runner.invoke(app, ["query", "Where was Marie Curie born?", "-C", str(project),
                                 "--strategy", strategy, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["strategy"] == strategy
    assert out["sources"] and out["answer_kind"] == "extractive"
    kinds = {s["kind"] for s in out["sources"]}
    assert kinds <= {"text_unit", "entity", "relationship", "report", "key_points", "notes"}
    assert {"retrieve", "fuse", "pack", "answer", "total"} <= set(out["timings_ms"])
    assert "buckets" in out["metadata"] and out["metadata"]["context_tokens"] > 0
    if strategy in ("global", "drift"):
        assert "LLM" in out["metadata"]["fallback"]


def test_filter_option_restricts_passages(project: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "Where was Marie Curie born?", "-C", str(project),
                                 "--strategy", "naive", "--filter", "path=warsaw.txt",
                                 "--filter", "path=sorbonne.txt", "--json"])
    assert result.exit_code == 0, result.output
    paths = sorted(s["path"] for s in json.loads(result.output)["sources"])
    assert paths == ["sorbonne.txt", "warsaw.txt"]


def test_bad_filter_is_a_usage_error(project: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "q", "-C", str(project), "--filter", "path"])
    assert result.exit_code == 2
    assert "expected key=value" in result.output


def test_stream_and_show_context(
    project: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_LLM__KIND", "scripted")
    monkeypatch.setenv("UKR_LLM__SCRIPTED__DEFAULT_REPLY", "Marie Curie was born in Warsaw [1].")
    result = runner.invoke(app, ["query", "Where was Marie Curie born?", "-C", str(project),
                                 "--strategy", "naive", "--stream", "--show-context",
                                 "--top-k", "2"])
    assert result.exit_code == 0, result.output
    assert "Marie Curie was born in Warsaw [1]." in result.output
    assert "Context given to the answer step" in result.output
    assert "[1] Marie (marie.txt)" in result.output  # the context as the model saw it
    assert "Sources cited" in result.output


def test_unservable_strategy_names_what_the_index_holds(
    project: Path, runner: CliRunner
) -> None:
    result = runner.invoke(app, ["query", "q", "-C", str(project), "--strategy", "lazy"])
    assert result.exit_code == 2
    assert "holds: graphrag, lightrag" in result.output


def test_conversation_option_rewrites_follow_ups(project: Path, runner: CliRunner) -> None:
    first = runner.invoke(app, ["query", "Where was Marie Curie born?", "-C", str(project),
                                "--strategy", "naive", "--conversation", "cli-1", "--json"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["query", "Who did she work with?", "-C", str(project),
                                 "--strategy", "naive", "--conversation", "cli-1", "--json"])
    out = json.loads(second.output)
    assert out["metadata"]["rewrite"] == "fallback"
    assert out["metadata"]["standalone_question"] == (
        "Where was Marie Curie born? Who did she work with?"
    )
    assert out["sources"][0]["id"] == unit("marie")


def test_integer_and_unknown_filter_fields(project: Path, runner: CliRunner) -> None:
    assert parse_filters(["chunk_index=0"]) == {"chunk_index": 0}
    with pytest.raises(UsageError, match="takes an integer"):
        parse_filters(["chunk_index=first"])
    ok = runner.invoke(app, ["query", "Where was Marie Curie born?", "-C", str(project),
                             "--strategy", "naive", "--filter", "chunk_index=0", "--json"])
    assert ok.exit_code == 0, ok.output
    assert len(json.loads(ok.output)["sources"]) == 7  # every fixture passage is chunk 0
    bad = runner.invoke(app, ["query", "q", "-C", str(project), "--filter", "colour=blue"])
    assert bad.exit_code == 2
    assert "unknown filter field(s) 'colour'" in bad.output
