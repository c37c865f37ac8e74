"""Ctrl-C during `ukr index` (a real SIGINT to a real process) loses nothing, and the next run
finishes without embedding again what was stored."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

UKR = [sys.executable, "-m", "unified_kg_rag.cli"]


def _stored_units(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute(
                "SELECT count(*) FROM search_records WHERE vector IS NOT NULL"
            ).fetchone()
            return int(row[0])
    except sqlite3.Error:
        return 0


def test_sigint_then_rerun_resumes(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(240):
        body = " ".join(f"Fact {j} of note {i} concerns subject{i}x{j}." for j in range(40))
        (corpus / f"note{i:03d}.txt").write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    env["UKR_INDEXING__BATCH_DOCUMENTS"] = "20"
    db = tmp_path / ".ukr" / "ukr.db"

    proc = subprocess.Popen(
        [*UKR, "index", str(corpus), "-C", str(tmp_path), "--quiet"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while _stored_units(db) < 40 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Interrupted" in stderr
    stored = _stored_units(db)
    assert stored > 0

    rerun = subprocess.run(
        [*UKR, "index", str(corpus), "-C", str(tmp_path), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    final = _stored_units(db)
    # exactly the units missing after the interruption were embedded: nothing stored was redone
    assert report["text_units_embedded"] == final - stored
    assert report["documents_unchanged"] > 0
    found = report["documents_new"] + report["documents_unchanged"] + report["documents_retried"]
    assert found == 240  # the batch in flight was written ahead as pending: retried
    assert not report["failed"]
