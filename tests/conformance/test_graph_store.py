"""Conformance suite of `GraphStore`: every backend must pass it unchanged."""

from __future__ import annotations

import asyncio

import pytest

from unified_kg_rag.domain.models import Community, CommunityReport, Entity, Relationship
from unified_kg_rag.ports import GraphStore, StoreBackend


def ent(id_: str, *units: str, **kw: object) -> Entity:
    return Entity.model_validate({"id": id_, "name": id_.upper(), "text_unit_ids": units, **kw})


def rel(src: str, dst: str, weight: float = 1.0, *units: str) -> Relationship:
    return Relationship(
        id=f"{src}-{dst}", source_id=src, target_id=dst, weight=weight, text_unit_ids=units
    )


async def _star(graph: GraphStore) -> None:
    """a -(5)-> c, a -(1)-> b, x -(2)-> a (incoming), c -> d, b -> e, d -> f, a -> ghost."""
    await graph.upsert_entities([ent(i) for i in "abcdefx"])
    await graph.upsert_relationships(
        [rel("a", "c", 5), rel("a", "b", 1), rel("x", "a", 2), rel("c", "d", 1),
         rel("b", "e", 3), rel("d", "f", 1), rel("a", "ghost", 9)]
    )


def test_entity_and_relationship_round_trip(backend: StoreBackend) -> None:
    async def body() -> None:
        graph = backend.graph_store("default")
        e1 = ent("e1", "u1", "u2", type="PERSON", description="d", rank=3, confidence=7.5)
        e2 = ent("e2")
        await graph.upsert_entities([e1, e2])
        r1 = rel("e1", "e2", 2.5, "u1")
        await graph.upsert_relationships([r1, rel("e2", "nowhere")])
        assert await graph.get_entities(["e2", "zz", "e1"]) == [e2, e1]
        assert await graph.get_relationships(["e1-e2"]) == [r1]
        e1b = ent("e1", "u3", description="merged")
        await graph.upsert_entities([e1b])
        assert await graph.get_entities(["e1"]) == [e1b]
        assert await graph.counts() == {
            "entities": 2, "relationships": 2, "communities": 0, "reports": 0
        }
        assert await graph.citing(["u1"]) == ([], ["e1-e2"])  # e1 no longer cites u1
        assert await graph.citing(["u3", "u1"]) == (["e1"], ["e1-e2"])

    asyncio.run(body())


def test_delete_entities_cascades_to_relationships(backend: StoreBackend) -> None:
    async def body() -> None:
        graph = backend.graph_store("default")
        await graph.upsert_entities([ent("a", "u1"), ent("b", "u1"), ent("c")])
        await graph.upsert_relationships(
            [rel("a", "b", 1, "u1"), rel("c", "a", 1, "u2"), rel("b", "c", 1, "u2")]
        )
        assert await graph.delete_entities(["a", "missing"]) == 1
        assert await graph.get_entities(["a", "b"]) == [ent("b", "u1")]
        assert await graph.get_relationships(["a-b", "c-a", "b-c"]) == [rel("b", "c", 1, "u2")]
        assert await graph.citing(["u1", "u2"]) == (["b"], ["b-c"])
        assert await graph.delete_relationships(["b-c", "b-c", "zz"]) == 1
        assert (await graph.counts())["relationships"] == 0

    asyncio.run(body())


@pytest.mark.parametrize(
    ("hops", "max_entities", "expected"),
    [
        (0, 10, ["a"]),
        (1, 10, ["a", "c", "x", "b"]),  # by edge weight 5, 2, 1
        (2, 10, ["a", "c", "x", "b", "e", "d"]),  # e via weight 3 before d via 1
        (3, 10, ["a", "c", "x", "b", "e", "d", "f"]),
        (3, 3, ["a", "c", "x"]),
        (2, 5, ["a", "c", "x", "b", "e"]),
    ],
)
def test_neighbourhood_order_budget_and_hops(
    backend: StoreBackend, hops: int, max_entities: int, expected: list[str]
) -> None:
    async def body() -> None:
        graph = backend.graph_store("default")
        await _star(graph)
        sub = await graph.neighbourhood(["a"], hops=hops, max_entities=max_entities)
        assert [e.id for e in sub.entities] == expected
        chosen = set(expected)
        all_edges = await graph.edges_within(list("abcdefx"))
        within = sorted(r.id for r in all_edges if {r.source_id, r.target_id} <= chosen)
        assert sorted(r.id for r in sub.relationships) == within

    asyncio.run(body())


