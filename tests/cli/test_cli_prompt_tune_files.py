"""``ukr prompt-tune``: existing files, retries after a bad reply, the schema variant, caps.

A real OpenAI-compatible server on 127.0.0.1 answers the profile request.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.test_cli_prompts import PROFILE, _corpus, _tune
from tests.support.openai_server import FakeOpenAIServer, Scripted
from unified_kg_rag.cli.app import app
from unified_kg_rag.config.load import load_config
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.prompts.library import PACKAGED
from unified_kg_rag.ingestion.graph.build import graph_extractor

pytestmark = pytest.mark.integration

MINE = "MY OWN extraction prompt.\n=== user ===\n{text}\n"
NOTE = "The texts come from this domain: observational astronomy."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)
    srv = FakeOpenAIServer(reply=lambda body: json.dumps(PROFILE)).start()
    monkeypatch.setenv("UKR_LLM__KIND", "openai")
    monkeypatch.setenv("UKR_LLM__OPENAI__BASE_URL", srv.base_url)
    monkeypatch.setenv("UKR_LLM__OPENAI__API_KEY", "k")
    yield srv
    srv.stop()


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_an_existing_prompt_file_is_refused_unless_force(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    _corpus(tmp_path / "corpus")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "extract_graph.md").write_text(MINE, encoding="utf-8")
    runner = CliRunner()
    refused = _tune(runner, tmp_path)
    assert refused.exit_code == 2
    line = _one_line(refused.stderr)
    assert line.startswith("UsageError: out: ") and line.endswith(
        "prompts/extract_graph.md exists; pass --force to replace it"
    )
    assert server.requests_to("/chat/completions") == []  # refused before the model call
    assert (prompts / "extract_graph.md").read_text(encoding="utf-8") == MINE
    assert [p.name for p in prompts.iterdir()] == ["extract_graph.md"]
    forced = _tune(runner, tmp_path, "--force")
    assert forced.exit_code == 0, forced.output
    assert NOTE in (prompts / "extract_graph.md").read_text(encoding="utf-8")


def test_an_existing_schema_file_is_refused_unless_force(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    _corpus(tmp_path / "corpus")
    (tmp_path / "schema.yaml").write_text("entity_types: [MINE]\n", encoding="utf-8")
    runner = CliRunner()
    refused = _tune(runner, tmp_path, "--schema-out", str(tmp_path / "schema.yaml"))
    assert refused.exit_code == 2
    assert _one_line(refused.stderr).endswith("schema.yaml exists; pass --force to replace it")
    assert not (tmp_path / "prompts").exists()
    assert (tmp_path / "schema.yaml").read_text(encoding="utf-8") == "entity_types: [MINE]\n"
    forced = _tune(runner, tmp_path, "--schema-out", str(tmp_path / "schema.yaml"), "--force")
    assert forced.exit_code == 0, forced.output
    assert "TELESCOPE" in (tmp_path / "schema.yaml").read_text(encoding="utf-8")


def test_a_versioned_override_counts_as_existing_and_force_keeps_the_folder_usable(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    _corpus(tmp_path / "corpus")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "extract_graph.v1.md").write_text(MINE, encoding="utf-8")
    (tmp_path / "ukr.yaml").write_text("prompts:\n  dir: prompts\n", encoding="utf-8")
    runner = CliRunner()
    refused = _tune(runner, tmp_path)
    assert refused.exit_code == 2
    assert _one_line(refused.stderr).endswith("prompts/extract_graph.v1.md exists; pass --force "
                                              "to replace it")  # fmt: skip
    forced = _tune(runner, tmp_path, "--force")
    assert forced.exit_code == 0, forced.output
    # the versioned file was replaced under its own name; no second override appeared
    assert sorted(p.name for p in prompts.iterdir()) == [
        "community_report.md",
        "extract_graph.v1.md",
        "extract_graph_schema.md",
    ]
    assert NOTE in (prompts / "extract_graph.v1.md").read_text(encoding="utf-8")
    listed = runner.invoke(app, ["prompts", "list", "--json", "-C", str(tmp_path)])
    assert listed.exit_code == 0, listed.output
    sources = {row["name"]: row["source"] for row in json.loads(listed.stdout)}
    assert sources["extract_graph"] == "prompts/extract_graph.v1.md"
    # both names there (a folder not yet in prompts.dir): --force writes NAME.md and
    # removes the other, so the folder works once configured
    (tmp_path / "ukr.yaml").unlink()
    (prompts / "extract_graph.md").write_text(MINE, encoding="utf-8")
    assert _tune(runner, tmp_path, "--force").exit_code == 0
    assert not (prompts / "extract_graph.v1.md").exists()
    assert NOTE in (prompts / "extract_graph.md").read_text(encoding="utf-8")
    (tmp_path / "ukr.yaml").write_text("prompts:\n  dir: prompts\n", encoding="utf-8")
    assert runner.invoke(app, ["prompts", "list", "-C", str(tmp_path)]).exit_code == 0


def test_an_unreadable_reply_is_not_cached_so_a_retry_asks_again(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    _corpus(tmp_path / "corpus")
    server.script(Scripted(reply="I cannot profile this corpus.", times=1))
    runner = CliRunner()
    first = _tune(runner, tmp_path)
    assert first.exit_code != 0 and "holds no JSON object" in first.stderr
    second = _tune(runner, tmp_path)
    assert second.exit_code == 0, second.output
    assert len(server.requests_to("/chat/completions")) == 2
    assert NOTE in (tmp_path / "prompts" / "extract_graph.md").read_text(encoding="utf-8")
    # the good reply is cached: a rerun (forced, to rewrite) asks the model no more
    assert _tune(runner, tmp_path, "--force").exit_code == 0
    assert len(server.requests_to("/chat/completions")) == 2


def test_with_the_drafted_schema_the_tuned_schema_variant_is_used(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    from unified_kg_rag.adapters.schema_sources import load_extraction_schema

    _corpus(tmp_path / "corpus")
    result = _tune(CliRunner(), tmp_path, "--schema-out", str(tmp_path / "schema.yaml"))
    assert result.exit_code == 0, result.output
    (tmp_path / "ukr.yaml").write_text(
        "prompts:\n  dir: prompts\ngraph:\n  extraction:\n    schema_sources:\n"
        "      - {kind: file, path: schema.yaml}\n",
        encoding="utf-8")  # fmt: skip
    config = load_config(tmp_path)
    library = load_prompt_library(config, tmp_path)
    schema = load_extraction_schema(config.graph.extraction, tmp_path)
    extractor = graph_extractor(config, None, None, schema=schema,  # type: ignore[arg-type]
                                prompts=library)  # fmt: skip
    template = extractor.extraction_template
    assert NOTE in template  # the tuned text ...
    assert template.startswith(PACKAGED.packaged("extract_graph_schema").partition("\n")[0])
    assert "{schema_types}" not in template and "- CELESTIAL_OBJECT: A galaxy" in template
    assert template.count("CELESTIAL_OBJECT: A galaxy, star or black hole.") == 2  # note+schema


def test_type_lists_are_capped_with_a_warning(server: FakeOpenAIServer, tmp_path: Path) -> None:
    _corpus(tmp_path / "corpus")
    many = {**PROFILE, "entity_types": [f"TYPE {i}" for i in range(3000)],
            "relationship_types": [f"REL {i}" for i in range(50)]}  # fmt: skip
    server.script(Scripted(reply=json.dumps(many), times=None))
    result = _tune(CliRunner(), tmp_path)
    assert result.exit_code == 0, result.output
    assert "warning: the profile reply lists 3000 entity types; kept the first 30" in (
        result.stderr
    )
    assert "warning: the profile reply lists 50 relationship types; kept the first 40" in (
        result.stderr
    )
    extract = (tmp_path / "prompts" / "extract_graph.md").read_text(encoding="utf-8")
    assert "- TYPE_29\n" in extract and "TYPE_30" not in extract
    assert "- REL_39\n" in extract and "REL_40" not in extract


def test_prompts_show_suggests_the_close_name(tmp_path: Path) -> None:
    runner = CliRunner()
    upper = runner.invoke(app, ["prompts", "show", "EXTRACT_GRAPH", "-C", str(tmp_path)])
    assert upper.exit_code == 2
    assert _one_line(upper.stderr).startswith(
        "ConfigurationError: no prompt named 'EXTRACT_GRAPH' (names are case-sensitive: did "
        "you mean 'extract_graph'?); prompts: "
    )
    v2 = runner.invoke(app, ["prompts", "show", "extract_graph.v2", "-C", str(tmp_path)])
    assert v2.exit_code == 2 and "'extract_graph.v2' (extract_graph exists as v1)" in v2.stderr
