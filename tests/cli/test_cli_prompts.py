"""``ukr prompts list/show`` and ``ukr prompt-tune`` against a real HTTP model on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.support.openai_server import FakeOpenAIServer, Scripted
from unified_kg_rag.cli.app import app
from unified_kg_rag.domain.prompts.library import PACKAGED
from unified_kg_rag.domain.prompts.render import placeholders

pytestmark = pytest.mark.integration

DOCS = {
    "a.txt": "The Hubble Space Telescope observed the galaxy M87 in 1994.",
    "b.txt": "NASA operates the Hubble Space Telescope with ESA.",
    "c.txt": "The Event Horizon Telescope imaged the black hole of M87 in 2019.",
    "d.txt": "Vera Rubin measured the rotation curves of galaxies.",
    "e.txt": "The James Webb Space Telescope orbits the Sun near L2.",
    "f.txt": "ESA built the NIRSpec instrument of the James Webb Space Telescope.",
}
PROFILE = {
    "domain": "observational astronomy",
    "persona": "An astronomer who follows telescope missions.",
    "language": "English",
    "entity_types": [
        {"name": "telescope", "description": "An instrument {space or ground} that observes."},
        {"name": "CELESTIAL OBJECT", "description": "A galaxy, star or black hole."},
        {"name": "ORGANIZATION", "description": "A space agency."},
    ],
    "relationship_types": [
        {"name": "OBSERVED", "description": "The telescope observed the object."},
        {"name": "OPERATES", "description": "The organization runs the telescope."},
    ],
    "patterns": [["TELESCOPE", "OBSERVED", "CELESTIAL_OBJECT"],
                 ["ORGANIZATION", "OPERATES", "TELESCOPE"],
                 ["PERSON", "OPERATES", "TELESCOPE"]],
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    import os

    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)
    srv = FakeOpenAIServer(reply=lambda body: "```json\n" + json.dumps(PROFILE) + "\n```").start()
    monkeypatch.setenv("UKR_LLM__KIND", "openai")
    monkeypatch.setenv("UKR_LLM__OPENAI__BASE_URL", srv.base_url)
    monkeypatch.setenv("UKR_LLM__OPENAI__API_KEY", "k")
    yield srv
    srv.stop()


def _corpus(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _tune(runner: CliRunner, project: Path, *extra: str) -> Any:
    return runner.invoke(app, ["prompt-tune", str(project / "corpus"), "-C", str(project),
                               "--out", str(project / "prompts"), *extra])  # fmt: skip


def test_prompt_tune_writes_adapted_prompts_a_schema_and_the_config_lines(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    _corpus(tmp_path / "corpus")
    runner = CliRunner()
    result = _tune(runner, tmp_path, "--sample", "3", "--schema-out",
                   str(tmp_path / "schema.yaml"))  # fmt: skip
    assert result.exit_code == 0, result.output
    # one call; the sample is units 0, 2, 4 of six (a, c, e in corpus order)
    calls = server.requests_to("/chat/completions")
    assert len(calls) == 1
    user = calls[0].body["messages"][-1]["content"]
    assert "[1] The Hubble Space Telescope observed" in user
    assert "[2] The Event Horizon Telescope" in user and "[3] The James Webb" in user
    assert "NASA" not in user and "Here are 3 sample passages" in user
    extract = (tmp_path / "prompts" / "extract_graph.md").read_text(encoding="utf-8")
    report = (tmp_path / "prompts" / "community_report.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "prompts").iterdir()) == [
        "community_report.md", "extract_graph.md", "extract_graph_schema.md"]
    assert placeholders(extract) == placeholders(PACKAGED.packaged("extract_graph"))
    assert placeholders(report) == placeholders(PACKAGED.packaged("community_report"))
    assert "The texts come from this domain: observational astronomy." in extract
    assert "- TELESCOPE: An instrument (space or ground) that observes." in extract
    assert "- OPERATES: The organization runs the telescope." in extract
    assert extract.endswith(PACKAGED.packaged("extract_graph").partition("\n\n")[2])
    assert "Write for this reader: An astronomer who follows telescope missions." in report
    schema = yaml.safe_load((tmp_path / "schema.yaml").read_text(encoding="utf-8"))
    assert schema == {
        "entity_types": [
            {"name": "TELESCOPE", "description": "An instrument {space or ground} that observes.",
             "synonyms": []},
            {"name": "CELESTIAL_OBJECT", "description": "A galaxy, star or black hole.",
             "synonyms": []},
            {"name": "ORGANIZATION", "description": "A space agency.", "synonyms": []},
        ],
        "relationship_types": [
            {"name": "OBSERVED", "description": "The telescope observed the object."},
            {"name": "OPERATES", "description": "The organization runs the telescope."},
        ],
        "patterns": [["TELESCOPE", "OBSERVED", "CELESTIAL_OBJECT"],
                     ["ORGANIZATION", "OPERATES", "TELESCOPE"]],  # PERSON is no listed type
    }  # fmt: skip
    printed = yaml.safe_load(result.stdout)
    assert printed == {"prompts": {"dir": "prompts"}, "graph": {"extraction": {
        "entity_types": ["TELESCOPE", "CELESTIAL_OBJECT", "ORGANIZATION"]}}}
    # the printed lines put the files in effect: checked, listed and shown
    (tmp_path / "ukr.yaml").write_text(result.stdout, encoding="utf-8")
    listed = runner.invoke(app, ["prompts", "list", "--json", "-C", str(tmp_path)])
    assert listed.exit_code == 0, listed.output
    sources = {row["name"]: row["source"] for row in json.loads(listed.stdout)}
    assert sources["extract_graph"] == "prompts/extract_graph.md"
    assert sources["community_report"] == "prompts/community_report.md"
    assert sources["glean_graph"] == "packaged"
    shown = runner.invoke(app, ["prompts", "show", "extract_graph", "-C", str(tmp_path)])
    assert shown.stdout == extract
    packaged = runner.invoke(app, ["prompts", "show", "extract_graph.v1", "--packaged",
                                   "-C", str(tmp_path)])  # fmt: skip
    assert packaged.stdout == PACKAGED.packaged("extract_graph")


def test_language_option_wins_and_reaches_the_prompt(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    _corpus(tmp_path / "corpus")
    result = _tune(CliRunner(), tmp_path, "--language", "French")
    assert result.exit_code == 0, result.output
    system = server.requests_to("/chat/completions")[0].body["messages"][0]["content"]
    assert '"language": "French" (the user chose it; write exactly that).' in system
    report = (tmp_path / "prompts" / "community_report.md").read_text(encoding="utf-8")
    assert "Write the report in French." in report


@pytest.mark.parametrize(("reply", "message"), [
    ("I cannot profile this corpus.", "the profile reply holds no JSON object"),
    (json.dumps({**PROFILE, "persona": ""}), "the profile reply lacks 'persona'"),
    (json.dumps({k: v for k, v in PROFILE.items() if k != "entity_types"}),
     "the profile reply has no list 'entity_types'"),
    (json.dumps({k: v for k, v in PROFILE.items() if k != "relationship_types"}),
     "the profile reply has no list 'relationship_types'"),
])  # fmt: skip
def test_a_bad_profile_reply_is_one_line_and_writes_nothing(
    server: FakeOpenAIServer, tmp_path: Path, reply: str, message: str
) -> None:
    _corpus(tmp_path / "corpus")
    server.script(Scripted(reply=reply, times=None))
    result = _tune(CliRunner(), tmp_path, "--schema-out", str(tmp_path / "schema.yaml"))
    assert result.exit_code != 0
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "prompts").exists() and not (tmp_path / "schema.yaml").exists()


def test_prompt_tune_without_an_llm_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    _corpus(tmp_path / "corpus")
    result = _tune(runner, tmp_path)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "ConfigurationError: llm.kind: prompt-tune needs an LLM: set llm.kind (it is `none`)")
    assert not (tmp_path / "prompts").exists()


def test_prompts_list_and_show_with_an_override_and_errors(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "mine.md").write_text("Keywords of: {question}\n", encoding="utf-8")
    (tmp_path / "ukr.yaml").write_text("prompts:\n  files:\n    query_keywords: mine.md\n")
    listed = runner.invoke(app, ["prompts", "list", "--json", "-C", str(tmp_path)])
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["query_keywords"] == {"name": "query_keywords", "version": "v1",
                                      "placeholders": ["question"], "required": ["question"],
                                      "source": "mine.md"}  # fmt: skip
    assert rows["extract_graph"]["placeholders"] == ["entity_types", "schema_types", "text"]
    assert rows["extract_graph"]["required"] == ["text"]
    table = runner.invoke(app, ["prompts", "list", "-C", str(tmp_path)])
    line = next(x for x in table.stdout.splitlines() if x.strip().startswith("extract_graph"))
    words = line.split()  # the placeholders column may wrap onto the next line
    assert words[:3] == ["extract_graph", "v1", "[entity_types]"] and words[-1] == "packaged"
    shown = runner.invoke(app, ["prompts", "show", "query_keywords", "-C", str(tmp_path)])
    assert shown.stdout == "Keywords of: {question}\n"
    unknown = runner.invoke(app, ["prompts", "show", "nope", "-C", str(tmp_path)])
    assert unknown.exit_code == 2 and unknown.stderr.startswith(
        "ConfigurationError: no prompt named 'nope'; prompts: align_schema_types, answer_system, ")
    (tmp_path / "mine.md").write_text("Keywords.\n", encoding="utf-8")
    bad = runner.invoke(app, ["prompts", "list", "-C", str(tmp_path)])
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "ConfigurationError: mine.md: missing placeholder {question}"
