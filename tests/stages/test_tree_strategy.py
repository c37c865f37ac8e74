"""Strategy `tree` over a summary tree written into real stores (SQLite files, PostgreSQL).

Six one-passage documents are indexed for `lazy` (no model call) with the real bundled
embedder; the tree is written by `tests.support.summary_tree` as the `raptor` stage stores
it: two level-1 summaries (Sicily: etna + catania; baking: bread + starter) and a level-2
root over them and the promoted leaves noto and tea.
"""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path
from typing import Any

import pytest

from tests.support.summary_tree import summary_node, write_entities, write_summary_tree
from unified_kg_rag.adapters.registry import EMBEDDERS
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Entity
from unified_kg_rag.domain.tree.nodes import SummaryNode
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ports import Embedder, IndexStores
from unified_kg_rag.retrieval.chain import RAGChain, RetrievalOutput
from unified_kg_rag.retrieval.strategies.base import QueryContext, StrategyResult
from unified_kg_rag.retrieval.strategies.tree import TreeStrategy
from unified_kg_rag.util.errors import MethodologyNotIndexedError

pytestmark = pytest.mark.integration

DOCS = {
    "etna.txt": "Mount Etna is an active volcano in Sicily. Lava from Mount Etna reached the "
    "city walls in 1669.",
    "catania.txt": "Catania is a port on the east coast of Sicily. Its cathedral was rebuilt "
    "in stone after the great lava flow.",
    "noto.txt": "Noto is a town famous for Baroque architecture, rebuilt after the earthquake "
    "of 1693.",
    "bread.txt": "Sourdough bread needs a starter culture of flour and water.",
    "starter.txt": "A sourdough starter contains wild yeast and lactic acid bacteria.",
    "tea.txt": "Green tea leaves are steamed soon after picking to stop oxidation.",
}
SICILY = ("Volcanic eruptions of Mount Etna sent lava into Catania in 1669, and the city "
          "rebuilt its cathedral afterwards.")
