"""Semantic, lexical and hydrate stages of the staged pipeline over the fake search index."""

from __future__ import annotations

import asyncio

import pytest
from tests.fakes import FakeEmbedder
from tests.fakes.search_index import FakeSearchIndex

from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import Candidate, PipelineBuilder, StageInput
from unified_kg_rag.retrieval.pipeline_stages import HydrateStage, LexicalStage, SemanticStage

pytestmark = pytest.mark.unit

TEXTS = {
    "u1": "Ada Lovelace wrote Note G for the Analytical Engine.",
    "u2": "Charles Babbage designed the Analytical Engine.",
    "u3": "The Colossus computers were used at Bletchley Park.",
}


async def _index() -> tuple[FakeSearchIndex, FakeEmbedder]:
    index, embedder = FakeSearchIndex(), FakeEmbedder()
    ids = sorted(TEXTS)
    vectors = await embedder.embed_documents([TEXTS[i] for i in ids])
    await index.bind_embedding(embedder.model_id, embedder.dimension)
    await index.upsert(Collection.TEXT_UNITS, [
        IndexRecord(id=i, text=TEXTS[i], fields={"path": f"{i}.txt"}) for i in ids], vectors)
    return index, embedder


def test_semantic_then_lexical_merge_by_id_with_both_signals() -> None:
    async def main() -> list[tuple[str, dict[str, float]]]:
        index, embedder = await _index()
        pipeline = (PipelineBuilder().add(SemanticStage(index, embedder, limit=3))
                    .add(LexicalStage(index, limit=3))
                    .scoring(WeightedScorer({"semantic": 0.5, "lexical": 0.5})).build())
        run = await pipeline.execute("Analytical Engine Babbage", k=3)
        return [(r.candidate.id, dict(r.signals)) for r in run.results]

    got = asyncio.run(main())
    ids = [i for i, _ in got]
    assert ids[0] == "u2"  # both words of the engine and Babbage
    top = dict(got)["u2"]
    assert set(top) == {"semantic", "lexical"} and top["lexical"] == 1.0
    assert 0 < top["semantic"] <= 1
    assert all(0 <= v <= 1 for _, s in got for v in s.values())
    assert len(ids) == len(set(ids))  # one candidate per id


def test_hydrate_loads_fields_and_drops_deleted_items() -> None:
    async def main() -> tuple[list[str], list[str], dict[str, object]]:
        index, _ = await _index()
        lexical = LexicalStage(index, limit=5)
        pipeline = (PipelineBuilder().add(lexical).add(HydrateStage(index))
                    .scoring(WeightedScorer({"lexical": 1.0})).build())
        before = [r.candidate.id for r in (await pipeline.execute("Analytical", k=5)).results]
        await index.delete(Collection.TEXT_UNITS, ["u1"])
        # a candidate found earlier without its text, then deleted, is dropped by hydrate
        out = await HydrateStage(index).execute(StageInput(
            "q", [Candidate("u1"), Candidate("u2")], 5))
        return before, [c.id for c in out.candidates], dict(out.candidates[0].metadata)

    before, hydrated, fields = asyncio.run(main())
    assert sorted(before) == ["u1", "u2"]
    assert hydrated == ["u2"] and fields == {"path": "u2.txt"}


def test_semantic_min_score_leaves_weak_hits_out() -> None:
    async def main() -> tuple[int, int]:
        index, embedder = await _index()
        loose = SemanticStage(index, embedder, limit=3)
        strict = SemanticStage(index, embedder, limit=3, min_score=0.999)
        all_hits = (await loose.execute(StageInput("Analytical Engine", [], 3))).candidates
        few = (await strict.execute(StageInput("Analytical Engine", [], 3))).candidates
        return len(all_hits), len(few)

    everything, few = asyncio.run(main())
    assert everything == 3 and few == 0


DAY = 86_400.0
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def test_temporal_decay_scores_candidates_by_their_timestamp() -> None:
    from unified_kg_rag.retrieval.pipeline_stages import TemporalDecayStage

    candidates = [
        Candidate("new", metadata={"timestamp": NOW}),
        Candidate("month", metadata={"timestamp": NOW - 30 * DAY}),
        Candidate("iso", metadata={"timestamp": "2023-08-16T22:13:20Z"}),  # NOW - 90 days
        Candidate("naive", metadata={"timestamp": "2023-08-16T22:13:20"}),  # read as UTC
        Candidate("ancient", metadata={"timestamp": NOW - 3650 * DAY}),
        Candidate("none", metadata={"timestamp": "not a date"}),
    ]
    stage = TemporalDecayStage(half_life_s=30 * DAY, floor=0.05, missing=0.2, now_s=NOW)
    out = asyncio.run(stage.execute(StageInput("q", candidates, 5))).candidates
    got = {c.id: c.signals["temporal"] for c in out}
    assert got["new"] == 1.0 and got["month"] == pytest.approx(0.5)
    assert got["iso"] == pytest.approx(0.125) and got["naive"] == pytest.approx(0.125)
    assert got["ancient"] == 0.05 and got["none"] == 0.2
    with pytest.raises(ValueError, match="half life"):
        TemporalDecayStage(half_life_s=0)


def test_access_scores_counts_capped_over_the_runs_highest() -> None:
    from unified_kg_rag.retrieval.pipeline_stages import AccessStage

    candidates = [Candidate("hot", metadata={"access_count": 5000}),
                  Candidate("warm", metadata={"access_count": 250}),
                  Candidate("cold"), Candidate("odd", metadata={"access_count": "7"})]
    out = asyncio.run(AccessStage(cap=500).execute(StageInput("q", candidates, 5))).candidates
    assert {c.id: c.signals["access"] for c in out} == {
        "hot": 1.0, "warm": 0.5, "cold": 0.0, "odd": 0.0}


