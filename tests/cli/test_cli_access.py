"""`ukr query` with ``query.access.record``: the process's counts are written as it ends."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.graph_fixture import graph_app
from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.retrieval.access import KIND_COLLECTIONS

pytestmark = pytest.mark.integration


def _counts(db: Path, wanted: Counter[tuple[str, str]]) -> dict[tuple[str, str], int]:
    async def read() -> dict[tuple[str, str], int]:
        found: dict[tuple[str, str], int] = {}
        async with SqliteBackend(db) as backend:
            log = backend.access_log("default")
            for kind in {k for k, _ in wanted}:
                ids = [i for k, i in wanted if k == kind]
                counts = await log.counts(KIND_COLLECTIONS[kind], ids)
                found.update(((kind, i), n) for i, n in counts.items())
        return found

    return asyncio.run(read())


def test_ukr_query_records_its_sources_only_when_asked(tmp_path: Path, runner: CliRunner) -> None:
    from unified_kg_rag.cli.app import app

    async def build() -> None:
        async with graph_app(tmp_path):
            pass

    asyncio.run(build())
    expected: Counter[tuple[str, str]] = Counter()
    seen: Counter[tuple[str, str]] = Counter()  # every source, recorded or not
    for question, strategy, record in (("Where was Marie Curie born?", "naive", "true"),
                                       ("Where was Marie Curie born?", "local", "true"),
                                       ("Which river flows through Warsaw?", "naive", "false")):
        result = runner.invoke(app, ["query", question, "-C", str(tmp_path), "--strategy",
                                     strategy, "--json"],
                               env={"UKR_QUERY__ACCESS__RECORD": record})  # fmt: skip
        assert result.exit_code == 0, result.output
        sources = json.loads(result.output)["sources"]
        assert sources
        seen.update((s["kind"], s["id"]) for s in sources if s["kind"] in KIND_COLLECTIONS)
        if record == "true":
            expected.update((s["kind"], s["id"]) for s in sources if s["kind"] in KIND_COLLECTIONS)
    found = _counts(tmp_path / ".ukr" / "ukr.db", seen)
    assert found == dict(expected)  # the unrecorded query's sources add nothing
    assert sum(found.values()) < sum(seen.values())  # it returned sources too
    assert {kind for kind, _ in found} >= {"entity", "text_unit"}  # `local` cites entities
    status = runner.invoke(app, ["status", "-C", str(tmp_path), "--json"])
    assert status.exit_code == 0, status.output
    totals: Counter[str] = Counter()
    for (kind, _), n in expected.items():
        totals[KIND_COLLECTIONS[kind].value] += n
    (index,) = json.loads(status.output)["indexes"]
    assert index["access_counts"] == dict(sorted(totals.items()))
    table = runner.invoke(app, ["status", "-C", str(tmp_path)])
    assert f"text units {totals['text_units']}" in table.output
