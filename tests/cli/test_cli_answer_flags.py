"""`ukr query` flags what a reader must know, with a real OpenAI-compatible server on
127.0.0.1: a cut answer (`answer_complete`, `finish_reason`, a warning line, exit 0) and
citation labels that name no source (marked ``[42?]``, listed in `invalid_citations`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.openai_server import FakeOpenAIServer, Scripted
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration

DOCS = {
    "owls.md": "Owls are nocturnal birds of prey. The barn owl hunts voles at night.",
    "bees.txt": "Honey bees live in colonies. A queen bee lays the eggs of the hive.",
    "ships.md": "The clipper ship was a fast sailing vessel of the 19th century.",
}
QUESTION = "What do barn owls hunt?"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with three documents indexed without an LLM (the real bundled embedder)."""
    path = tmp_path_factory.mktemp("flags_project")
    docs = path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["index", str(docs), "-C", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def runner(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, openai_server: FakeOpenAIServer
) -> CliRunner:
    """A runner whose `ukr` answers with the test server's model (no retries, no cache)."""
    for key, value in {
        "UKR_LLM__KIND": "openai", "UKR_LLM__OPENAI__BASE_URL": openai_server.base_url,
        "UKR_LLM__OPENAI__API_KEY": "k", "UKR_LLM__MAX_RETRIES": "0", "UKR_LLM__CACHE": "false",
        "UKR_QUERY__LLM_ROUTER": "false",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    return runner


def query(runner: CliRunner, project: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["query", QUESTION, "-C", str(project), "-s", "naive",
                                 "-k", "3", *args])  # fmt: skip
    return result.exit_code, result.output


# ----------------------------------------------------------------------- item 2: cut answers


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_cut_answer_is_flagged_in_json(
    project: Path, runner: CliRunner, openai_server: FakeOpenAIServer, reason: str
) -> None:
    openai_server.script(Scripted(reply="Barn owls hunt voles [1] and", finish_reason=reason))
    code, output = query(runner, project, "--json")
    assert code == 0, output
    out = json.loads(output)
    assert out["answer"] == "Barn owls hunt voles [1] and"
    assert (out["metadata"]["answer_complete"], out["metadata"]["finish_reason"]) == (
        False, reason)  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("reason", "advice"),
    [("length", "raise query.answer_max_tokens"), ("content_filter", "content filter")],
)
def test_a_cut_answer_prints_a_warning_under_it(
    project: Path, runner: CliRunner, openai_server: FakeOpenAIServer, reason: str,
    advice: str, stream: bool,
) -> None:  # fmt: skip
    openai_server.script(Scripted(reply="Barn owls hunt voles [1] and", finish_reason=reason))
    code, output = query(runner, project, *(["--stream"] if stream else []))
    assert code == 0, output  # the answer is delivered, flagged
    lines = output.splitlines()
    at = next(i for i, ln in enumerate(lines) if "Barn owls hunt voles [1] and" in ln)
    warning = lines[at + 1]
    assert warning.startswith("warning: the answer is incomplete: ")
    assert f"(finish reason '{reason}')" in warning and advice in warning


def test_a_complete_answer_prints_no_warning(
    project: Path, runner: CliRunner, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(Scripted(reply="Barn owls hunt voles [1]."))
    code, output = query(runner, project)
    assert code == 0, output
    assert "warning:" not in output


# ------------------------------------------------------------ item 7: bogus citation labels


def test_bogus_citation_labels_are_marked_and_listed(
    project: Path, runner: CliRunner, openai_server: FakeOpenAIServer
) -> None:
    answer = "Barn owls hunt voles [1][42]. Bees lay eggs [0], ships [3.7]."
    openai_server.script(Scripted(reply=answer))
    code, output = query(runner, project)
    assert code == 0, output
    assert "Barn owls hunt voles [1][42?]. Bees lay eggs [0?], ships [3.7?]." in output
    assert "warning: the answer cites sources that do not exist: [42], [0], [3.7]" in output

    openai_server.script(Scripted(reply=answer))
    code, output = query(runner, project, "--json")
    out = json.loads(output)
    assert out["answer"] == answer  # the model's text is kept as written
    assert out["metadata"]["invalid_citations"] == ["[42]", "[0]", "[3.7]"]
    assert out["cited"] == [1]
