"""``ukr index`` and ``ukr status`` with quarantined items (issue #15 item 5).

A real OpenAI-compatible server on 127.0.0.1 answers with the replies of
``tests/stages/test_graph_build.py`` except for one text unit, whose extraction it never
answers readably; one file of the corpus is binary. With ``indexing.quarantine_after: 2`` both
are quarantined by the second run; the third run skips them (exit 0, a notice); ``ukr status``
lists them with their last error (text and ``--json``); ``--retry-quarantined`` and a fixed
file release them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.stages.test_graph_build import _user, reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration

STATE = {"broken": True}


def _answer(body: dict[str, Any]) -> str:
    text = _user(body)
    if STATE["broken"] and "Kyoto University is" in text and "<current_items>" not in text:
        return "Sorry, I cannot comply."
    return reply(body)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    import os

    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)
    STATE["broken"] = True
    srv = FakeOpenAIServer(reply=_answer).start()
    monkeypatch.setenv("UKR_LLM__KIND", "openai")
    monkeypatch.setenv("UKR_LLM__OPENAI__BASE_URL", srv.base_url)
    monkeypatch.setenv("UKR_LLM__OPENAI__API_KEY", "k")
    monkeypatch.setenv("UKR_GRAPH__COMMUNITIES__MIN_COMMUNITY_SIZE", "2")
    monkeypatch.setenv("UKR_INDEXING__QUARANTINE_AFTER", "2")
    yield srv  # type: ignore[misc]
    srv.stop()


def _index(runner: CliRunner, corpus: Path, project: Path, *extra: str) -> Any:
    return runner.invoke(app, ["index", str(corpus), "-C", str(project), *extra])


def test_quarantined_document_and_unit_are_skipped_listed_and_released(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    corpus = write_docs(tmp_path / "docs")
    (corpus / "bad.txt").write_bytes(b"\x00\x01\x02 binary \xff" * 50)
    runner = CliRunner()

    first = _index(runner, corpus, tmp_path)
    assert first.exit_code == 3, first.output
    assert "bad.txt" in first.stdout and "extraction failed" in first.stdout
    second = _index(runner, corpus, tmp_path)
    assert second.exit_code == 3, second.output
    assert " ".join(second.stdout.split()).count(
        "(2 failed runs in a row: quarantined, not retried until it changes or "
        "`--retry-quarantined`)") == 2

    third = _index(runner, corpus, tmp_path)
    assert third.exit_code == 0, third.output
    assert ("quarantined: 1 document(s) and 1 text unit extraction(s) skipped"
            in " ".join(third.stdout.split()))

    status = runner.invoke(app, ["status", "-C", str(tmp_path)])
    assert status.exit_code == 0, status.output
    text = " ".join(status.stdout.split())
    assert "quarantined document: bad.txt, 2 failed runs in a row:" in text and "binary" in text
    assert "quarantined text unit: kyoto.txt (unit" in text
    assert "no <entities> section" in text and "--retry-quarantined" in text
    info = json.loads(runner.invoke(app, ["status", "-C", str(tmp_path), "--json"]).stdout)
    index = info["indexes"][0]
    assert [(q["kind"], q["path"], q["failures"]) for q in index["quarantined"]] == [
        ("document", "bad.txt", 2), ("text unit", "kyoto.txt", 2)]
    assert index["documents"]["quarantined"] == 1 and index["extraction_records_orphaned"] == 0

    retried = _index(runner, corpus, tmp_path, "--retry-quarantined", "--json")
    assert retried.exit_code == 3, retried.output
    report = json.loads(retried.stdout)
    assert report["documents_released"] == 1 and report["failed"][0]["failures"] == 3
    assert report["graph"]["units_failed"][0]["failures"] == 3

    # a fixed file is released by its new content; the unit only by --retry-quarantined
    (corpus / "bad.txt").write_text("Charles Babbage fixed this file.", encoding="utf-8")
    STATE["broken"] = False
    fixed = _index(runner, corpus, tmp_path, "--json")
    assert fixed.exit_code == 0, fixed.output
    report = json.loads(fixed.stdout)
    assert report["documents_changed"] == 1 and report["failed"] == []
    assert report["graph"]["units_quarantined"] == 1
    released = _index(runner, corpus, tmp_path, "--retry-quarantined", "--json")
    assert released.exit_code == 0, released.output
    graph = json.loads(released.stdout)["graph"]
    assert graph["units_failed"] == [] and graph["units_quarantined"] == 0
    final = json.loads(runner.invoke(app, ["status", "-C", str(tmp_path), "--json"]).stdout)
    assert final["indexes"][0]["quarantined"] == []
