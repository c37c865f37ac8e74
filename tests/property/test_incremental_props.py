"""Property (issue #7): incremental runs converge to a full build of the final corpus.

For a random initial corpus of up to five tiny documents and a random sequence of steps (each
writes new or changed documents and removes some, by the folder walk or by
`IndexPipeline.delete`), project A runs `IndexPipeline.run` after every step; project B then
builds the final corpus from scratch. Real SQLite, the bundled embedding model, a real HTTP
server answering with `tests.support.word_graph.word_graph_reply` (every capitalized word an
entity, consecutive ones related), methodologies graphrag + lightrag + lazy + raptor (the
summary tree: its nodes in the search collection and its stored record).

Asserted equal (`tests.support.index_compare`): every search record (text units, entities,
relationships, reports: ids, texts, fields) and its vector (allclose), lineage rows, registry
records, graph-store entities (ids, names, types, descriptions, text_unit_ids, rank),
relationships (weights, descriptions, text_unit_ids), communities and reports, the concept
graph records, the extraction records, the claims (claim extraction on: the ``claims``
collection and the claim records), and the ranked results of a few queries in every
collection and search mode.

Communities and reports are compared as documented (`docs/guides/incremental.md`,
"Communities on incremental runs"): a delta run keeps the previous partition and clusters only
the entities in no community, so A's communities may differ from B's. For them, A must hold a
partition (each entity in at most one community per level, every member a stored entity, no
community without members, a child's members inside its parent's), every report must name a
stored community, and every other item (search records, vectors, lineage, BM25 statistics of
the other collections, rankings outside the reports collection) must equal B's exactly. Then
A is rebuilt with ``--reset``, which clusters from scratch: afterwards A equals B exactly,
communities and reports included. Extraction records are compared exactly too: every graph
build sweeps the records no listed text unit reads (`ingestion.graph.record_sweep`), so A
holds a record for exactly the texts B extracted.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.index_compare import (
    COMPARED,
    assert_same_index,
    assert_same_ranking,
    diff_keys,
    ranked,
    snapshot,
)
from tests.support.openai_server import FakeOpenAIServer
from tests.support.word_graph import NAMES, VERBS, render_doc, word_graph_reply

from unified_kg_rag.adapters.registry import EMBEDDERS
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ports import Embedder

pytestmark = pytest.mark.integration

SLOTS = tuple(f"d{i}.txt" for i in range(5))
QUERIES = ("Ada sings", "Kyoto rains near London", "Babbage Yukawa")

texts = st.one_of(
    st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VERBS)), min_size=1, max_size=3)
    .map(render_doc),
    # a few fixed texts, so documents often share their whole content
    st.sampled_from(["Ada sings, Babbage reads.", "Kyoto rains, Yukawa sings."]),
)
writes = st.tuples(st.just("write"), st.sampled_from(SLOTS), texts)
removals = st.tuples(st.sampled_from(["walk", "api"]), st.sampled_from(SLOTS), st.just(""))
steps = st.lists(st.lists(st.one_of(writes, removals), min_size=1, max_size=3),
                 min_size=1, max_size=3)
initial = st.dictionaries(st.sampled_from(SLOTS), texts, min_size=1, max_size=5)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model, loaded once for the module."""
    return EMBEDDERS.get("local")(UkrConfig().embeddings)


@pytest.fixture(scope="module")
def server() -> Any:
    """One word-graph model server for every example (each project has its own cache)."""
    with FakeOpenAIServer(reply=word_graph_reply) as running:
        yield running


def config(server: FakeOpenAIServer) -> UkrConfig:
    """Graph, lazy and raptor methodologies against ``server``; deletions never ask."""
    return UkrConfig(
        llm={"kind": "openai", "retry_initial_s": 0.01, "retry_max_s": 0.05,
             "openai": {"base_url": server.base_url, "api_key": "k"}},
        graph={"communities": {"min_community_size": 2},
               "raptor": {"target_children": 2, "min_nodes_to_cluster": 1, "min_leaves": 2},
               "claims": {"enabled": True}},
        indexing={"methodologies": ["graphrag", "lightrag", "lazy", "raptor"],
                  "max_delete_share": 1.0},
    )  # type: ignore[arg-type]


def pipeline(app: App, embedder: Embedder) -> IndexPipeline:
    """The pipeline a `ukr index` of ``app`` runs, with the shared embedder."""
    return IndexPipeline(
        app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
        keyphrase_extractor=app.keyphrase_extractor,
    )


