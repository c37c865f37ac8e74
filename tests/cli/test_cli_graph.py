"""``ukr index`` with an LLM: ``--estimate``, the graph summary, ``--force-rebuild``, status.

A real OpenAI-compatible server on 127.0.0.1 answers with the replies of
``tests/stages/test_graph_build.py``; the real bundled embedding model embeds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.conftest import openai_env_server
from tests.stages.test_graph_build import reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    yield from openai_env_server(monkeypatch, reply, {
        "UKR_LLM__INPUT_PRICE_PER_1M": "0.5", "UKR_LLM__OUTPUT_PRICE_PER_1M": "1.5",
        "UKR_GRAPH__COMMUNITIES__MIN_COMMUNITY_SIZE": "2",
    })


def test_estimate_makes_no_call_and_writes_nothing(server: FakeOpenAIServer, tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "docs")
    runner = CliRunner()
    result = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path), "--estimate",
                                 "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    est = json.loads(result.stdout)
    assert est["units"] == 4 and est["units_to_extract"] == 4
    # one extraction call per unit plus one to three gleaning rounds, plus reports
    assert est["calls_min"] == 4 * 2 + est["reports"]
    assert est["calls_max"] == 4 * 4 + est["reports"]
    assert 0 < est["input_tokens_min"] < est["input_tokens_max"]
    assert est["cost_min"] == pytest.approx(
        (est["input_tokens_min"] * 0.5 + est["output_tokens"] * 1.5) / 1e6
    )
    assert server.requests_to("/chat/completions") == []
    assert not (tmp_path / ".ukr").exists() or not any(
        json.loads(runner.invoke(app, ["status", "-C", str(tmp_path), "--json"]).stdout)
        .get("indexes", [{}])[0].get("counts", {}).values()
    )


def test_index_prints_the_graph_and_spend_then_status_lists_methodologies(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    corpus = write_docs(tmp_path / "docs")
    runner = CliRunner()
    result = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Knowledge graph" in out and "graphrag, lightrag" in out
    assert "entities / relationships" in out and "7 / 6" in out
    assert "Model spend per stage" in out and "extract" in out and "reports" in out
    status = runner.invoke(app, ["status", "-C", str(tmp_path), "--json"])
    info = json.loads(status.stdout)
    index = info["indexes"][0] if "indexes" in info else info
    assert index["methodologies"] == ["graphrag", "lightrag"]
    assert index["counts"]["entities"] == 7

    # an estimate now: every record is stored, so no extraction would be asked
    est = json.loads(runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path),
                                         "--estimate", "--json"]).stdout)  # fmt: skip
    assert est["units_to_extract"] == 0 and est["calls_max"] == 0

    calls = len(server.requests_to("/chat/completions"))
    again = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path), "--force-rebuild",
                                "--json"])  # fmt: skip
    assert again.exit_code == 0, again.output
    graph = json.loads(again.stdout)["graph"]
    assert graph["units_extracted"] == 4 and graph["records_reused"] == 0
    # the model is asked again (extraction and gleaning), not the response cache; reports
    # whose input is unchanged come from the cache
    assert len(server.requests_to("/chat/completions")) == calls + 8
    assert graph["stages"]["extract"]["usage"]["cache_hits"] == 0


def test_estimate_without_llm_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)
    corpus = write_docs(tmp_path / "docs")
    result = CliRunner().invoke(app, ["index", str(corpus), "-C", str(tmp_path), "--estimate"])
    assert result.exit_code == 2
    assert "--estimate needs an LLM" in result.output
