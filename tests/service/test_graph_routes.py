"""The ``/v1/graph`` routes on a real uvicorn server (issue 17), over the two indexes of
`tests.support.graph_project` (an LLM graph in ``default``, a concept graph in ``docs``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.graph_fixture import ent
from tests.support.graph_project import build_project
from tests.support.server import serving

pytestmark = pytest.mark.integration

uvicorn = pytest.importorskip("uvicorn")

@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("graph_service")
    build_project(project)
    with serving(create_app(project)) as url:
        yield url


def get(base_url: str, path: str, **params: Any) -> httpx.Response:
    return httpx.get(f"{base_url}/v1/graph{path}", params=params, timeout=60)


def labels(reply: httpx.Response) -> list[tuple[str, str | None]]:
    assert reply.status_code == 200, reply.text
    return [(m["label"], m["match"]) for m in reply.json()["matches"]]


def test_label_search_ranks_exact_then_prefix_then_word_by_degree(base_url: str) -> None:
    first = get(base_url, "/labels", q="POL")
    assert first.json()["graph"] == "entities"  # the default where an LLM graph is held
    assert labels(first) == [("Poland", "prefix"), ("Polonium", "prefix")]
    assert labels(get(base_url, "/labels", q="poland")) == [("Poland", "exact")]
    assert labels(get(base_url, "/labels", q="curie")) == [
        ("Marie Curie", "word"), ("Pierre Curie", "word")]  # fmt: skip
    top = labels(get(base_url, "/labels", limit=2))
    assert top == [("Marie Curie", "prefix"), ("Warsaw", "prefix")]  # degree 3 each, by label


def test_slice_is_a_graphology_graph_bfs_by_degree_with_a_truncated_flag(base_url: str) -> None:
    reply = get(base_url, "/slice", label="warsaw", max_depth=1, max_nodes=3)
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert out["options"] == {"type": "directed", "multi": True, "allowSelfLoops": True}
    assert out["attributes"]["truncated"] is True and out["attributes"]["centre"] == ent("Warsaw")
    names = [(n["attributes"]["label"], n["attributes"]["depth"]) for n in out["nodes"]]
    assert names == [("Warsaw", 0), ("Marie Curie", 1), ("Poland", 1)]  # Vistula cut (degree)
    edges = {(e["source"], e["target"], e["attributes"]["relation"]) for e in out["edges"]}
    assert edges == {(ent("Marie Curie"), ent("Warsaw"), "BORN_IN"),
                     (ent("Warsaw"), ent("Poland"), "CAPITAL_OF")}  # fmt: skip
    warsaw = out["nodes"][0]["attributes"]
    assert warsaw["entity_type"] == "GEO" and warsaw["degree"] == 3
    assert warsaw["community_level"] == 0
    marie = out["nodes"][1]["attributes"]
    assert marie["community_level"] == 1  # the deepest community holding it

    whole = get(base_url, "/slice", label="Warsaw", max_depth=5, max_nodes=2000).json()
    assert whole["attributes"]["truncated"] is False
    assert len(whole["nodes"]) == 8 and len(whole["edges"]) == 8  # the component, not bread
    top = get(base_url, "/slice", label="*", max_nodes=2).json()
    assert [n["attributes"]["label"] for n in top["nodes"]] == ["Marie Curie", "Warsaw"]
    assert top["attributes"]["truncated"] is True


@pytest.mark.parametrize("params", [
    {"label": "Warsaw", "max_nodes": 0}, {"label": "Warsaw", "max_nodes": 2001},
    {"label": "Warsaw", "max_depth": 6}, {"label": ""}, {"label": "Warsaw", "graph": "words"},
])  # fmt: skip
def test_slice_parameters_out_of_bounds_are_422(base_url: str, params: dict[str, Any]) -> None:
    assert get(base_url, "/slice", **params).status_code == 422


@pytest.mark.parametrize(("path", "params", "status", "kind"), [
    ("/slice", {"label": "Atlantis"}, 404, "NotFoundError"),
    ("/entities/Atlantis", {}, 404, "NotFoundError"),
    ("/communities/nope", {}, 404, "NotFoundError"),
    ("/labels", {"q": "owl", "index": "docs", "graph": "entities"}, 409,
     "MethodologyNotIndexedError"),
    ("/slice", {"label": "Warsaw", "graph": "concepts"}, 409, "MethodologyNotIndexedError"),
    ("/labels", {"index": "no such index!"}, 400, "UsageError"),
    ("/labels", {"index": "nosuch"}, 404, "NotFoundError"),
    ("/communities", {"index": "nosuch"}, 404, "NotFoundError"),
])  # fmt: skip
def test_bad_requests_are_typed_errors(
    base_url: str, path: str, params: dict[str, Any], status: int, kind: str
) -> None:
    reply = get(base_url, path, **params)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["type"] == kind and error["message"]
    if params.get("index") == "nosuch":
        assert error["message"] == ("index: no index 'nosuch' in this project (indexes: default, "
                                    "docs); index documents into it with `ukr index PATH "
                                    "--index nosuch`")  # fmt: skip
        assert error["field"] == "index"


def test_entity_detail_has_relationships_communities_reports_and_documents(
    base_url: str,
) -> None:
    reply = get(base_url, "/entities/marie curie", links_limit=2)
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert out["id"] == ent("Marie Curie") and out["entity_type"] == "PERSON"
    assert "polonium" in out["description"]
    assert out["links_total"] == 3 and len(out["links"]) == 2
    assert out["links"][0] == {
        "id": out["links"][0]["id"], "direction": "out", "other_id": ent("Warsaw"),
        "other_label": "Warsaw", "relation": "BORN_IN",
        "description": "Marie Curie was born in Warsaw.", "weight": 9.0,
    }  # fmt: skip
    titles = [(c["community"]["level"], c["community"]["title"]) for c in out["communities"]]
    assert titles == [(0, "The Curies and the Sorbonne"), (1, "Marie and Pierre Curie")]
    assert out["communities"][1]["summary"].startswith("Marie and Pierre Curie discovered")
    (doc,) = out["documents"]
    assert doc["path"] == "marie.txt" and doc["units"][0]["excerpt"].startswith("Marie Curie")
    by_id = get(base_url, f"/nodes/{ent('Poland')}").json()
    assert by_id["label"] == "Poland" and {link["direction"] for link in by_id["links"]} == {"in"}


def test_community_hierarchy_and_one_community_with_its_report(base_url: str) -> None:
    tree = get(base_url, "/communities").json()
    assert tree["total"] == 5
    level0, level1 = tree["levels"]
    assert [(c["title"], c["size"]) for c in level0["communities"]] == [
        ("The Curies and the Sorbonne", 5), ("Warsaw, Poland and the Vistula", 3),
        ("Sourdough baking", 2)]  # fmt: skip
    science = level0["communities"][0]
    assert sorted(science["children_ids"]) == sorted(c["id"] for c in level1["communities"])
    assert all(c["parent_id"] == science["id"] for c in level1["communities"])
    assert [lv["level"] for lv in get(base_url, "/communities", level=1).json()["levels"]] == [1]

    detail = get(base_url, f"/communities/{science['id']}", members_limit=2).json()
    assert detail["community"]["rating"] == 8.0
    assert detail["summary"].startswith("Marie Curie, born in Warsaw")
    assert detail["full_content"].startswith("# The Curies and the Sorbonne")
    assert [m["label"] for m in detail["members"]] == ["Marie Curie", "Pierre Curie"]
    # the best connected members name a community (concept communities have no titles)
    assert science["top_members"] == ["Marie Curie", "Pierre Curie", "Sorbonne"]


def test_concept_graph_is_the_default_without_an_llm_graph(base_url: str) -> None:
    found = get(base_url, "/labels", q="barn", index="docs")
    assert found.json()["graph"] == "concepts"
    assert labels(found)[0] == ("barn", "exact")
    assert ("barn owl", "prefix") in labels(found)
    piece = get(base_url, "/slice", label="barn owl", index="docs", max_depth=1).json()
    assert piece["options"]["type"] == "undirected"
    assert {n["attributes"]["label"] for n in piece["nodes"]} >= {"barn owl", "voles"}
    assert all(e["attributes"]["relation"] == "co-occurs" for e in piece["edges"])
    assert piece["nodes"][0]["attributes"]["community"] is not None

    concept = get(base_url, "/concepts/Barn Owl", index="docs").json()
    assert concept["text_units_total"] == 2
    assert {d["path"] for d in concept["documents"]} == {"owls.md", "birders::2024-03-01"}
    (chat,) = [d for d in concept["documents"] if d["path"].startswith("birders")]
    messages = chat["units"][0]["messages"]
    assert [(m["sender_name"], m["thread_name"]) for m in messages] == [
        ("Alice", "Birders"), ("Bob", "Birders")]  # fmt: skip
    assert messages[0]["timestamp"].startswith("2024-03-01T18:04")
    tree = get(base_url, "/communities", index="docs").json()
    assert tree["graph"] == "concepts" and tree["total"] >= 1
    assert all(c["title"] is None for lv in tree["levels"] for c in lv["communities"])
    assert all(1 <= len(c["top_members"]) <= 3 for lv in tree["levels"] for c in lv["communities"])


def test_a_community_slice_is_its_members_by_degree_capped(base_url: str) -> None:
    tree = get(base_url, "/communities").json()
    science = tree["levels"][0]["communities"][0]  # The Curies and the Sorbonne, 5 members
    whole = get(base_url, "/slice", community=science["id"]).json()
    attrs = whole["attributes"]
    assert (attrs["community"], attrs["total"], attrs["truncated"]) == (science["id"], 5, False)
    assert attrs["centre"] is None and attrs["label"] == ""
    assert len(whole["nodes"]) == 5 and all(n["attributes"]["depth"] == 0 for n in whole["nodes"])
    keys = {n["key"] for n in whole["nodes"]}
    assert all(e["source"] in keys and e["target"] in keys for e in whole["edges"])
    capped = get(base_url, "/slice", community=science["id"], max_nodes=2).json()
    assert [n["attributes"]["label"] for n in capped["nodes"]] == ["Marie Curie", "Pierre Curie"]
    assert capped["attributes"]["truncated"] is True and capped["attributes"]["total"] == 5
    assert get(base_url, "/slice", label="*", max_nodes=2).json()["attributes"]["total"] == 10  # every node


@pytest.mark.parametrize(("params", "status", "kind"), [
    ({}, 400, "UsageError"),
    ({"label": "Warsaw", "community": "x"}, 400, "UsageError"),
    ({"community": "nope"}, 404, "NotFoundError"),
])  # fmt: skip
def test_a_slice_needs_a_label_or_a_known_community(
    base_url: str, params: dict[str, Any], status: int, kind: str
) -> None:
    reply = get(base_url, "/slice", **params)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["type"] == kind
    if kind == "UsageError":
        assert error["field"] == "label" and "label or a community" in error["message"]
