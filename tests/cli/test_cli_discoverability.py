"""Finding one's way (issue 16 item 10): strategies listed, `ukr strategies`, hybrid told from
hybrid, how to get a missing methodology, failed files in `ukr status`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.corpus import write_bad_inputs, write_good_docs
from unified_kg_rag.cli.app import app
from unified_kg_rag.retrieval.strategies import STRATEGIES

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The good documents and two bad ones, indexed without an LLM (methodology `lazy`)."""
    root = tmp_path_factory.mktemp("discover")
    write_good_docs(root / "docs")
    bad = write_bad_inputs(root / "bad", big_line_bytes=2_000)
    for name in ("empty.txt", "binary.txt"):
        (root / "docs" / name).write_bytes(bad[name].read_bytes())
    result = CliRunner().invoke(app, ["index", str(root / "docs"), "-C", str(root), "-q"])
    assert result.exit_code == 3, result.output
    return root


def _flat(text: str) -> str:
    """Help text with the box drawing and line wrapping taken out."""
    return " ".join(text.replace("│", " ").replace("`", "").split())


def test_query_help_lists_every_registered_strategy_with_its_line(runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    flat = _flat(result.stdout)
    for name in STRATEGIES.names():
        line = STRATEGIES.get(name).description
        assert f"{name}: {_flat(line)}" in flat, name


def test_help_tells_the_hybrid_strategy_from_the_hybrid_mode(runner: CliRunner) -> None:
    flat = _flat(runner.invoke(app, ["query", "--help"], env={"COLUMNS": "200"}).stdout)
    assert "--strategy hybrid is LightRAG's graph strategy" in flat
    assert "not the hybrid strategy" in flat


def test_strategies_command_says_which_the_index_serves(
    project: Path, runner: CliRunner
) -> None:
    result = runner.invoke(app, ["strategies", "-C", str(project), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["index"] == "default" and report["methodologies"] == ["lazy"]
    rows = {r["name"]: r for r in report["strategies"]}
    assert set(rows) == set(STRATEGIES.names())
    assert rows["ppr"]["served"] and rows["naive"]["served"] and rows["lazy"]["served"]
    local = rows["local"]
    assert not local["served"] and local["missing"] == ["graphrag"]
    assert "llm.kind" in local["how"] and "ukr index" in local["how"]
    text = runner.invoke(app, ["strategies", "-C", str(project)], env={"COLUMNS": "200"})
    flat = _flat(text.stdout)
    assert "ppr" in flat and "needs graphrag" in flat and "yes" in flat


def test_strategies_on_an_empty_project_serves_none(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["strategies", "-C", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert not any(r["served"] for r in report["strategies"])
    assert "ukr index" in report["note"]


def test_a_missing_methodology_says_how_to_get_it(project: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "owls", "-C", str(project), "--strategy", "local"])
    assert result.exit_code == 2
    err = _flat(result.stderr)
    assert err.startswith("MethodologyNotIndexedError: strategy 'local' needs the 'graphrag'")
    assert "llm.kind" in err and "indexing.methodologies" in err and "ukr index" in err
    assert "ukr strategies" in err
    hybrid = _flat(runner.invoke(app, ["query", "owls", "-C", str(project),
                                       "--strategy", "hybrid"]).stderr)
    assert "--mode hybrid" in hybrid


def test_mode_and_strategy_names_swapped_say_which_option_to_use(
    project: Path, runner: CliRunner
) -> None:
    as_mode = runner.invoke(app, ["query", "owls", "-C", str(project), "--mode", "ppr"])
    assert as_mode.exit_code == 2
    assert "'ppr' is a strategy" in as_mode.stderr and "--strategy ppr" in as_mode.stderr
    as_strategy = runner.invoke(app, ["query", "owls", "-C", str(project), "-s", "lexical"])
    assert as_strategy.exit_code == 2
    assert "'lexical' is a search mode" in as_strategy.stderr
    assert "--mode lexical" in as_strategy.stderr


def test_status_names_failed_files_and_their_reasons(project: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["status", "-C", str(project)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    failed = [ln for ln in result.stdout.splitlines() if ln.startswith("failed: ")]
    assert len(failed) == 2
    assert any(ln.startswith("failed: empty.txt: ") and "empty document" in ln for ln in failed)
    assert any(ln.startswith("failed: binary.txt: ") and "binary" in ln for ln in failed)
    info = json.loads(runner.invoke(app, ["status", "-C", str(project), "--json"]).stdout)
    shown = {f["path"]: f["error"] for f in info["indexes"][0]["failed"]}
    assert set(shown) == {"empty.txt", "binary.txt"} and all(shown.values())
