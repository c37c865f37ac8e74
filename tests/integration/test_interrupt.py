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


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
        # a test run started in the background (`make test &`) ignores SIGINT, and a child
        # inherits that: give the run Ctrl-C's default meaning, as a terminal would
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 240
    while _stored_units(db) < 40 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if proc.poll() is not None:
        _, err = proc.communicate()
        raise AssertionError(
            f"the run finished (exit {proc.returncode}) before it could be interrupted; "
            f"stored units {_stored_units(db)}; stderr: {err[-2000:]}"
        )
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


@pytest.mark.postgres
def test_sigkill_on_postgres_then_rerun_converges(tmp_path: Path, postgres_url: str) -> None:
    """A run killed outright (no cleanup) on PostgreSQL: its open transaction is rolled back
    by the server, its lease is left to lapse, and the next run finishes the work without
    embedding stored units again and reaches the same state as an uninterrupted build."""
    import psycopg
    from tests.support.postgres import fresh_catalog

    from unified_kg_rag.adapters.postgres.database import index_schema_name

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(80):
        body = " ".join(f"Fact {j} of note {i} concerns subject{i}x{j}." for j in range(40))
        (corpus / f"note{i:03d}.txt").write_text(body, encoding="utf-8")
    catalog = fresh_catalog()
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    env.update({
        "UKR_INDEXING__BATCH_DOCUMENTS": "10",
        "UKR_INDEXING__LEASE_S": "4",
        "UKR_STORES__KIND": "postgres",
        "UKR_STORES__POSTGRES__URL": postgres_url,
        "UKR_STORES__POSTGRES__SCHEMA_NAME": catalog,
    })
    schema = index_schema_name(catalog, "default")

    def stored() -> tuple[int, int]:
        try:
            with psycopg.connect(postgres_url, autocommit=True) as conn:
                units = conn.execute(
                    f'SELECT count(*) FILTER (WHERE embedding IS NOT NULL), count(*) '
                    f'FROM "{schema}".search_records').fetchone()
                return (int(units[0]), int(units[1])) if units else (0, 0)
        except psycopg.Error:
            return 0, 0

    proc = subprocess.Popen([*UKR, "index", str(corpus), "-C", str(tmp_path), "--quiet"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while stored()[0] < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.kill()
    proc.communicate(timeout=60)
    at_kill = stored()[0]
    assert at_kill > 0

    busy = subprocess.run([*UKR, "index", str(corpus), "-C", str(tmp_path), "--json"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    if busy.returncode == 2:  # the dead run's lease had not lapsed yet
        assert "is being written by" in busy.stderr
        time.sleep(4.5)
        rerun = subprocess.run([*UKR, "index", str(corpus), "-C", str(tmp_path), "--json"],
                               env=env, capture_output=True, text=True, timeout=600,
                               check=False)  # fmt: skip
    else:  # on a loaded machine the lease had lapsed: this run was the resuming one
        rerun = busy
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    with_vectors, total = stored()
    assert with_vectors == total  # every stored unit has its vector
    assert report["text_units_embedded"] == total - at_kill
    assert report["documents_new"] + report["documents_unchanged"] + report[
        "documents_retried"] == 80

    # the same corpus built in one go into another index gives the same text units
    fresh = subprocess.run(
        [*UKR, "index", str(corpus), "-C", str(tmp_path), "--json", "--index", "clean"],
        env=env, capture_output=True, text=True, timeout=600, check=False)
    assert fresh.returncode == 0, fresh.stderr
    clean = index_schema_name(catalog, "clean")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        def ids(s: str) -> set[str]:
            return {r[0] for r in conn.execute(f'SELECT id FROM "{s}".search_records')}

        assert ids(schema) == ids(clean)
        statuses = conn.execute(
            f'SELECT status, count(*) FROM "{schema}".doc_records GROUP BY status').fetchall()
    assert statuses == [("processed", 80)]


def test_sigterm_stops_like_ctrl_c_and_gives_the_lease_up(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(120):
        body = " ".join(f"Fact {j} of note {i} concerns subject{i}x{j}." for j in range(40))
        (corpus / f"note{i:03d}.txt").write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    env["UKR_INDEXING__BATCH_DOCUMENTS"] = "10"
    db = tmp_path / ".ukr" / "ukr.db"

    def lease_holder() -> str | None:
        if not db.exists():
            return None
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                row = conn.execute("SELECT holder FROM leases").fetchone()
                return None if row is None else str(row[0])
        except sqlite3.Error:
            return None

    proc = subprocess.Popen([*UKR, "index", str(corpus), "-C", str(tmp_path), "--quiet"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while _stored_units(db) < 10 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be stopped"
    assert lease_holder() is not None
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert stderr.startswith("Terminated")
    assert lease_holder() is None  # given up: the next run starts at once


def test_sigint_inside_one_large_file_keeps_its_embedded_steps(tmp_path: Path) -> None:
    """Issue 16 item 6: Ctrl-C while one large file is embedded kept nothing of it (its units
    were one embedding call). Units are now stored in steps: the interrupt says how many of
    the file's units were kept, the file stays pending, and the next run embeds only the rest."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    body = " ".join(f"Fact {i} says that item{i} weighs {i % 97} grams." for i in range(2500))
    (corpus / "big.txt").write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    env.update({"UKR_INDEXING__EMBED_BATCH_UNITS": "16", "UKR_CHUNKING__SIZE_TOKENS": "60",
                "UKR_CHUNKING__OVERLAP_TOKENS": "10"})
    db = tmp_path / ".ukr" / "ukr.db"

    proc = subprocess.Popen([*UKR, "index", str(corpus), "-C", str(tmp_path), "--quiet"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    deadline = time.monotonic() + 240
    while _stored_units(db) < 48 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, f"the run finished before it could be interrupted: {proc.stderr}"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    stored = _stored_units(db)
    assert stored >= 48
    said = " ".join(stderr.split())
    assert f"kept {stored:,} of " in said and "big.txt embedded" in said, said
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        [(status,)] = conn.execute("SELECT status FROM doc_records").fetchall()
    assert status == "pending"

    rerun = subprocess.run([*UKR, "index", str(corpus), "-C", str(tmp_path), "--json"],
                           env=env, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["text_units_reused"] == stored  # nothing stored is embedded again
    assert report["text_units_embedded"] == _stored_units(db) - stored
