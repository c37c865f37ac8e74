"""The pipeline's store-reading stages keep one contract on every backend (fake, SQLite,
PostgreSQL): what ``semantic``, ``lexical``, ``hydrate`` and ``graph`` add, drop and score
depends on the stored items only, never on the store (issue #22, "stage contracts")."""

from __future__ import annotations

import asyncio

import pytest

from tests.fakes import FakeEmbedder
from unified_kg_rag.domain.models import (
    Collection,
    Entity,
    IndexRecord,
    Relationship,
    SearchMode,
)
from unified_kg_rag.ports import StoreBackend
from unified_kg_rag.retrieval.pipeline import Candidate, StageInput
from unified_kg_rag.retrieval.pipeline_stages import (
    GraphExpansionStage,
    HydrateStage,
    LexicalStage,
    SemanticStage,
)

TEXTS = {"u1": "Ada Lovelace wrote the first program for the Analytical Engine.",
         "u2": "Charles Babbage designed the Analytical Engine in London.",
         "u3": "Owls hunt small mammals at night.",
         "u4": "Babbage also built the Difference Engine."}  # fmt: skip


def test_stages_add_drop_and_score_alike_on_every_backend(backend: StoreBackend) -> None:
    async def body() -> None:
        index, graph, embedder = backend.search_index("default"), backend.graph_store(
            "default"), FakeEmbedder()  # fmt: skip
        ids = sorted(TEXTS)
        await index.bind_embedding(embedder.model_id, embedder.dimension)
        await index.upsert(Collection.TEXT_UNITS, [
            IndexRecord(id=i, text=TEXTS[i], fields={"path": f"{i}.txt", "n": len(TEXTS[i])})
            for i in ids], await embedder.embed_documents([TEXTS[i] for i in ids]))  # fmt: skip
        await graph.upsert_entities([
            Entity(id="ada", name="Ada Lovelace", text_unit_ids=("u1",)),
            Entity(id="babbage", name="Charles Babbage", text_unit_ids=("u2", "u4"))])
        await graph.upsert_relationships([Relationship(id="r", source_id="ada",
                                                       target_id="babbage")])  # fmt: skip
        query = "Who designed the Analytical Engine?"
        vector = await embedder.embed_query(query)
        expected = {h.id: h.score for h in await index.search(
            Collection.TEXT_UNITS, query_vector=vector, mode=SearchMode.VECTOR, k=2)}  # fmt: skip

        out = await SemanticStage(index, embedder, limit=2).execute(StageInput(query, [], 5))
        assert {c.id: c.signals["semantic"] for c in out.candidates} == pytest.approx(
            {i: min(max(s, 0.0), 1.0) for i, s in expected.items()})
        lexical = await LexicalStage(index, limit=4).execute(StageInput(query, out.candidates, 5))
        best = max(c.signals.get("lexical", 0.0) for c in lexical.candidates)
        assert best == 1.0 and "u3" not in {c.id for c in lexical.candidates}  # no shared term

        # graph: u1 is cited by ada, whose neighbour babbage cites u2 and u4
        seeds = [Candidate("u1", signals={"semantic": 0.8})]
        grown = await GraphExpansionStage(graph, depth=1).execute(StageInput(query, seeds, 5))
        assert {c.id: c.signals["graph"] for c in grown.candidates} == {
            "u1": 1.0, "u2": 0.5, "u4": 0.5}
        propagated = await GraphExpansionStage(graph, depth=1, propagate=True).execute(
            StageInput(query, [Candidate("u1", signals={"semantic": 0.8})], 5))
        assert {c.id: c.signals["graph"] for c in propagated.candidates} == pytest.approx(
            {"u1": 0.8, "u2": 0.4, "u4": 0.4})

        # hydrate loads text and fields, keeps signals, drops what is no longer stored
        await index.delete(Collection.TEXT_UNITS, ["u4"])
        hydrated = await HydrateStage(index).execute(StageInput(query, grown.candidates, 5))
        by_id = {c.id: c for c in hydrated.candidates}
        assert set(by_id) == {"u1", "u2"}
        assert by_id["u2"].text == TEXTS["u2"] and by_id["u2"].metadata["path"] == "u2.txt"
        assert by_id["u2"].metadata["n"] == len(TEXTS["u2"]) and by_id["u2"].signals == {
            "graph": 0.5}

    asyncio.run(body())