BAKING = "Sourdough baking relies on a starter of wild yeast kept alive with flour and water."
ROOT = "The collection covers Sicilian towns and volcanoes, sourdough baking and tea."


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model, loaded once for the module."""
    return EMBEDDERS.get("local")(UkrConfig().embeddings)


def _config(**tree: Any) -> UkrConfig:
    return UkrConfig(
        indexing={"methodologies": ["lazy"]},  # type: ignore[arg-type]
        query={"llm_router": False, "tree": tree},  # type: ignore[arg-type]
    )


async def _index(app: App, embedder: Embedder, folder: Path) -> dict[str, str]:
    """Index the folder of `DOCS`; return file name -> its one text-unit id."""
    await IndexPipeline(app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
                        parsers=app.parsers, config=app.config).run([folder])  # fmt: skip
    records = await app.index().registry.list_records()
    return {r.path: r.text_unit_ids[0] for r in records}


def _tree(units: dict[str, str]) -> tuple[SummaryNode, SummaryNode, SummaryNode]:
    sicily = summary_node(1, [units["etna.txt"], units["catania.txt"]], SICILY)
    baking = summary_node(1, [units["bread.txt"], units["starter.txt"]], BAKING)
    root = summary_node(2, [sicily, baking, units["noto.txt"], units["tea.txt"]], ROOT)
    return sicily, baking, root


def _chain(app: App, embedder: Embedder) -> RAGChain:
    return RAGChain(app.index(), embedder=embedder, chat_model=None,
                    budget_tokenizer=app.budget_tokenizer, config=app.config.query)  # fmt: skip


def _run(tmp_path: Path, embedder: Embedder, work: Any, config: UkrConfig | None = None,
         *, tree: bool = True, raptor: bool = True) -> Any:  # fmt: skip
    """Index `DOCS`, write the tree (``tree`` False: record `raptor` only; ``raptor``
    False: neither), then return ``await work(app, units, nodes)``."""

    folder = tmp_path / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")

    async def main() -> Any:
        async with build_app(config or _config(), tmp_path / "p") as app:
            units = await _index(app, embedder, folder)
            nodes = _tree(units)
            if raptor:
                await write_summary_tree(app.index(), embedder, nodes, store_tree=tree)
            return await work(app, units, nodes)

    return asyncio.run(main())


def _kinds(out: RetrievalOutput) -> list[str]:
    return [s.kind for s in out.sources]


def test_tree_finds_the_summary_and_expands_it_to_its_passages(
    tmp_path: Path, embedder: Embedder
) -> None:
    question = "Which city rebuilt its cathedral after lava from Mount Etna?"

    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        return await _chain(app, embedder).retrieve(question, strategy="tree"), units, nodes

    out, units, (sicily, baking, root) = _run(tmp_path, embedder, work, _config(text_top_k=1))
    meta = out.metadata
    assert out.strategy == "tree"
    assert meta["summary_tree"] == "present" and meta["summary_levels"] == 2
    assert meta["graph_signal"] == "unavailable"
    assert meta["buckets"] == {"tree_text_units": 1, "tree_summaries": 3}
    # RRF (k 10, weights 1): the best passage and the best summary 1/11, then 1/12, 1/13;
    # summaries come first in the context, each followed among the passages by its own
    # passages (the root's best two, etna and catania, are already there)
    just_below = math.nextafter(1 / 11, -math.inf)
    assert [(s.id, s.score, s.metadata.get("expanded_from")) for s in out.sources] == [
        (sicily.id, 1 / 11, None), (root.id, 1 / 12, None), (baking.id, 1 / 13, None),
        (units["etna.txt"], 1 / 11, None),
        (units["catania.txt"], just_below, sicily.id),
        (units["bread.txt"], math.nextafter(1 / 13, -math.inf), baking.id),
        (units["starter.txt"], math.nextafter(1 / 13, -math.inf), baking.id),
    ]  # fmt: skip
    assert meta["expanded_passages"] == 3
    first = out.sources[0]
    assert first.kind == "summary" and first.title == "Summary (level 1, 2 passages)"
    assert first.text == SICILY
    assert first.text_unit_ids == tuple(sorted([units["etna.txt"], units["catania.txt"]]))
    docs = {s.id: s.document_id for s in out.sources if s.kind == "text_unit"}
    assert set(first.document_ids) == {docs[units["etna.txt"]], docs[units["catania.txt"]]}
    assert first.metadata == {"level": 1, "n_leaves": 2, "children": 2, "found_by": "search"}
    assert out.sources[1].title == "Summary (level 2, 6 passages)"
    assert len(out.sources[1].document_ids) == 6


def test_at_most_max_nodes_per_level_summaries_of_one_level(
    tmp_path: Path, embedder: Embedder
) -> None:
    question = "Which city rebuilt its cathedral after lava from Mount Etna?"

    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        return await _chain(app, embedder).retrieve(question, strategy="tree"), units, nodes

    config = _config(text_top_k=1, max_nodes_per_level=1)
    out, units, (sicily, _baking, root) = _run(tmp_path, embedder, work, config)
    # baking (level 1, third) is passed over: sicily holds level 1's one place
    assert [s.id for s in out.sources] == [
        sicily.id, root.id, units["etna.txt"], units["catania.txt"]]
    assert out.metadata["summaries_level_capped"] == 1
    assert out.metadata["expanded_passages"] == 1


def _entities(units: dict[str, str]) -> list[Entity]:
    return [
        Entity(id="e-catania", name="Catania", type="CITY",
               description="A port city on the east coast of Sicily.",
               text_unit_ids=(units["catania.txt"],)),
        Entity(id="e-etna", name="Mount Etna", type="VOLCANO",
               description="An active volcano.", text_unit_ids=(units["etna.txt"],)),
        Entity(id="e-yeast", name="Wild yeast", type="ORGANISM",
               description="Microbes of a sourdough starter.",
               text_unit_ids=(units["bread.txt"], units["starter.txt"])),
    ]  # fmt: skip


def _retrieve(app: App, embedder: Embedder, question: str, **held: Any) -> Any:
    stores: IndexStores = app.index()
    ctx = QueryContext(question=question, stores=stores, embedder=embedder, chat_model=None,
                       config=app.config.query, **held)  # fmt: skip
    return TreeStrategy().retrieve(ctx), ctx


def test_graph_buckets_rank_summaries_by_covered_seed_weight_over_sqrt_leaves(
    tmp_path: Path, embedder: Embedder
) -> None:
    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        await write_entities(app.index(), embedder, _entities(units), "lightrag")
        with_graph, ctx = _retrieve(app, embedder, "Tell me about Catania",
                                    held=("lazy", "raptor", "lightrag"))
        without, ctx_without = _retrieve(app, embedder, "Tell me about Catania",
                                         held=("lazy", "raptor"))
        chained = await _chain(app, embedder).search("Tell me about Catania", strategy="tree")
        return (await with_graph, ctx.metadata, await without, ctx_without.metadata, chained,
                units, nodes)

    (result, meta, plain, plain_meta, chained, units, (sicily, _b, root)) = _run(
        tmp_path, embedder, work, _config(graph_seed_entities=1))
    assert isinstance(result, StrategyResult)
    buckets = {b.name: b for b in result.buckets}
    assert list(buckets) == ["tree_text_units", "tree_summaries", "tree_graph_summaries",
                             "tree_graph_text_units"]
    assert meta["graph_signal"] == "used"
    # the one seed (Catania, rank 1) weighs 1 / (rrf_k 10 + 1); sicily covers it with 2
    # leaves, the root with 6; its one text unit takes the seed's weight
    w = 1 / 11
    assert [(c.id, c.score, c.metadata["found_by"])
            for c in buckets["tree_graph_summaries"].candidates] == [
        (sicily.id, w / math.sqrt(2), "graph"), (root.id, w / math.sqrt(6), "graph")]
    assert [(c.id, c.score) for c in buckets["tree_graph_text_units"].candidates] == [
        (units["catania.txt"], w)]
    assert [b.name for b in plain.buckets] == ["tree_text_units", "tree_summaries"]
    assert plain_meta["graph_signal"] == "unavailable"
    assert chained.metadata["graph_signal"] == "used"  # the index records lightrag
    assert chained.metadata["buckets"]["tree_graph_text_units"] == 1


def test_graph_signal_off(tmp_path: Path, embedder: Embedder) -> None:
    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        await write_entities(app.index(), embedder, _entities(units), "lightrag")
        return await _chain(app, embedder).search("Catania", strategy="tree")

    out = _run(tmp_path, embedder, work, _config(graph_signal="off"))
    assert out.metadata["graph_signal"] == "off"
    assert set(out.metadata["buckets"]) == {"tree_text_units", "tree_summaries"}


def test_a_summary_passes_a_filter_only_when_its_whole_lineage_does(
    tmp_path: Path, embedder: Embedder
) -> None:
    question = "Which city rebuilt its cathedral after lava from Mount Etna?"

    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        chain = _chain(app, embedder)
        both = await chain.retrieve(question, strategy="tree",
                                    filters={"path": ["etna.txt", "catania.txt"]})
        one = await chain.retrieve(question, strategy="tree", filters={"path": "etna.txt"})
        return both, one, units, nodes

    both, one, units, (sicily, _b, _r) = _run(tmp_path, embedder, work)
    assert [s.id for s in both.sources if s.kind == "summary"] == [sicily.id]
    assert both.metadata["summaries_filtered_out"] == 2  # baking and the root
    assert {s.path for s in both.sources if s.kind == "text_unit"} == {"etna.txt",
                                                                       "catania.txt"}
    # sicily restates catania, which the filter excludes: no summary at all
    assert [s.kind for s in one.sources] == ["text_unit"]
    assert one.sources[0].id == units["etna.txt"]
    assert one.metadata["summaries_filtered_out"] == 3


def test_no_stored_tree_answers_from_text_units_and_warns(
    tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        return await _chain(app, embedder).retrieve("Mount Etna", strategy="tree")

    with caplog.at_level(logging.WARNING):
        out = _run(tmp_path, embedder, work, tree=False)
    assert out.metadata["summary_tree"] == "missing"
    assert out.metadata["buckets"] == {"tree_text_units": 6}
    assert {s.kind for s in out.sources} == {"text_unit"} and len(out.sources) == 6
    assert any("holds no summary tree" in r.getMessage() for r in caplog.records)


def test_tree_is_refused_on_an_index_without_raptor(tmp_path: Path, embedder: Embedder) -> None:
    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        with pytest.raises(MethodologyNotIndexedError) as refused:
            await _chain(app, embedder).retrieve("Mount Etna", strategy="tree")
        return refused.value

    refused = _run(tmp_path, embedder, work, raptor=False)
    assert "'raptor'" in str(refused) and refused.held == ("lazy",)


@pytest.mark.postgres
def test_tree_on_postgres(tmp_path: Path, embedder: Embedder, postgres_url: str) -> None:
    from tests.support.postgres import fresh_catalog

    question = "Which city rebuilt its cathedral after lava from Mount Etna?"

    async def work(app: App, units: dict[str, str], nodes: tuple[SummaryNode, ...]) -> Any:
        chain = _chain(app, embedder)
        plain = await chain.retrieve(question, strategy="tree")
        filtered = await chain.retrieve(question, strategy="tree",
                                        filters={"path": ["etna.txt", "catania.txt"]})
        return plain, filtered, units, nodes

    config = _config(text_top_k=1).model_copy(update={"stores": UkrConfig.model_validate({
        "stores": {"kind": "postgres", "postgres": {
            "url": postgres_url, "schema_name": fresh_catalog()}}}).stores})  # fmt: skip
    plain, filtered, units, (sicily, baking, root) = _run(tmp_path, embedder, work, config)
    assert [(s.id, s.metadata.get("expanded_from")) for s in plain.sources] == [
        (sicily.id, None), (root.id, None), (baking.id, None), (units["etna.txt"], None),
        (units["catania.txt"], sicily.id), (units["bread.txt"], baking.id),
        (units["starter.txt"], baking.id)]  # fmt: skip
    assert [s.id for s in filtered.sources if s.kind == "summary"] == [sicily.id]
    assert filtered.metadata["summaries_filtered_out"] == 2