async def incremental_then_full(
    root: Path, server: FakeOpenAIServer, embedder: Embedder,
    start: dict[str, str], sequence: list[list[tuple[str, str, str]]],
) -> tuple[Any, ...]:
    """Run the steps in project A, a full build in project B; return both indexes' state."""
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in start.items():
        (corpus / name).write_text(text, encoding="utf-8")
    async with build_app(config(server), root / "a") as app:
        report = await pipeline(app, embedder).run([corpus], confirm_deletions=True)
        assert report.exit_code == 0, report
        for step in sequence:
            explicit: list[str] = []
            for kind, name, text in step:
                path = corpus / name
                if kind == "write":
                    path.write_text(text, encoding="utf-8")
                    if name in explicit:
                        explicit.remove(name)
                elif path.exists():
                    path.unlink()
                    if kind == "api":
                        explicit.append(name)
            known = {r.path for r in await app.index().registry.list_records()}
            targets = [str(corpus / n) for n in explicit if n in known]
            if targets:
                deleted = await pipeline(app, embedder).delete(targets, confirm=True)
                assert deleted.exit_code == 0, deleted
                assert sorted(d.path for d in deleted.deleted) == sorted(
                    n for n in explicit if n in known)
            report = await pipeline(app, embedder).run([corpus], confirm_deletions=True)
            assert report.exit_code == 0, report
        incremental = snapshot(app.backend.location)
        incremental_hits = await ranked(app.index(), embedder, QUERIES)
        report = await pipeline(app, embedder).run([corpus], confirm_deletions=True, reset=True)
        assert report.exit_code == 0, report
        reset = snapshot(app.backend.location)
        reset_hits = await ranked(app.index(), embedder, QUERIES)
    async with build_app(config(server), root / "b") as fresh:
        report = await pipeline(fresh, embedder).run([corpus], confirm_deletions=True)
        assert report.exit_code == 0, report
        full = snapshot(fresh.backend.location)
        full_hits = await ranked(fresh.index(), embedder, QUERIES)
    files = sorted(p.name for p in corpus.iterdir())
    return incremental, full, incremental_hits, full_hits, files, reset, reset_hits


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(start=initial, sequence=steps)
def test_incremental_runs_equal_a_full_build_of_the_final_corpus(
    server: FakeOpenAIServer, embedder: Embedder,
    start: dict[str, str], sequence: list[list[tuple[str, str, str]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        incremental, full, incremental_hits, full_hits, files, reset, reset_hits = asyncio.run(
            incremental_then_full(Path(tmp), server, embedder, start, sequence)
        )
    assert_same_outside_communities(incremental, full)
    assert_valid_partition(incremental)
    assert_same_ranking(
        {k: v for k, v in incremental_hits.items() if k[0] != "reports"},
        {k: v for k, v in full_hits.items() if k[0] != "reports"},
    )
    # --reset clusters from scratch: the same index as a full build, communities included
    assert_same_index(reset, full)
    assert_same_ranking(reset_hits, full_hits)
    # the comparison is not vacuous: the final corpus's facts are there
    assert sorted(p for _, p, _ in full["docs"].values()) == files
    assert bool(full["entities"]) == bool(files)
    # claims (and their records) are there whenever entities are
    claims = [i for (c, i) in full["search"] if c == "claims"]
    assert bool(claims) == bool(full["entities"]) == bool(full["claim_records"])
    assert len(full["vectors"]) >= len(files)
    tree = json.loads(full["raptor"]["tree"])
    assert bool(tree["nodes"]) == (len({t for _, _, t in full["docs"].values() if t}) >= 2)


def _outside_reports(snap: dict[str, Any]) -> dict[str, Any]:
    """``snap`` without communities, reports and what derives from them."""
    return {
        **snap,
        "search": {k: v for k, v in snap["search"].items() if k[0] != "reports"},
        "vectors": {k: v for k, v in snap["vectors"].items() if k[0] != "reports"},
        "bm25": {row for row in snap["bm25"] if row[0] != "reports"},
        "lineage": {row for row in snap["lineage"] if row[0] not in ("report", "community")},
    }


def assert_same_outside_communities(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Assert every item but communities and reports equal (vectors within ``atol=1e-5``)."""
    a, b = _outside_reports(got), _outside_reports(want)
    for key in COMPARED:
        if key not in ("communities", "reports"):
            assert a[key] == b[key], diff_keys(a, b, key)
    assert a["vectors"].keys() == b["vectors"].keys()
    for k, v in b["vectors"].items():
        assert np.allclose(a["vectors"][k], v, atol=1e-5), k


def assert_valid_partition(snap: dict[str, Any]) -> None:
    """Assert the communities of ``snap`` are a hierarchy over stored entities, reports theirs."""
    communities = snap["communities"]
    seen: dict[int, set[str]] = {}
    for cid, c in communities.items():
        members = set(c["member_ids"])
        assert members, f"community {cid} has no member"
        assert members <= set(snap["entities"]), f"community {cid} names a removed entity"
        level = seen.setdefault(c["level"], set())
        assert not members & level, f"an entity is in two communities of level {c['level']}"
        level |= members
        if c["parent_id"] is not None:
            parent = communities[c["parent_id"]]
            assert parent["level"] == c["level"] - 1 and members <= set(parent["member_ids"])
            assert cid in parent["children_ids"]
    assert set(snap["reports"]) <= set(communities)
    reports = {i for (col, i) in snap["search"] if col == "reports"}
    assert reports <= set(communities)
