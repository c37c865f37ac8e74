"""Messages that say what is really going on (issue 16 item 11).

A query during the first build, a missing ``-C`` folder, an id prefix that is too short, an
evaluation without supporting passages, and the ``ukr eval DATASET`` form in its help.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.corpus import write_good_docs
from unified_kg_rag.adapters.sqlite.backend import SqliteBackend
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the three good documents indexed."""
    project = tmp_path_factory.mktemp("plain_messages")
    write_good_docs(project / "docs")
    result = CliRunner().invoke(app, ["index", str(project / "docs"), "-C", str(project), "-q"])
    assert result.exit_code == 0, result.output
    return project


def test_query_during_the_first_build_says_a_build_is_running(
    runner: CliRunner, tmp_path: Path
) -> None:
    async def hold() -> None:
        async with SqliteBackend(tmp_path / ".ukr" / "ukr.db") as backend:
            await backend.doc_registry("default").acquire_lease("buildbox:4242:cafe", 600)

    asyncio.run(hold())
    result = runner.invoke(app, ["query", "anything", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "build is running" in result.stderr and "buildbox:4242:cafe" in result.stderr
    assert "index documents first" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_query_after_a_lapsed_lease_still_says_index_first(
    runner: CliRunner, tmp_path: Path
) -> None:
    async def hold() -> None:
        async with SqliteBackend(tmp_path / ".ukr" / "ukr.db") as backend:
            registry = backend.doc_registry("default")
            await registry.acquire_lease("buildbox:4242:cafe", 0.001)

    asyncio.run(hold())
    result = runner.invoke(app, ["query", "anything", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "index documents first" in result.stderr and "build is running" not in result.stderr


@pytest.mark.parametrize("command", [["status"], ["query", "owls"], ["config", "show"]])
def test_a_missing_project_folder_is_an_error(
    runner: CliRunner, tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, [*command, "-C", str(missing)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        f"UsageError: --project: {missing}: no such directory"
    ]
    assert "No index yet" not in result.stdout
    assert not missing.exists()


def test_a_missing_project_folder_from_the_environment_names_the_variable(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_PROJECT_DIR", str(tmp_path / "gone"))
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 2
    assert "UKR_PROJECT_DIR" in result.stderr and "gone: no such directory" in result.stderr


def test_a_short_id_prefix_says_prefixes_need_8_characters(
    indexed: Path, runner: CliRunner
) -> None:
    status = json.loads(runner.invoke(app, ["status", "-C", str(indexed), "--json"]).stdout)
    assert status["indexes"][0]["documents"] == {"processed": 3}
    result = runner.invoke(app, ["delete", "abcd", "-C", str(indexed)])
    assert result.exit_code == 3
    assert "at least 8 characters" in result.stderr
    assert "no document of the index has this id or path" not in result.stderr


def _dataset(path: Path, *, supporting: bool) -> Path:
    rows = [{"question": "What do barn owls hunt?", "answers": ["voles"]},
            {"question": "Who lays the eggs of the hive?", "answers": ["queen bee"]}]
    if supporting:
        rows[0]["supporting"] = ["owls.md"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def test_eval_without_supporting_passages_prints_na_for_recall(
    indexed: Path, runner: CliRunner, tmp_path: Path
) -> None:
    data = _dataset(tmp_path / "qa.jsonl", supporting=False)
    result = runner.invoke(app, ["eval", str(data), "-C", str(indexed), "--retrieval-only"])
    assert result.exit_code == 0, result.output
    rows = {ln.split()[0]: ln.split()[-1] for ln in result.stdout.splitlines()
            if ln.strip().startswith(("recall", "answer_in_context"))}
    assert "recall@2" not in rows and "recall@10" not in rows  # no metric without supporting
    assert "recall: n/a" in result.stdout
    assert rows["answer_in_context"] == "1.000"
    as_json = json.loads(runner.invoke(
        app, ["eval", str(data), "-C", str(indexed), "--retrieval-only", "--json"]).stdout)
    metrics = as_json["arms"][0]["metrics"]
    assert "recall@5" not in metrics and "recall_in_context" not in metrics
    assert metrics["answer_in_context"]["mean"] == 1.0
    with_supporting = runner.invoke(app, ["eval", str(_dataset(tmp_path / "s.jsonl",
                                    supporting=True)), "-C", str(indexed), "--retrieval-only"])
    assert "n/a" not in with_supporting.stdout
    assert any(ln.split()[:2] == ["recall@5", "1.000"] for ln in with_supporting.stdout.splitlines())


def test_eval_help_shows_the_dataset_form(runner: CliRunner) -> None:
    result = runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    usage = next(ln for ln in result.stdout.splitlines() if "Usage:" in ln)
    assert "ukr eval [OPTIONS] DATASET" in usage
    assert "ukr eval run --help" in result.stdout
