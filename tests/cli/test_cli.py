"""The ``ukr`` CLI end to end (Typer's CliRunner) with the real bundled embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.corpus import write_bad_inputs, write_good_docs
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the good documents and every bad input indexed once."""
    project = tmp_path_factory.mktemp("project")
    corpus = project / "docs"
    write_good_docs(corpus)
    write_bad_inputs(corpus, big_line_bytes=20_000)
    result = CliRunner().invoke(app, ["index", str(corpus), "-C", str(project), "--json"])
    assert result.exit_code == 3, result.output
    return project


def test_index_reports_failures_one_line_each_and_exits_3(runner: CliRunner, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    write_good_docs(corpus)
    write_bad_inputs(corpus, big_line_bytes=20_000)
    result = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path)])
    assert result.exit_code == 3
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("failed: ")]
    names = sorted(Path(ln.split(": ")[1]).name for ln in lines)
    assert names == ["binary.txt", "blank.md", "broken.pdf", "empty.txt"]
    assert any("empty.txt: empty document" in ln for ln in lines)
    assert "documents found" in result.stdout


def test_index_json_is_one_document(indexed: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["index", str(indexed / "docs"), "-C", str(indexed), "--json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 3  # the bad files are retried and fail again
    assert report["documents_unchanged"] == 6 and report["documents_retried"] == 4
    assert report["text_units_embedded"] == 0


def test_status_lists_the_index(indexed: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["status", "-C", str(indexed), "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    (info,) = status["indexes"]
    assert info["name"] == "default"
    assert info["documents"] == {"failed": 4, "processed": 6}
    assert info["embedding_model"].startswith("local:all-MiniLM-L6-v2@53aa5117")
    assert info["embedding_dimension"] == 384


def test_query_json_returns_extractive_answer_with_exact_sources(
    indexed: Path, runner: CliRunner
) -> None:
    result = runner.invoke(
        app, ["query", "What do barn owls hunt at night?", "-C", str(indexed), "--json", "-k", "3"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["answer_kind"] == "extractive"
    assert out["answer"].startswith("Extractive answer")
    assert "voles" in out["answer"]
    sources = out["sources"]
    assert [s["n"] for s in sources] == list(range(1, len(sources) + 1))
    assert 1 <= len(sources) <= 3
    assert sources[0]["path"] == "owls.md"
    # every quoted sentence cites a source that is in the list
    cited = {int(c) for c in __import__("re").findall(r"\[(\d+)\]", out["answer"])}
    assert cited and cited <= {s["n"] for s in sources}
    assert sorted(cited) == out["cited"]
    # provenance: the source text is exactly the document slice it names
    doc = (indexed / "docs" / "owls.md").read_text(encoding="utf-8")
    assert doc[sources[0]["start_char"] : sources[0]["end_char"]] == sources[0]["text"]


def test_query_prints_answer_and_numbered_sources(indexed: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "Who lays the eggs of the hive?", "-C", str(indexed)])
    assert result.exit_code == 0, result.output
    assert "queen bee" in result.stdout
    assert "Sources cited" in result.stdout and "[1]" in result.stdout


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question_is_a_usage_error(indexed: Path, runner: CliRunner, question: str) -> None:
    result = runner.invoke(app, ["query", question, "-C", str(indexed)])
    assert result.exit_code == 2
    assert "question: must not be empty" in result.stderr


def test_query_on_an_empty_project_says_what_to_do(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["query", "anything", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "holds no text units" in result.stderr and "ukr index" in result.stderr


def test_missing_directory_exits_2_and_names_it(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["index", str(tmp_path / "nowhere"), "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "nowhere: no such file or directory" in result.stderr
    assert not (tmp_path / ".ukr").exists()


def test_invalid_config_exits_2_with_the_field(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "ukr.yaml").write_text("query:\n  top_k: -1\n")
    result = runner.invoke(app, ["status", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "query.top_k" in result.stderr and "ukr.yaml" in result.stderr


def test_unknown_provider_kind_exits_2_listing_the_known_ones(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "ukr.yaml").write_text("llm:\n  kind: gpt5\n")
    result = runner.invoke(app, ["config", "show", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "llm.kind" in result.stderr and "none, openai, scripted" in result.stderr


def test_init_writes_a_loadable_commented_file(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["init", str(tmp_path / "proj")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "proj" / "ukr.yaml").read_text()
    assert sum(ln.lstrip().startswith("# ") for ln in text.splitlines()) > 40
    assert "chunking:" in text
    again = runner.invoke(app, ["init", str(tmp_path / "proj")])
    assert again.exit_code == 2 and "--force" in again.stderr
    shown = runner.invoke(app, ["config", "show", "-C", str(tmp_path / "proj"), "--json"])
    assert json.loads(shown.stdout)["chunking"]["size_tokens"] == 600


def test_config_show_masks_secrets(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_LLM__OPENAI__API_KEY", "sk-live-123456")
    result = runner.invoke(app, ["config", "show", "-C", str(tmp_path)])
    assert result.exit_code == 0
    assert "sk-live-123456" not in result.stdout and "**********" in result.stdout


def test_project_dir_from_environment(
    indexed: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_PROJECT_DIR", str(indexed))
    result = runner.invoke(app, ["status", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["project_dir"] == str(indexed)


def test_empty_index_name_is_refused(indexed: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["query", "owls", "-C", str(indexed), "--index", ""])
    assert result.exit_code == 2
    assert "invalid index name ''" in result.stderr
