"""``ukr query`` shows the extractive answer's match verdict (issue 16, item 3), with the real
bundled embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.corpus import write_good_docs
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("project")
    write_good_docs(project / "docs")
    result = CliRunner().invoke(app, ["index", str(project / "docs"), "-C", str(project),
                                      "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return project


def test_text_output_shows_a_weak_match_before_the_quotes(indexed: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "What is the capital of Australia?", "-C", str(indexed)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    lead = lines.index("No passage answers this well; the closest are:")
    assert lines[lead + 1].startswith("1. \u201c")
    assert any(line.startswith("match: weak, no passage answers this question well")
               for line in lines)  # fmt: skip


def test_text_output_shows_a_strong_match(indexed: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "What do barn owls hunt at night?", "-C", str(indexed)])
    assert result.exit_code == 0, result.output
    assert "No passage answers this well" not in result.stdout
    assert any(line.startswith("match: strong, the quotes answer the question closely")
               for line in result.stdout.splitlines())  # fmt: skip


def test_json_output_carries_the_verdict(indexed: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "What is the capital of Australia?", "-C", str(indexed),
                                 "--json"])  # fmt: skip
    out = json.loads(result.stdout)
    assert out["answer_kind"] == "extractive"
    assert out["metadata"]["match"]["verdict"] == "weak"
    assert set(out["metadata"]["match"]) == {"verdict", "coverage", "similarity"}
