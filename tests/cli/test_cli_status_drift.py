"""``ukr status`` drift and its reset recommendation, then ``ukr index --reset`` (issue #7, B1).

A real OpenAI-compatible server on 127.0.0.1 answers with the replies of
``tests/stages/test_graph_build.py``; the real bundled embedding model embeds; the report is
deleted by hand from the project's SQLite file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.cli.conftest import openai_env_server
from tests.stages.test_graph_build import reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    yield from openai_env_server(monkeypatch, reply, {"UKR_GRAPH__COMMUNITIES__MIN_COMMUNITY_SIZE": "2"})


def _status(runner: CliRunner, project: Path) -> dict[str, Any]:
    result = runner.invoke(app, ["status", "-C", str(project), "--json"])
    assert result.exit_code == 0, result.output
    index: dict[str, Any] = json.loads(result.stdout)["indexes"][0]
    return index


def test_a_lost_report_shows_as_drift_recommends_a_reset_and_the_reset_repairs_it(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = write_docs(tmp_path / "docs")
    runner = CliRunner()
    built = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path), "-q"])
    assert built.exit_code == 0, built.output

    fresh = _status(runner, tmp_path)
    drift = fresh["drift"]
    n = fresh["counts"]["communities"]
    assert n >= 2 and drift["communities"] == n and drift["communities_without_report"] == 0
    assert drift["graph"] == "entities"
    assert drift["entities"] == 7 and drift["documents"] == 4
    assert drift["share"] == 0.0 and drift["reset_recommended"] is False
    assert "--reset" not in runner.invoke(app, ["status", "-C", str(tmp_path)]).stdout

    store = json.loads(runner.invoke(app, ["status", "-C", str(tmp_path), "--json"]).stdout)
    con = sqlite3.connect(store["store"])
    try:
        (lost,) = con.execute("SELECT community_id FROM reports LIMIT 1").fetchone()
        con.execute("DELETE FROM reports WHERE community_id = ?", (lost,))
        con.commit()
    finally:
        con.close()

    drift = _status(runner, tmp_path)["drift"]
    assert drift["communities_without_report"] == 1
    assert drift["share"] == pytest.approx(1 / n, abs=1e-4)
    assert drift["reset_recommended"] is (1 / n > 0.1)
    text = runner.invoke(app, ["status", "-C", str(tmp_path)]).stdout
    assert "communities without report" in text and f"1 of {n}" in text
    assert "ukr index PATH --reset" in text

    # a higher threshold shows the drift without recommending anything
    monkeypatch.setenv("UKR_INDEXING__RESET_DRIFT_SHARE", "0.9")
    lenient = _status(runner, tmp_path)["drift"]
    assert lenient["communities_without_report"] == 1 and lenient["threshold"] == 0.9
    assert lenient["reset_recommended"] is False
    assert "--reset" not in runner.invoke(app, ["status", "-C", str(tmp_path)]).stdout
    monkeypatch.delenv("UKR_INDEXING__RESET_DRIFT_SHARE")

    calls = len(server.requests_to("/chat/completions"))
    reset = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path), "--reset"])
    assert reset.exit_code == 0, reset.output
    assert "unchanged (processed again)" in reset.stdout and "orphans removed" in reset.stdout
    # the lost report's reply is in the response cache: the reset asks the model nothing
    assert len(server.requests_to("/chat/completions")) == calls
    repaired = _status(runner, tmp_path)
    assert repaired["drift"]["communities_without_report"] == 0
    assert repaired["counts"]["reports"] == n and not repaired["drift"]["reset_recommended"]
