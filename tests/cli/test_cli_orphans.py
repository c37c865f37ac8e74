"""``ukr status`` counts orphan extraction records; the next ``ukr index`` deletes them.

A real OpenAI-compatible server on 127.0.0.1 answers with the replies of
``tests/stages/test_graph_build.py``; the real bundled embedding model embeds. Two records no
text unit reads are written into the project's SQLite file by hand, as a run killed between
removing text units and deleting their records left them (issue #15 item 14).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.test_cli_status_drift import server  # noqa: F401 (fixture)
from tests.stages.test_graph_build import write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration


def test_status_counts_orphan_records_and_the_next_run_sweeps_them(
    server: FakeOpenAIServer, tmp_path: Path  # noqa: F811
) -> None:
    corpus = write_docs(tmp_path / "docs")
    runner = CliRunner()
    built = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path), "-q"])
    assert built.exit_code == 0, built.output
    db = sqlite3.connect(tmp_path / ".ukr" / "ukr.db")
    with db:
        db.executemany(
            "INSERT INTO records (scope, namespace, key, value) VALUES (?, ?, ?, ?)",
            [("default", "extraction_records", key, json.dumps({"fingerprint": key}))
             for key in ("0" * 64, "f" * 64)],
        )
    db.close()

    status = runner.invoke(app, ["status", "-C", str(tmp_path)])
    assert status.exit_code == 0, status.output
    assert ("extraction records orphaned 2 (the next `ukr index` run deletes them)"
            in " ".join(status.stdout.split()))
    info = json.loads(runner.invoke(app, ["status", "-C", str(tmp_path), "--json"]).stdout)
    assert info["indexes"][0]["extraction_records_orphaned"] == 2

    calls = len(server.requests_to("/chat/completions"))
    again = runner.invoke(app, ["index", str(corpus), "-C", str(tmp_path), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["records_removed"] == 2
    assert len(server.requests_to("/chat/completions")) == calls  # no model call
    info = json.loads(runner.invoke(app, ["status", "-C", str(tmp_path), "--json"]).stdout)
    assert info["indexes"][0]["extraction_records_orphaned"] == 0