class _Reranker:
    """Scores a text by its length (a cross-encoder's unbounded logit stands in)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def rerank(self, query: str, texts: list[str]) -> list[float]:
        self.calls.append(list(texts))
        return [float(len(t)) for t in texts]


def test_rerank_scores_the_best_top_k_with_a_text_min_max_normalised() -> None:
    from unified_kg_rag.retrieval.pipeline_stages import RerankStage

    candidates = [
        Candidate("a", text="x" * 10, signals={"semantic": 0.9}),
        Candidate("b", text="x" * 30, signals={"semantic": 0.8}),
        Candidate("c", text="x" * 20, signals={"semantic": 0.7}),
        Candidate("d", text="x" * 99, signals={"semantic": 0.1}),  # past top_k
        Candidate("e", signals={"semantic": 0.95}),  # not hydrated: not sent
    ]
    reranker = _Reranker()
    out = asyncio.run(RerankStage(reranker, top_k=3).execute(StageInput("q", candidates, 5)))
    got = {c.id: c.signals["rerank"] for c in out.candidates}
    # a 10, b 30, c 20 → (len − 10) / 20
    assert got == {"a": 0.0, "b": 1.0, "c": 0.5, "d": 0.0, "e": 0.0}
    assert reranker.calls == [["x" * 10, "x" * 30, "x" * 20]]
    one = asyncio.run(RerankStage(reranker, top_k=1).execute(
        StageInput("q", [Candidate("z", text="t")], 5)))
    assert one.candidates[0].signals["rerank"] == 1.0


def test_graph_expansion_scores_by_distance_and_adds_the_nearest_units() -> None:
    from tests.fakes import FakeGraphStore

    from unified_kg_rag.domain.models import Entity, Relationship
    from unified_kg_rag.retrieval.pipeline_stages import GraphExpansionStage, hop_distances

    # A(u1) - B(u2) - C(u3, u4) - D(u5); E(u6) unconnected
    def ent(name: str, *units: str) -> Entity:
        return Entity(id=name, name=name, text_unit_ids=units)

    def rel(a: str, b: str) -> Relationship:
        return Relationship(id=a + b, source_id=a, target_id=b, weight=1.0)

    async def main() -> tuple[dict[str, float], list[str]]:
        graph = FakeGraphStore()
        await graph.upsert_entities([ent("A", "u1"), ent("B", "u2"), ent("C", "u3", "u4"),
                                     ent("D", "u5"), ent("E", "u6")])  # fmt: skip
        await graph.upsert_relationships([rel("A", "B"), rel("B", "C"), rel("C", "D")])
        stage = GraphExpansionStage(graph, depth=2, max_expansion=2)
        out = await stage.execute(StageInput("q", [
            Candidate("u1", signals={"semantic": 0.9}), Candidate("e1", kind="entity")], 5))
        return ({c.id: c.signals.get("graph", -1.0) for c in out.candidates},
                [c.id for c in out.candidates])

    got, order = asyncio.run(main())
    # u1 is cited by the seed A (1.0); B is 1 hop (u2: 0.5); C 2 hops (u3, u4: 1/3); D too far
    assert got["u1"] == 1.0 and got["e1"] == -1.0
    assert got["u2"] == 0.5 and got["u3"] == pytest.approx(1 / 3)
    assert order == ["u1", "e1", "u2", "u3"]  # max_expansion 2: nearest first, then by id
    assert "u5" not in got and "u6" not in got
    assert hop_distances(["A"], [("A", "B"), ("B", "C"), ("X", "Y")]) == {"A": 0, "B": 1, "C": 2}


def test_propagated_expansion_weighs_distance_by_the_seed_candidates_relevance() -> None:
    from tests.fakes import FakeGraphStore

    from unified_kg_rag.domain.models import Entity, Relationship
    from unified_kg_rag.retrieval.pipeline_stages import GraphExpansionStage, propagated_strength

    # seeds A (cites candidate u1, best signal 0.8) and B (cites u2, 0.4); A - C - D - B
    def ent(name: str, *units: str) -> Entity:
        return Entity(id=name, name=name, text_unit_ids=units)

    entities = [ent("A", "u1"), ent("B", "u2"), ent("C", "u3"), ent("D", "u4", "u2")]
    edges = [("A", "C"), ("C", "D"), ("D", "B")]
    strength = propagated_strength(["A", "B"], entities, edges, {"u1": 0.8, "u2": 0.4})
    # C: max(0.8/2, 0.4/3) = 0.4; D: max(0.8/3, 0.4/2) = 0.2667
    assert strength == pytest.approx({"A": 0.8, "B": 0.4, "C": 0.4, "D": 0.8 / 3})

    async def main() -> dict[str, float]:
        graph = FakeGraphStore()
        await graph.upsert_entities(entities)
        await graph.upsert_relationships([Relationship(id=a + b, source_id=a, target_id=b,
                                                       weight=1.0) for a, b in edges])
        stage = GraphExpansionStage(graph, depth=3, propagate=True)
        out = await stage.execute(StageInput("q", [
            Candidate("u1", signals={"semantic": 0.8, "lexical": 0.2}),
            Candidate("u2", signals={"semantic": 0.4})], 5))
        return {c.id: c.signals["graph"] for c in out.candidates}

    got = asyncio.run(main())
    # D cites the candidate u2 too, so in the stage D is a seed of strength 0.4 itself
    # (> 0.8/3 through A): u4, cited by D alone, gets 0.4; u3 gets C's 0.4
    assert got == pytest.approx({"u1": 0.8, "u2": 0.4, "u3": 0.4, "u4": 0.4})
