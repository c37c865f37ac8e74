"""PageRank stored at index time, and the ``pagerank`` and ``ppr`` pipeline stages.

Real SQLite indexes (one PostgreSQL test) built by the real index pipeline: the LLM entity
graph through the real OpenAI-compatible test server (replies of
``tests/stages/test_graph_build.py``), the `lazy` concept graph without a model. Stored values
are checked against networkx over the graph the stores hold.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import DOCS, reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    LAZY_NAMESPACE,
    PAGERANK_NAMESPACES,
    PageRankMeta,
    decode_concept_graph,
)
from unified_kg_rag.ingestion.graph.write import MANIFEST_KEY
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.pipeline import Candidate, StageInput
from unified_kg_rag.retrieval.pipeline_centrality import PageRankStage

pytestmark = pytest.mark.integration

EMBEDDER = FakeEmbedder()


def _config(server: FakeOpenAIServer | None, **extra: Any) -> UkrConfig:
    llm: dict[str, Any] = {"kind": "none"}
    if server is not None:
        llm = {"kind": "openai", "retry_initial_s": 0.01, "retry_max_s": 0.05,
               "openai": {"base_url": server.base_url, "api_key": "k"}}
    return UkrConfig(llm=llm, indexing={"methodologies": ["hipporag", "lazy"]},
                     **extra)  # type: ignore[arg-type]  # fmt: skip


def _pipeline(app: App) -> IndexPipeline:
    return IndexPipeline(
        app.index(), embedder=EMBEDDER, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
        keyphrase_extractor=app.keyphrase_extractor,
    )  # fmt: skip


async def _index(app: App, paths: Sequence[Path]) -> IndexReport:
    report = await _pipeline(app).run(paths)
    assert report.failed == []
    return report


async def _stored(stores: IndexStores, graph: str) -> tuple[PageRankMeta | None, dict[str, float]]:
    namespace = PAGERANK_NAMESPACES[graph]  # type: ignore[index]
    keys = await stores.records.keys(namespace)
    raw = await stores.records.get_many(namespace, keys)
    meta = raw.pop("meta", None)
    return (PageRankMeta.model_validate_json(meta) if meta else None,
            {k: float(v) for k, v in raw.items()})  # fmt: skip


async def _expected_entities(stores: IndexStores) -> dict[str, float]:
    """networkx's PageRank over the stored entity graph, plus each unit's largest value."""
    manifest = json.loads(await stores.records.get(INDEX_NAMESPACE, MANIFEST_KEY) or "{}")
    entities = await stores.graph.get_entities(manifest["entities"])
    graph = nx.Graph()
    graph.add_nodes_from(e.id for e in entities)
    for r in await stores.graph.get_relationships(manifest["relationships"]):
        old = graph.get_edge_data(r.source_id, r.target_id, {"weight": 0.0})["weight"]
        graph.add_edge(r.source_id, r.target_id, weight=old + r.weight)
    values = nx.pagerank(graph, alpha=0.85, weight="weight", tol=1e-13, max_iter=1000)
    out = {f"n:{n}": v for n, v in values.items()}
    for e in entities:
        for unit in e.text_unit_ids:
            out[f"u:{unit}"] = max(out.get(f"u:{unit}", 0.0), values[e.id])
    return out


async def _expected_concepts(stores: IndexStores) -> dict[str, float]:
    """networkx's PageRank over the stored concept co-occurrence graph."""
    concepts = decode_concept_graph(await stores.records.get(LAZY_NAMESPACE, "concept_graph") or "")
    graph = nx.Graph()
    graph.add_nodes_from(concepts.concept_ids)
    for i, j, w in zip(concepts.co_source, concepts.co_target, concepts.co_weight, strict=True):
        graph.add_edge(concepts.concept_ids[i], concepts.concept_ids[j], weight=float(w))
    values = nx.pagerank(graph, alpha=0.85, weight="weight", tol=1e-13, max_iter=1000)
    out = {f"n:{n}": v for n, v in values.items()}
    for unit, concept in zip(concepts.unit_index, concepts.concept_index, strict=True):
        key, value = f"u:{concepts.unit_ids[unit]}", values[concepts.concept_ids[concept]]
        out[key] = max(out.get(key, 0.0), value)
    return out


