"""``ukr delete`` and the deletions of ``ukr index`` through the CLI (real embedder, SQLite)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests.support.corpus import write_good_docs
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration



def _ukr(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(app, list(args))


def _documents(runner: CliRunner, project: Path) -> dict[str, str]:
    """Relative path → document id, read from the project's SQLite file."""
    status = json.loads(_ukr(runner, "status", "-C", str(project), "--json").stdout)
    con = sqlite3.connect(f"file:{status['store']}?mode=ro", uri=True)
    try:
        return dict(con.execute("SELECT path, document_id FROM doc_records").fetchall())
    finally:
        con.close()


def test_index_deletes_gone_files_and_asks_before_emptying_the_index(
    runner: CliRunner, tmp_path: Path
) -> None:
    corpus = tmp_path / "docs"
    write_good_docs(corpus)
    project = str(tmp_path)
    assert _ukr(runner, "index", str(corpus), "-C", project, "-q").exit_code == 0
    (corpus / "bees.txt").unlink()
    one = _ukr(runner, "index", str(corpus), "-C", project, "-q")
    assert one.exit_code == 0, one.output
    assert "documents deleted" in one.stdout and "1 (1 text units)" in one.stdout
    assert sorted(_documents(runner, tmp_path)) == ["owls.md", "ships.md"]

    for f in corpus.iterdir():
        f.unlink()
    refused = _ukr(runner, "index", str(corpus), "-C", project, "-q")
    assert refused.exit_code == 2 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("ConfirmationRequiredError: index 'default': this run would delete "
                           "2 of 2 documents")
    assert "is empty now" in line and "pass --yes" in line
    assert sorted(_documents(runner, tmp_path)) == ["owls.md", "ships.md"]

    accepted = _ukr(runner, "index", str(corpus), "-C", project, "--yes", "--json")
    assert accepted.exit_code == 0, accepted.output
    report = json.loads(accepted.stdout)
    assert report["documents_deleted"] == 2 and report["text_units_deleted"] == 2
    assert _documents(runner, tmp_path) == {}


def test_delete_by_id_and_path_names_the_unknown_and_exits_3(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "docs"
    write_good_docs(corpus)
    (corpus / "eels.txt").write_text("Eels migrate to the Sargasso Sea to spawn.", "utf-8")
    project = str(tmp_path)
    assert _ukr(runner, "index", str(corpus), "-C", project, "-q").exit_code == 0
    ids = _documents(runner, tmp_path)

    monkeypatch.chdir(tmp_path)  # a relative path on the command line is read from here
    result = _ukr(runner, "delete", ids["owls.md"], "docs/bees.txt", "nope.md", "-C", project)
    assert result.exit_code == 3, result.output
    assert "deleted: owls.md" in result.stdout and "deleted: bees.txt" in result.stdout
    assert re.search(r"documents deleted\s+2\s", result.stdout)
    (line,) = result.stderr.strip().splitlines()
    assert line == "not deleted: nope.md: no document of the index has this id or path"
    assert sorted(_documents(runner, tmp_path)) == ["eels.txt", "ships.md"]

    # both remaining documents at once is more than half the index: --yes is needed
    refused = _ukr(runner, "delete", "ships.md", "eels.txt", "-C", project)
    assert refused.exit_code == 2 and "would delete 2 of 2 documents" in refused.stderr
    assert sorted(_documents(runner, tmp_path)) == ["eels.txt", "ships.md"]
    done = _ukr(runner, "delete", "ships.md", "eels.txt", "-C", project, "--yes", "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert sorted(d["path"] for d in report["deleted"]) == ["eels.txt", "ships.md"]
    assert report["unknown"] == [] and report["text_units_removed"] == 2
    assert _documents(runner, tmp_path) == {}
