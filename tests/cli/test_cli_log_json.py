"""``ukr --log-json`` and ``logging.format: json``: JSON log lines on stderr (issue 22)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.cli.conftest import clear_ukr_env
from tests.support.corpus import write_good_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A project whose embeddings come from a scripted server (through ``UKR_`` variables)."""
    clear_ukr_env(monkeypatch)
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", root.handlers[:])  # the CLI replaces them
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("UKR_EMBEDDINGS__KIND", "openai")
        monkeypatch.setenv("UKR_EMBEDDINGS__OPENAI__BASE_URL", server.base_url)
        monkeypatch.setenv("UKR_EMBEDDINGS__OPENAI__API_KEY", "k")
        monkeypatch.setenv("UKR_EMBEDDINGS__OPENAI__DIMENSION", "8")
        write_good_docs(tmp_path / "docs")
        yield tmp_path


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """The package's records among the stderr lines (each must parse as one JSON object)."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    return [line for line in lines if str(line["logger"]).startswith("unified_kg_rag")]


def test_log_json_writes_the_index_run_as_json_lines_with_one_run_id(project: Path) -> None:
    result = CliRunner().invoke(app, ["--log-json", "index", str(project / "docs"),
                                      "-C", str(project), "--verbose", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["documents_new"] == 3  # stdout: the report only
    every = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    assert len(every) > 5 and all(isinstance(line, dict) for line in every)  # openai's too
    lines = json_lines(result.stderr)
    assert len(lines) >= 2
    assert {line["level"] for line in lines} <= {"DEBUG", "INFO", "WARNING"}
    run_ids = {line.get("run_id") for line in lines}
    assert len(run_ids) == 1 and len(str(next(iter(run_ids)))) == 32
    assert all("time" in line and "message" in line for line in lines)


def test_logging_format_json_from_the_environment_names_the_query(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    indexed = runner.invoke(app, ["index", str(project / "docs"), "-C", str(project)])
    assert indexed.exit_code == 0, indexed.output
    assert not json_lines(indexed.stderr)  # the default format is text
    monkeypatch.setenv("UKR_LOGGING__FORMAT", "json")
    monkeypatch.setenv("UKR_LOGGING__LEVEL", "DEBUG")
    asked = [runner.invoke(app, ["query", "What do barn owls hunt?", "-C", str(project),
                                 "--strategy", "naive", "--json"]) for _ in range(2)]  # fmt: skip
    ids = []
    for result in asked:
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["strategy"] == "naive"
        # every record once the command runs (asyncio's own, before it, excepted): one id
        lines = [json.loads(line) for line in result.stderr.splitlines() if line[:1] == "{"]
        lines = [line for line in lines if line["logger"] != "asyncio"]
        assert len(lines) > 3, result.stderr
        (query_id,) = {line.get("query_id") for line in lines}
        ids.append(query_id)
    assert ids[0] != ids[1] and all(len(str(i)) == 32 for i in ids)
