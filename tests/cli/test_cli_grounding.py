"""``ukr index`` and ``ukr status`` report what grounding and the confidence rules removed.

The scripted model of ``tests/stages/test_grounding_build.py`` on 127.0.0.1: one document
states an entity and two relationships its text does not hold and a low-confidence entity.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.conftest import openai_env_server
from tests.stages.test_grounding_build import DOCS, reply
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    yield from openai_env_server(monkeypatch, reply, {"UKR_INDEXING__METHODOLOGIES": '["lightrag"]'})


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_index_and_status_print_the_grounding_counts(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    runner = CliRunner()
    index = ["index", str(corpus), "-C", str(tmp_path)]

    monkeypatch.setenv("UKR_GRAPH__EXTRACTION__GROUNDING", "drop")
    monkeypatch.setenv("UKR_GRAPH__EXTRACTION__MIN_CONFIDENCE", "5")
    first = runner.invoke(app, index)
    assert first.exit_code == 0, first.output
    out = _flat(first.stdout)
    assert "ungrounded, dropped 1 entities, 2 relationships" in out
    assert "under min_confidence/strength 1 entities, 0 relationships" in out
    assert "naming a dropped entity" not in out  # VISITED went as ungrounded first
    assert "entities / relationships 3 / 3" in out
    calls = len(server.requests_to("/chat/completions"))

    status = runner.invoke(app, ["status", "-C", str(tmp_path)])
    assert status.exit_code == 0, status.output
    assert ("grounding (last build) 4 items removed, 0 down-weighted (per rule: --json)"
            in _flat(status.stdout))

    monkeypatch.setenv("UKR_GRAPH__EXTRACTION__GROUNDING", "weight")
    monkeypatch.delenv("UKR_GRAPH__EXTRACTION__MIN_CONFIDENCE")
    second = runner.invoke(app, [*index, "--json"])
    assert second.exit_code == 0, second.output
    graph = json.loads(second.stdout)["graph"]
    assert len(server.requests_to("/chat/completions")) == calls  # no model call
    assert graph["shaping"]["ungrounded_entities_weighted"] == 1
    assert graph["shaping"]["ungrounded_relationships_weighted"] == 2
    assert graph["shaping"]["ungrounded_entities_dropped"] == 0
    assert graph["entities"] == 5 and graph["relationships"] == 5

    status = runner.invoke(app, ["status", "-C", str(tmp_path), "--json"])
    shaping = json.loads(status.stdout)["indexes"][0]["graph_shaping"]
    assert shaping["ungrounded_entities_weighted"] == 1
    assert shaping["low_confidence_entities_dropped"] == 0
