"""``POST /v1/graph/trace`` on a real uvicorn server, over the two indexes of
`tests.support.graph_project` (an LLM graph in ``default``, a concept graph in ``docs``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.graph_fixture import ent, rel_id, unit
from tests.support.graph_project import build_project
from tests.support.server import serving

pytestmark = pytest.mark.integration

uvicorn = pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("graph_trace")
    build_project(project)
    with serving(create_app(project)) as url:
        yield url


def trace(base_url: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{base_url}/v1/graph/trace", json=body, timeout=60)


def traced(out: dict[str, Any]) -> dict[str, list[int]]:
    return {n["attributes"]["label"]: n["attributes"]["sources"]
            for n in out["nodes"] if n["attributes"].get("trace")}  # fmt: skip


def src(n: int, kind: str, id_: str, units: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"n": n, "kind": kind, "id": id_, "text_unit_ids": list(units)}


def test_entity_relationship_and_report_sources_over_the_entity_graph(base_url: str) -> None:
    curies = httpx.get(f"{base_url}/v1/graph/communities", params={"level": 1}).json()
    (curies_id,) = [c["id"] for c in curies["levels"][0]["communities"]
                    if c["title"] == "Marie and Pierre Curie"]  # fmt: skip
    reply = trace(base_url, sources=[
        src(1, "entity", ent("Poland")),
        src(2, "relationship", rel_id("Marie Curie", "Pierre Curie")),
        src(3, "report", curies_id),
        src(4, "entity", "no-such-entity"),
        src(5, "key_points", "global:key_points"),
    ])  # fmt: skip
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert traced(out) == {"Poland": [1], "Marie Curie": [2, 3], "Pierre Curie": [2, 3],
                           "Polonium": [3]}  # fmt: skip
    # traced nodes first (by first source, then degree), then their neighbours by degree
    assert [(n["attributes"]["label"], n["attributes"]["depth"]) for n in out["nodes"]] == [
        ("Poland", 0), ("Marie Curie", 0), ("Pierre Curie", 0), ("Polonium", 0),
        ("Warsaw", 1), ("Sorbonne", 1), ("Vistula", 1)]  # fmt: skip
    marked = {e["key"]: e["attributes"]["sources"] for e in out["edges"]
              if e["attributes"].get("trace")}  # fmt: skip
    assert marked == {rel_id("Marie Curie", "Pierre Curie"): [2]}
    assert all("trace" not in n["attributes"] for n in out["nodes"][4:])
    attrs = out["attributes"]
    assert attrs["communities"] == [
        {"id": curies_id, "level": 1, "title": "Marie and Pierre Curie", "sources": [3]}]
    assert attrs["truncated"] is False and attrs["graph"] == "entities"
    assert attrs["notes"] == [
        "source [4]: no entity 'no-such-entity' in the entities graph of index 'default'",
        "source [5]: a 'key_points' section names no graph node"]  # fmt: skip


def test_text_unit_sources_over_the_entity_graph_draw_what_the_unit_states(
    base_url: str,
) -> None:
    out = trace(base_url, graph="entities",
                sources=[src(1, "text_unit", unit("warsaw"), (unit("warsaw"),))]).json()
    assert traced(out) == {"Warsaw": [1], "Poland": [1], "Vistula": [1]}
    marked = {e["attributes"]["relation"] for e in out["edges"] if e["attributes"].get("trace")}
    assert marked == {"CAPITAL_OF", "FLOWS_THROUGH"}  # the unit's; LONGEST_RIVER_OF is not


def test_max_nodes_cuts_neighbours_before_traced_nodes(base_url: str) -> None:
    sources = [src(1, "entity", ent("Poland")),
               src(2, "relationship", rel_id("Marie Curie", "Pierre Curie"))]  # fmt: skip
    five = trace(base_url, sources=sources, max_nodes=4).json()
    assert [n["attributes"]["label"] for n in five["nodes"]] == [
        "Poland", "Marie Curie", "Pierre Curie", "Warsaw"]  # Warsaw: the best-connected
    assert five["attributes"]["truncated"] is True
    two = trace(base_url, sources=sources, max_nodes=2).json()
    assert traced(two) == {"Poland": [1], "Marie Curie": [2]}  # best-ranked traced nodes
    assert len(two["nodes"]) == 2 and two["attributes"]["truncated"] is True
    assert two["edges"] == []  # Pierre Curie was cut: the edge has no end to draw


def test_text_unit_sources_over_the_concept_graph(base_url: str) -> None:
    owl = httpx.get(f"{base_url}/v1/graph/concepts/barn owl",
                    params={"index": "docs", "units_limit": 50}).json()  # fmt: skip
    (owls,) = [d for d in owl["documents"] if d["path"] == "owls.md"]
    unit_id = owls["units"][0]["id"]
    reply = trace(base_url, index="docs", sources=[src(1, "text_unit", unit_id, (unit_id,)),
                                                   src(2, "text_unit", "tu-gone")])  # fmt: skip
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert out["attributes"]["graph"] == "concepts"
    marks = traced(out)
    assert "barn owl" in marks and set(map(tuple, marks.values())) == {(1,)}
    # every traced concept is one the unit states (the concept's own provenance says so)
    for node in out["nodes"]:
        if node["attributes"].get("trace"):
            detail = httpx.get(f"{base_url}/v1/graph/concepts/{node['key']}",
                               params={"index": "docs", "units_limit": 200}).json()
            units = {u["id"] for d in detail["documents"] for u in d["units"]}
            assert unit_id in units, node["attributes"]["label"]
    keys = {n["key"] for n in out["nodes"] if n["attributes"].get("trace")}
    for edge in out["edges"]:
        if edge["attributes"].get("trace"):
            assert {edge["source"], edge["target"]} <= keys
    assert any(e["attributes"].get("trace") for e in out["edges"])
    assert out["attributes"]["notes"] == [
        "source [2]: text unit 'tu-gone' states no node of the concepts graph of index 'docs'"]


@pytest.mark.parametrize("body", [
    {"sources": []},
    {},
    {"sources": [src(1, "entity", "x")], "max_nodes": 0},
    {"sources": [src(1, "entity", "x")], "max_nodes": 2001},
    {"sources": [src(0, "entity", "x")]},
    {"sources": [src(1, "entity", "x")], "graph": "words"},
])  # fmt: skip
def test_bad_trace_requests_are_422(base_url: str, body: dict[str, Any]) -> None:
    reply = trace(base_url, **body)
    assert reply.status_code == 422, reply.text


def test_a_trace_of_a_graph_the_index_lacks_is_409_and_slices_are_unchanged(
    base_url: str,
) -> None:
    reply = trace(base_url, index="docs", graph="entities",
                  sources=[src(1, "entity", ent("Poland"))])  # fmt: skip
    assert reply.status_code == 409
    assert reply.json()["error"]["type"] == "MethodologyNotIndexedError"
    piece = httpx.get(f"{base_url}/v1/graph/slice", params={"label": "Warsaw"}).json()
    assert not {"communities", "notes"} & set(piece["attributes"])
    assert all("trace" not in n["attributes"] and "sources" not in n["attributes"]
               for n in piece["nodes"])  # fmt: skip
    assert all("trace" not in e["attributes"] for e in piece["edges"])