async def _signals(stores: IndexStores, candidates: list[Candidate], **kw: Any) -> list[float]:
    stage = PageRankStage(stores.records, stores.name, **kw)
    out = await stage.execute(StageInput("q", candidates, 5))
    assert [c.id for c in out.candidates] == [c.id for c in candidates]  # adds/drops none
    return [c.signals["pagerank"] for c in out.candidates]


def test_pagerank_is_stored_after_a_build_and_follows_incremental_runs_and_deletions(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            stores = app.index()
            out: dict[str, Any] = {"first": await _index(app, [corpus])}
            out["meta"], out["values"] = await _stored(stores, "entities")
            out["expected"] = await _expected_entities(stores)
            out["cmeta"], out["cvalues"] = await _stored(stores, "concepts")
            out["cexpected"] = await _expected_concepts(stores)
            babbage = (await stores.graph.get_entities([entity_id("Charles Babbage")]))[0]
            units = [Candidate(u) for u in babbage.text_unit_ids]
            out["signals"] = await _signals(
                stores, [*units, Candidate(babbage.id, "entity"), Candidate("nowhere")],
                default=0.25)  # fmt: skip
            out["babbage_units"] = units
            raw_meta = await stores.records.get(PAGERANK_NAMESPACES["entities"], "meta")
            await _index(app, [corpus])  # unchanged: nothing recomputed
            out["same_meta"] = raw_meta == await stores.records.get(
                PAGERANK_NAMESPACES["entities"], "meta")
            # a new document restating DESIGNED: heavier edge, new unit, new values
            (corpus / "more.txt").write_text("Charles Babbage designed it again in 1837.\n",
                                             encoding="utf-8")  # fmt: skip
            out["second"] = await _index(app, [corpus])
            out["meta2"], out["values2"] = await _stored(stores, "entities")
            out["expected2"] = await _expected_entities(stores)
            out["cmeta2"], _ = await _stored(stores, "concepts")
            kyoto = next(r for r in await stores.registry.list_records()
                         if r.path == "kyoto.txt")  # fmt: skip
            await _pipeline(app).delete([kyoto.document_id])
            out["meta3"], out["values3"] = await _stored(stores, "entities")
            out["expected3"] = await _expected_entities(stores)
            out["kyoto_units"] = kyoto.text_unit_ids
            out["cvalues3"] = (await _stored(stores, "concepts"))[1]
            out["cexpected3"] = await _expected_concepts(stores)
            return out

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    meta: PageRankMeta = out["meta"]
    assert out["first"].graph.stages["pagerank"].items == 7 == meta.nodes  # 7 entities
    assert meta.edges == 6 and meta.units == len(DOCS)  # six pairs of entities related
    assert out["values"] == pytest.approx(out["expected"], abs=1e-9)
    assert meta.max_value == max(v for k, v in out["values"].items() if k.startswith("n:"))
    assert out["cvalues"] == pytest.approx(out["cexpected"], abs=1e-9)
    concept_units = [k for k in out["cvalues"] if k.startswith("u:")]
    assert out["cmeta"].nodes + out["cmeta"].units == len(out["cexpected"])
    assert out["cmeta"].units == len(concept_units)
    assert 0 < len(concept_units) <= len(DOCS)  # a unit naming no kept concept has no value
    # the stage: a unit's value (its best entity) over the graph's max; the entity's own
    babbage = out["values"][f"n:{entity_id('Charles Babbage')}"] / meta.max_value
    unit_values = [out["values"][f"u:{c.id}"] / meta.max_value for c in out["babbage_units"]]
    assert out["signals"] == pytest.approx([*unit_values, babbage, 0.25])
    assert all(0.0 < s <= 1.0 for s in out["signals"][:-1]) and max(unit_values) >= babbage
    assert out["same_meta"]
    # the incremental run changed the graph: new values, the new unit valued
    meta2: PageRankMeta = out["meta2"]
    assert meta2.digest != meta.digest and meta2.units == len(DOCS) + 1
    assert out["values2"] == pytest.approx(out["expected2"], abs=1e-9)
    assert out["values2"] != out["values"] and out["cmeta2"].source != out["cmeta"].source
    # the deletion removed Kyoto's entities and unit from the stored values
    assert out["meta3"].nodes == 4 and out["values3"] == pytest.approx(out["expected3"], abs=1e-9)
    gone = {f"n:{entity_id(n)}" for n in ("Kyoto", "Kyoto University", "Hideki Yukawa")}
    gone |= {f"u:{u}" for u in out["kyoto_units"]}
    assert not gone & set(out["values3"]) and not gone & set(out["cvalues3"])
    assert out["cvalues3"] == pytest.approx(out["cexpected3"], abs=1e-9)


def test_an_index_without_stored_pagerank_gets_the_default_then_one_index_run_stores_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            stores = app.index()
            await _index(app, [corpus])
            for namespace in PAGERANK_NAMESPACES.values():  # as an index built before
                await stores.records.delete(namespace, await stores.records.keys(namespace))
            units = [Candidate(u) for u in await stores.search.ids(_text_units())]
            warned: set[str] = set()
            with caplog.at_level(logging.WARNING, "unified_kg_rag.retrieval"):
                before = [await _signals(stores, units, warned=warned, default=0.1)
                          for _ in range(2)]  # fmt: skip
            calls = len(server.requests_to("/chat/completions"))
            report = await _index(app, [corpus])
            after = await _signals(stores, units, warned=warned)
            return {"before": before, "after": after, "report": report,
                    "new_calls": len(server.requests_to("/chat/completions")) - calls,
                    "meta": await _stored(stores, "entities")}  # fmt: skip

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    assert out["before"] == [[0.1] * len(DOCS)] * 2
    warnings = [r.getMessage() for r in caplog.records if "PageRank" in r.getMessage()]
    assert len(warnings) == 1 and "re-run `ukr index`" in warnings[0]
    assert out["new_calls"] == 0 and out["report"].graph.skipped_reason  # no graph rebuild
    assert out["meta"][0] is not None and out["meta"][0].nodes == 7
    assert max(out["after"]) == 1.0 and min(out["after"]) > 0.0


def _text_units() -> Any:
    from unified_kg_rag.domain.models import Collection

    return Collection.TEXT_UNITS


@pytest.mark.postgres
def test_stored_pagerank_round_trips_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    from tests.support.postgres import fresh_catalog

    corpus = write_docs(tmp_path / "corpus")
    stores_cfg = {"kind": "postgres", "postgres": {"url": postgres_url,
                                                   "schema_name": fresh_catalog()}}

    async def main() -> dict[str, Any]:
        async with build_app(_config(None, stores=stores_cfg), tmp_path / "p") as app:
            stores = app.index()
            await _index(app, [corpus])
            meta, values = await _stored(stores, "concepts")
            units = [k[2:] for k in values if k.startswith("u:")]
            signals = await _signals(stores, [Candidate(u) for u in units])
            return {"meta": meta, "values": values, "expected": await _expected_concepts(stores),
                    "signals": signals, "units": units}

    out = asyncio.run(main())
    meta: PageRankMeta = out["meta"]
    assert meta is not None and meta.nodes + meta.units == len(out["expected"]) > 0
    assert out["values"] == pytest.approx(out["expected"], abs=1e-9)
    assert out["signals"] == [out["values"][f"u:{u}"] / meta.max_value for u in out["units"]]
