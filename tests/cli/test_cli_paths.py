"""One path form (issue 16 item 8): shown relative to the indexed folder, accepted in any form.

`ukr query` shows each source's path relative to the folder that was indexed; ``--filter
path=`` takes that form, the absolute one, ``./`` and a path from the current directory
(normalised by the retrieval layer, so the library takes them too); a filter no passage
passes is an error saying so, not a "cannot answer" with exit 0.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.cli.app import app
from unified_kg_rag.config.load import load_config
from unified_kg_rag.retrieval.chain import RAGChain
from unified_kg_rag.util.errors import FilterMatchesNothingError

pytestmark = pytest.mark.integration

DOCS = {
    "notes/harbour.md": "# Harbour\n\nThe lighthouse keeper lit the lamp at dusk every night.",
    "notes/orchard.md": "# Orchard\n\nThe orchard grows apples and pears beside the river.",
    "mill.txt": "The old mill ground wheat into flour for the whole valley.",
}



@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paths")
    for rel, text in DOCS.items():
        (root / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / rel).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["index", str(root / "corpus"), "-C", str(root), "-q"])
    assert result.exit_code == 0, result.output
    return root


def _query(runner: CliRunner, project: Path, *extra: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["query", "Who lit the lamp?", "-C", str(project),
                                 "--strategy", "naive", *extra])
    return result.exit_code, result.stdout, result.stderr


def test_sources_show_the_path_relative_to_the_indexed_folder(
    project: Path, runner: CliRunner
) -> None:
    code, out, _ = _query(runner, project)
    assert code == 0, out
    assert "notes/harbour.md" in out
    assert str(project) not in out  # neither the absolute form nor one relative to the cwd
    assert "corpus/notes/harbour.md" not in out


@pytest.mark.parametrize("form", ["displayed", "absolute", "dot", "cwd"])
def test_filter_path_accepts_every_form(
    project: Path, runner: CliRunner, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = {
        "displayed": "notes/orchard.md",
        "absolute": str(project / "corpus" / "notes" / "orchard.md"),
        "dot": "./notes/orchard.md",
        "cwd": "corpus/notes/orchard.md",
    }[form]
    monkeypatch.chdir(project)
    code, out, err = _query(runner, project, "--filter", f"path={value}", "--json")
    assert code == 0, err
    paths = {s["path"] for s in json.loads(out)["sources"]}
    assert paths == {"notes/orchard.md"}


def test_a_filter_no_passage_passes_is_an_error_saying_so(
    project: Path, runner: CliRunner
) -> None:
    code, out, err = _query(runner, project, "--filter", "path=notes/harbor.md")
    assert code == 2
    assert out == ""
    assert err.startswith("FilterMatchesNothingError: filters: no passage passes the filter")
    assert "notes/harbour.md" in err  # the closest stored path is suggested
    assert len(err.strip().splitlines()) == 1
    code, out, err = _query(runner, project, "--filter", "chunk_index=7")
    assert code == 2 and "no passage passes the filter" in err


def test_the_library_takes_the_absolute_form_too(project: Path) -> None:
    async def body() -> None:
        config = load_config(project)
        async with build_app(config, project) as built:
            chain = RAGChain(built.index(), embedder=built.embedder,
                             chat_model=built.chat_model,
                             budget_tokenizer=built.budget_tokenizer, config=config.query)
            absolute = str(project / "corpus" / "mill.txt")
            out = await chain.retrieve("What did the mill grind?", strategy="naive",
                                       filters={"path": [absolute, "./notes/orchard.md"]})
            assert {s.path for s in out.sources} == {"mill.txt", "notes/orchard.md"}
            with pytest.raises(FilterMatchesNothingError, match="no passage passes"):
                await chain.retrieve("mill", strategy="naive", filters={"path": "/elsewhere.md"})

    asyncio.run(body())


def test_an_absolute_path_picks_one_of_two_documents_sharing_a_relative_path(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder, text in (("a", "Alpha notes: the key rotates every ninety days."),
                         ("b", "Beta notes: the backup runs every night.")):  # fmt: skip
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.md").write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["index", str(tmp_path / folder), "-C", str(tmp_path), "-q"])
        assert result.exit_code == 0, result.output
    monkeypatch.chdir(tmp_path)
    for value in (str(tmp_path / "a" / "notes.md"), "a/notes.md"):
        result = runner.invoke(app, ["query", "notes", "-C", str(tmp_path), "-s", "naive",
                                     "--filter", f"path={value}", "--json"])  # fmt: skip
        assert result.exit_code == 0, result.output
        texts = [s["text"] for s in json.loads(result.stdout)["sources"]]
        assert texts and all(t.startswith("Alpha") for t in texts), value
    shown = runner.invoke(app, ["query", "notes", "-C", str(tmp_path), "-s", "naive",
                                "--filter", "path=notes.md", "--json"])  # fmt: skip
    texts = {s["text"].split()[0] for s in json.loads(shown.stdout)["sources"]}
    assert texts == {"Alpha", "Beta"}  # the shown form: that path in every folder indexed


def test_a_filter_on_a_document_that_failed_says_so(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("The lighthouse keeper lit the lamp.", encoding="utf-8")
    (corpus / "empty.txt").write_text("", encoding="utf-8")
    result = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path), "-q"])
    assert result.exit_code == 3, result.output
    result = runner.invoke(app, ["query", "lamp", "-C", str(tmp_path), "--filter",
                                 "path=empty.txt"])  # fmt: skip
    assert result.exit_code == 2
    assert "the document is failed, with no passage: `ukr status` says why" in result.stderr