def test_neighbourhood_seeds(backend: StoreBackend) -> None:
    async def body() -> None:
        graph = backend.graph_store("default")
        await _star(graph)
        sub = await graph.neighbourhood(["f", "ghost", "b", "f"], hops=1, max_entities=10)
        assert [e.id for e in sub.entities] == ["f", "b", "e", "a", "d"]
        assert (await graph.neighbourhood(["b", "f"], hops=1, max_entities=1)).entities == (
            ent("b"),
        )
        assert (await graph.neighbourhood(["ghost"], hops=2, max_entities=5)).entities == ()
        with pytest.raises(ValueError):
            await graph.neighbourhood(["a"], hops=-1, max_entities=5)

    asyncio.run(body())


def test_edges_within(backend: StoreBackend) -> None:
    async def body() -> None:
        graph = backend.graph_store("default")
        await _star(graph)
        await graph.upsert_relationships([rel("c", "c", 1)])
        edges = await graph.edges_within(["a", "c", "x", "d"])
        assert [r.id for r in edges] == sorted(["a-c", "x-a", "c-d", "c-c"])
        assert await graph.edges_within(["a"]) == []
        assert await graph.edges_within([]) == []

    asyncio.run(body())


def test_communities_and_reports(backend: StoreBackend) -> None:
    async def body() -> None:
        graph = backend.graph_store("default")
        c0a = Community(id="c0a", level=0, member_ids=("a", "b"), parent_id="c1")
        c0b = Community(id="c0b", level=0, member_ids=("c",), parent_id="c1")
        c1 = Community(id="c1", level=1, member_ids=("a", "b", "c"), children_ids=("c0a", "c0b"))
        await graph.upsert_communities([c1, c0b, c0a])
        assert await graph.get_communities() == [c0a, c0b, c1]
        assert await graph.get_communities(level=1) == [c1]
        assert await graph.get_communities(level=2) == []
        assert await graph.communities_of(["b"]) == [c0a, c1]
        assert await graph.communities_of(["c", "a", "c"]) == [c0a, c0b, c1]
        assert await graph.communities_of(["zz"]) == []
        assert await graph.communities_of([]) == []
        r0 = CommunityReport(community_id="c0a", title="T", summary="S", rating=7.5,
                             findings=("f1", "f2"), full_content="full", rank=2.0,
                             text_unit_ids=("u1",))
        r1 = CommunityReport(community_id="c1", title="Top", summary="All")
        await graph.upsert_reports([r0, r1])
        assert await graph.get_reports(["c1", "nope", "c0a"]) == [r1, r0]
        r1b = r1.model_copy(update={"summary": "Rewritten"})
        await graph.upsert_reports([r1b])
        assert await graph.get_reports(["c1"]) == [r1b]
        assert await graph.delete_communities(["c1", "zz"]) == 1
        assert await graph.get_reports(["c1", "c0a"]) == [r0]
        assert await graph.counts() == {
            "entities": 0, "relationships": 0, "communities": 2, "reports": 1
        }

    asyncio.run(body())


def test_graph_indexes_are_isolated(backend: StoreBackend) -> None:
    async def body() -> None:
        one, two = backend.graph_store("one"), backend.graph_store("two")
        await one.upsert_entities([ent("a", "u1"), ent("b")])
        await one.upsert_relationships([rel("a", "b", 1, "u1")])
        await two.upsert_entities([ent("a")])
        await two.upsert_communities([Community(id="c", level=0, member_ids=("a",))])
        assert await two.citing(["u1"]) == ([], [])
        assert await two.edges_within(["a", "b"]) == []
        sub = await two.neighbourhood(["a"], hops=2, max_entities=9)
        assert [e.id for e in sub.entities] == ["a"]
        assert await one.get_communities() == []
        assert await two.delete_entities(["a", "b"]) == 1
        assert [e.id for e in await one.get_entities(["a", "b"])] == ["a", "b"]
        assert (await one.counts())["relationships"] == 1

    asyncio.run(body())
