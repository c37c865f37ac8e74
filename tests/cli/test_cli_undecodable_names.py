"""File names that are not valid UTF-8, through the CLI (real files, real embedder, SQLite).

On Linux a file name is bytes; Python decodes the bytes that are not UTF-8 to lone surrogates
(``surrogateescape``). Issue 15 item 6(c): ``caf\\xe9.txt`` and ``caf\\xe8.txt`` were both shown
as ``caf\ufffd.txt`` (progress, problem lines, sources' ``path`` and ``location``, ``--json``),
and a message archive with such a name was remembered under a mangled path, so the next run
took it for gone from disk. Names are shown with each such byte escaped (``\\xe9``); document
ids are unchanged.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from unified_kg_rag.cli.app import app
from unified_kg_rag.domain.identity import document_id

pytestmark = pytest.mark.integration


def _ukr(*args: str) -> Result:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("UKR_")}
    return CliRunner(env=env).invoke(app, list(args))


def _create(folder: Path, name: bytes, content: bytes) -> None:
    """Create ``folder/name`` from bytes (``os.open`` takes a bytes path as the OS does)."""
    try:
        fd = os.open(os.fsencode(folder) + b"/" + name, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError as exc:  # a file system that only stores UTF-8 names (macOS APFS)
        pytest.skip(f"this file system refuses names that are not UTF-8: {exc}")
    try:
        os.write(fd, content)
    finally:
        os.close(fd)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    _create(folder, b"caf\xe9.txt", b"The espresso machine in the kitchen needs descaling.\n")
    _create(folder, b"caf\xe8.txt", b"The espresso beans come from a roaster in Lyon.\n")
    _create(folder, b"empty\xff.txt", b"   \n")
    _create(folder, b"chat\xe9.jsonl", json.dumps(
        {"guid": "m1", "thread_id": "t", "sender": "Ann", "timestamp": "2024-05-01T10:00:00Z",
         "text": "The espresso cups are in the blue box"}).encode() + b"\n")
    return folder


def test_undecodable_names_are_shown_escaped_and_kept_apart(
    corpus: Path, tmp_path: Path
) -> None:
    project = str(tmp_path / "p")
    first = _ukr("index", str(corpus), "-C", project, "--json")
    assert first.exit_code == 3, first.output  # empty\xff.txt has no text
    report = json.loads(first.stdout)
    assert [(f["path"], f["reason"]) for f in report["failed"]] == [
        ("empty\\xff.txt", "empty document (no text)")]  # relative to the folder indexed
    assert report["messages"]["messages"] == 1

    text = _ukr("index", str(corpus), "-C", project)
    assert "failed: empty\\xff.txt: empty document (no text)" in text.stdout
    assert "archive gone from disk" not in text.stdout  # the archive was found again

    out = json.loads(_ukr("query", "espresso", "-C", project, "-s", "naive", "--json").stdout)
    files = {s["path"]: s for s in out["sources"] if s["path"].endswith(".txt")}
    assert set(files) == {"caf\\xe9.txt", "caf\\xe8.txt"}
    scope = corpus.resolve().as_posix()
    for name, raw in (("caf\\xe9.txt", "caf\udce9.txt"), ("caf\\xe8.txt", "caf\udce8.txt")):
        assert files[name]["location"] == f"{scope}/{name}"
        assert files[name]["title"] == name.removesuffix(".txt")
        assert files[name]["document_id"] == document_id(scope, raw)  # ids as before
    assert any(m["guid"] == "m1" for s in out["sources"] for m in s["messages"])

    again = json.loads(_ukr("index", str(corpus), "-C", project, "--json").stdout)
    assert again["documents_unchanged"] == 3  # two files and the archive's transcript
    assert again["messages"]["archives_missing"] == []
    assert again["messages"]["unchanged"] == 1

    # a run naming only another archive reads this one again from its remembered path
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"guid": "o1", "thread_id": "u", "sender": "Bo",
                                 "text": "Tea is in the cupboard"}) + "\n", encoding="utf-8")
    more = json.loads(_ukr("index", str(other), "-C", project, "--json").stdout)
    assert (more["messages"]["archives"], more["messages"]["archives_missing"]) == (2, [])
    assert more["messages"]["removed"] == 0

    # the path as the shell passes it, or as ukr shows it, deletes that one document
    gone = _ukr("delete", str(corpus / "caf\udce9.txt"), "-C", project, "--yes", "--json")
    assert gone.exit_code == 0, gone.output
    shown = _ukr("delete", "caf\\xe8.txt", "-C", project, "--yes", "--json")
    assert shown.exit_code == 0, shown.output
    status = json.loads(_ukr("status", "-C", project, "--json").stdout)
    con = sqlite3.connect(f"file:{status['store']}?mode=ro", uri=True)
    try:
        paths = [p for (p,) in con.execute("SELECT path FROM doc_records")]
    finally:
        con.close()
    assert not any(p.startswith("caf") for p in paths), paths
    assert "empty\\xff.txt" in paths  # failed documents are recorded under the shown name
