"""``ukr index`` / ``ukr status`` with claim extraction on: the estimate, the summary, the count.

A real OpenAI-compatible server on 127.0.0.1 answers with the replies of
``tests/stages/test_claims.py`` (extraction, gleaning, reports and claims).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.conftest import openai_env_server
from tests.stages.test_claims import CLAIM_MARKER, reply
from tests.stages.test_graph_build import write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    yield from openai_env_server(monkeypatch, reply, {"UKR_GRAPH__COMMUNITIES__MIN_COMMUNITY_SIZE": "2"})


def _estimate(runner: CliRunner, corpus: Path, project: Path) -> dict[str, object]:
    result = runner.invoke(app, ["index", str(corpus), "-C", str(project), "--estimate",
                                 "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


def test_estimate_counts_claim_calls_index_prints_claims_and_status_counts_them(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = write_docs(tmp_path / "docs")
    runner = CliRunner()
    off = _estimate(runner, corpus, tmp_path)
    assert "claim_calls" not in off  # claims off: the estimate is what it was
    monkeypatch.setenv("UKR_GRAPH__CLAIMS__ENABLED", "true")
    est = _estimate(runner, corpus, tmp_path)
    assert est["claim_calls"] == 4
    # extraction + one gleaning round + one claim call per unit, plus the reports
    assert est["calls_min"] == 4 * 3 + est["reports"]  # type: ignore[operator]
    assert off["calls_min"] == 4 * 2 + off["reports"]  # type: ignore[operator]
    assert server.requests_to("/chat/completions") == []

    result = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = [" ".join(x.split()) for x in result.stdout.splitlines()]
    assert "claims 3 (4 asked, 0 reused, 0 failed)" in lines
    assert "claims dropped (unlisted subject) 1" in lines
    status = json.loads(runner.invoke(app, ["status", "-C", str(tmp_path), "--json"]).stdout)
    assert status["indexes"][0]["counts"]["claims"] == 3
    text = runner.invoke(app, ["status", "-C", str(tmp_path)]).stdout
    assert any(x.split()[:2] == ["claims", "3"] for x in text.splitlines()), text
    # every claim record is stored now: no claim call would be made
    assert _estimate(runner, corpus, tmp_path)["claim_calls"] == 0
    calls = [r for r in server.requests_to("/chat/completions")
             if CLAIM_MARKER in json.dumps(r.body)]  # fmt: skip
    assert len(calls) == 4
