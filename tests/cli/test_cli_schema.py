"""``ukr index`` with an extraction schema: the conformance rows, ``--json``, a bad schema file.

A real OpenAI-compatible server on 127.0.0.1 answers with the off-schema replies of
``tests/stages/test_schema_build.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.conftest import openai_env_server
from tests.stages.test_schema_build import SCHEMA, _extraction_calls, _project, reply
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    yield from openai_env_server(monkeypatch, reply)


def _ukr_yaml(project: Path) -> None:
    (project / "ukr.yaml").write_text(
        "indexing:\n  methodologies: [lightrag]\n"
        "graph:\n  extraction:\n    schema_sources:\n      - {kind: file, path: schema.yaml}\n",
        encoding="utf-8",
    )


def test_index_prints_conformance_and_a_mode_change_extracts_nothing(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, corpus = _project(tmp_path)
    _ukr_yaml(project)
    runner = CliRunner()
    result = runner.invoke(app, ["index", str(corpus), "-C", str(project)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "extraction schema" in out and "mode open" in out
    assert "4 conforming, 0 aligned, 0 dropped, 2 flagged" in out  # entities
    assert "off-schema entity types" in out and "CITY 1" in out
    calls = len(_extraction_calls(server))
    assert calls == 2

    monkeypatch.setenv("UKR_GRAPH__EXTRACTION__SCHEMA_MODE", "strict")
    result = runner.invoke(app, ["index", str(corpus), "-C", str(project), "--json"])
    assert result.exit_code == 0, result.output
    graph = json.loads(result.stdout)["graph"]
    conf = graph["schema_conformance"]
    assert conf["mode"] == "strict"
    assert conf["entities"] == {"conforming": 4, "aligned": 0, "dropped": 2, "flagged": 0}
    # both relationships naming a dropped entity go with it; BASED_IN is still reported
    # as an off-schema type (it was off-schema too)
    assert conf["relationships"]["dropped"] == 2
    assert conf["off_schema_relationship_types"] == {"BASED_IN": 1}
    assert len(_extraction_calls(server)) == calls  # re-annotated from the stored records


def test_a_bad_schema_file_exits_2_with_one_line(server: FakeOpenAIServer,
                                                  tmp_path: Path) -> None:
    project, corpus = _project(tmp_path)
    _ukr_yaml(project)
    (project / "schema.yaml").write_text(SCHEMA + "  - [PERSON, KNOWS, PERSON]\n")
    result = CliRunner().invoke(app, ["index", str(corpus), "-C", str(project)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if "schema.yaml" in line]
    assert len(lines) == 1
    assert "patterns.2: relationship type KNOWS is not declared in any schema source" in lines[0]
    assert server.requests_to("/chat/completions") == []
