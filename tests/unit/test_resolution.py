"""Unit tests of graph resolution: name keys, merging rules, stubs, weights, rank, fuzzy guard."""

from __future__ import annotations

import pytest
from rapidfuzz import fuzz

from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.graph.name_matching import discriminator_tokens, fuzzy_links
from unified_kg_rag.domain.graph.resolution import (
    MERGE_RULES,
    ResolvedGraph,
    apply_summaries,
    compact_name_key,
    resolve_graph,
)
from unified_kg_rag.domain.identity import entity_id, relationship_id
from unified_kg_rag.domain.models import Entity, Relationship

pytestmark = pytest.mark.unit


def ent(
    name: str, type_: str = "", description: str = "", confidence: float | None = None
) -> ExtractedEntity:
    return ExtractedEntity(name=name, type=type_, description=description, confidence=confidence)


def rel(
    source: str, target: str, type_: str = "REL", description: str = "", strength: float = 5.0
) -> ExtractedRelationship:
    return ExtractedRelationship(
        source=source, target=target, type=type_, description=description, strength=strength
    )


def unit(
    unit_id: str,
    entities: list[ExtractedEntity] | None = None,
    relationships: list[ExtractedRelationship] | None = None,
) -> tuple[str, ExtractionRecord]:
    record = ExtractionRecord(
        fingerprint="fp-" + unit_id,
        entities=tuple(entities or ()),
        relationships=tuple(relationships or ()),
    )
    return unit_id, record


def by_name(graph: ResolvedGraph) -> dict[str, Entity]:
    return {e.name: e for e in graph.entities}


def edge(graph: ResolvedGraph, source: str, target: str) -> list[Relationship]:
    return [
        r
        for r in graph.relationships
        if r.source_id == entity_id(source) and r.target_id == entity_id(target)
    ]


# ----------------------------------------------------------------------------- compact_name_key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Acme Inc", "Acme"),
        ("Acme, Inc.", "ACME"),
        ("Acme Co., Ltd.", "acme"),
        ("Acme Corporation", "Acme"),
        ("Acme L.L.C.", "Acme"),
        ("Siemens AG", "Siemens"),
        ("Renault S.A.", "Renault"),
        ("Johnson & Co", "Johnson"),
        ("AT&T Inc.", "AT&T"),
        ("(주)가나다", "가나다"),
        ("㈜가나다", "가나다"),
        ("가나다(주)", "가나다"),
        ("주식회사 가나다", "가나다"),
        ("가나다 주식회사", "가나다"),
        ("가나다 상사", "가나다상사"),
        ("トヨタ自動車株式会社", "トヨタ自動車"),
        ("株式会社 ソニー", "ソニー"),
        ("华为技术有限公司", "华为技术"),
        ("台灣積體電路製造股份有限公司", "台灣積體電路製造"),
        ("阿里巴巴 集团", "阿里巴巴集团"),
    ],
)
def test_compact_key_folds_designators_and_cjk_spaces(a: str, b: str) -> None:
    assert compact_name_key(a) == compact_name_key(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [("C++", "C#"), ("AT&T", "ATT"), ("Apple", "Apple Corps"), ("Cosco", "Co"), ("가나다", "가나")],
)
def test_compact_key_keeps_distinct_names_apart(a: str, b: str) -> None:
    assert compact_name_key(a) != compact_name_key(b)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("AT&T Inc.", "at&t"),
        ("Acme Co., Ltd.", "acme"),
        ("Inc", "inc"),  # a designator alone is kept
        ("Co Ltd", "co"),
        ("주식회사", "주식회사"),
        ("(주)", "(주)"),
        ("Star Wars: A New Hope", "star wars: a new hope"),
        ("Apollo 13", "apollo 13"),
    ],
)
def test_compact_key_values(name: str, key: str) -> None:
    assert compact_name_key(name) == key


# ----------------------------------------------------------------------------- merging names


def test_trailing_space_and_period_variants_are_one_entity() -> None:
    graph = resolve_graph(
        [unit("u1", [ent("X ")]), unit("u2", [ent("X")]), unit("u3", [ent("X.")])]
    )
    assert [e.name for e in graph.entities] == ["X"]  # "X" cited by two units, "X." by one
    assert graph.entities[0].id == entity_id("X.")
    assert graph.entities[0].text_unit_ids == ("u1", "u2", "u3")
    assert graph.merges["entity_key"] == 2
    assert graph.merges["compact_name_key"] == 0


def test_cpp_and_csharp_stay_apart() -> None:
    graph = resolve_graph([unit("u1", [ent("C++"), ent("C#")]), unit("u2", [ent("c++")])])
    names = by_name(graph)
    assert set(names) == {"C++", "C#"}  # "C++" and "c++" tie at one unit: the smaller wins
    assert names["C++"].text_unit_ids == ("u1", "u2")
    assert names["C#"].text_unit_ids == ("u1",)


def test_att_keeps_its_ampersand_and_absorbs_inc() -> None:
    graph = resolve_graph(
        [unit("u1", [ent("AT&T")]), unit("u2", [ent("AT&T")]), unit("u3", [ent("AT&T Inc.")])]
    )
    assert [(e.name, e.text_unit_ids) for e in graph.entities] == [("AT&T", ("u1", "u2", "u3"))]
    assert graph.merges["compact_name_key"] == 1


def test_name_with_a_colon() -> None:
    name = "Star Wars: Episode IV"
    graph = resolve_graph(
        [
            unit("u1", [ent(name, "WORK"), ent("George Lucas", "PERSON")]),
            unit("u2", [ent(name + ":", "WORK")], [rel("George Lucas", name, "DIRECTED")]),
        ]
    )
    names = by_name(graph)
    assert set(names) == {name, "George Lucas"}
    assert names[name].text_unit_ids == ("u1", "u2")
    (directed,) = graph.relationships
    assert directed.id == relationship_id("George Lucas", name, "DIRECTED")
    assert directed.target_id == entity_id(name)


def test_korean_company_names_with_designators_merge() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("(주)가나다", "ORGANIZATION")]),
            unit("u2", [ent("가나다", "ORGANIZATION")]),
            unit("u3", [ent("가나다", "ORGANIZATION"), ent("가나다 상사", "ORGANIZATION")]),
            unit("u4", [ent("가나다상사", "ORGANIZATION")]),
        ]
    )
    names = by_name(graph)
    assert set(names) == {"가나다", "가나다 상사"}  # the tie at one unit each goes to the smaller
    assert names["가나다"].text_unit_ids == ("u1", "u2", "u3")
    assert names["가나다 상사"].text_unit_ids == ("u3", "u4")
    assert graph.merges["compact_name_key"] == 2


def test_chinese_and_japanese_company_names_merge() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("华为技术有限公司"), ent("トヨタ自動車株式会社")]),
            unit("u2", [ent("华为技术"), ent("トヨタ自動車")]),
            unit("u3", [ent("华为技术")]),
            unit("u4", [ent("東京"), ent("京都")]),
        ]
    )
    names = by_name(graph)
    assert set(names) == {"华为技术", "トヨタ自動車", "東京", "京都"}
    assert names["华为技术"].text_unit_ids == ("u1", "u2", "u3")
    assert names["トヨタ自動車"].text_unit_ids == ("u1", "u2")


def test_same_name_with_two_types_is_one_entity_of_the_most_frequent_type() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("Mercury", "PLANET", confidence=7)]),
            unit("u2", [ent("Mercury", "ELEMENT", confidence=9)]),
            unit("u3", [ent("mercury", "PLANET")]),
            unit("u4", [ent("Jaguar", "ANIMAL"), ent("Mars", "")]),
            unit("u5", [ent("Jaguar", "COMPANY")]),
        ]
    )
    names = by_name(graph)
    assert names["Mercury"].type == "PLANET"
    assert names["Mercury"].confidence == 9
    assert names["Jaguar"].type == "ANIMAL"  # a tie goes to the smaller type
    assert names["Mars"].type == ""
    assert names["Mars"].confidence is None


def test_descriptions_in_unit_then_reply_order_without_repeats() -> None:
    graph = resolve_graph(
        [
            unit("u2", [ent("Ada", description="Wrote the first program.")]),
            unit("u1", [ent("Ada", description="A mathematician."), ent("ADA", "", "")]),
            unit("u3", [ent("Ada.", description="A mathematician.")]),
        ]
    )
    (ada,) = graph.entities
    assert ada.description == "A mathematician.\nWrote the first program."
    assert graph.description_fragments == {
        ada.id: ("A mathematician.", "Wrote the first program.")
    }


# ----------------------------------------------------------------------------- relationships


def test_stub_entity_for_an_endpoint_never_listed() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("Ada", "PERSON")]),
            unit("u2", [], [rel("Ada", "Analytical Engine", "WROTE_FOR", "Notes.")]),
            unit("u3", [], [rel("Ada", "analytical engine", "WROTE_FOR")]),
        ]
    )
    names = by_name(graph)
    stub = names["Analytical Engine"]
    assert (stub.type, stub.description, stub.text_unit_ids) == ("", "", ("u2", "u3"))
    assert names["Ada"].text_unit_ids == ("u1", "u2", "u3")  # endpoints cite their edges' units
    assert graph.merges["stub_entities"] == 1
    (wrote,) = graph.relationships
    assert wrote.text_unit_ids == ("u2", "u3")
    assert wrote.weight == 10.0


def test_weights_sum_one_strength_per_unit_and_types_merge_by_key() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("A"), ent("B")], [rel("A", "B", "PUBLISHED_BY", strength=7)]),
            unit(
                "u2",
                [ent("A"), ent("B")],
                [
                    rel("A", "B", "published by", "first", strength=4),
                    rel("A", "B", "Published-By", "second", strength=6),  # the unit's last
                ],
            ),
        ]
    )
    (published,) = graph.relationships
    assert published.weight == 13.0
    assert published.type == "PUBLISHED_BY"  # each spelling once: the smallest
    assert published.description == "first\nsecond"
    assert published.id == relationship_id("A", "B", "published by")
    assert published.text_unit_ids == ("u1", "u2")


def test_edges_are_directed_and_typed() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("A"), ent("B")], [rel("A", "B", "X"), rel("B", "A", "X")]),
            unit("u2", [], [rel("A", "B", "Y")]),
        ]
    )
    assert len(graph.relationships) == 3
    assert {r.type for r in edge(graph, "A", "B")} == {"X", "Y"}
    assert [r.type for r in edge(graph, "B", "A")] == ["X"]
    assert {e.name: e.rank for e in graph.entities} == {"A": 1, "B": 1}


def test_self_loop_produced_by_a_merge_is_dropped_and_counted() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("Acme Inc"), ent("Acme")], [rel("Acme Inc", "Acme", "OWNS")]),
            unit("u2", [ent("Acme")], [rel("Acme", "Bolt", "MAKES", strength=8)]),
        ]
    )
    names = by_name(graph)
    assert set(names) == {"Acme", "Bolt"}
    assert graph.merges["self_loops_dropped"] == 1
    (makes,) = graph.relationships
    assert (makes.source_id, makes.target_id, makes.weight) == (
        entity_id("Acme"),
        entity_id("Bolt"),
        8.0,
    )
    assert names["Acme"].rank == 1
    assert names["Acme"].text_unit_ids == ("u1", "u2")


def test_rank_counts_distinct_neighbours() -> None:
    graph = resolve_graph(
        [
            unit(
                "u1",
                [ent("Hub"), ent("B"), ent("C"), ent("Lone")],
                [rel("Hub", "B", "X"), rel("B", "Hub", "Y"), rel("Hub", "C", "X")],
            )
        ]
    )
    assert {e.name: e.rank for e in graph.entities} == {"Hub": 2, "B": 1, "C": 1, "Lone": 0}


def test_ids_and_output_order() -> None:
    graph = resolve_graph(
        [unit("u1", [ent("Zed"), ent("Amy")], [rel("Zed", "Amy", "KNOWS"), rel("Amy", "Q", "")])]
    )
    assert [e.id for e in graph.entities] == sorted(e.id for e in graph.entities)
    assert [r.id for r in graph.relationships] == sorted(r.id for r in graph.relationships)
    assert all(e.id == entity_id(e.name) for e in graph.entities)
    assert {r.id for r in graph.relationships} == {
        relationship_id("Zed", "Amy", "KNOWS"),
        relationship_id("Amy", "Q", ""),
    }
    assert graph.key_to_entity_id == {
        "zed": entity_id("Zed"),
        "amy": entity_id("Amy"),
        "q": entity_id("Q"),
    }
    assert list(graph.merges) == list(MERGE_RULES)


def test_blank_names_and_repeated_pairs_are_ignored() -> None:
    pair = unit("u1", [ent("A", "T"), ent("  ")], [rel("A", " ", "X"), rel("A", "B", "X")])
    graph = resolve_graph([pair, pair])
    assert {e.name for e in graph.entities} == {"A", "B"}
    assert graph.merges["entity_key"] == 0
    assert graph.relationships[0].weight == 5.0


def test_empty_input() -> None:
    graph = resolve_graph([])
    assert (graph.entities, graph.relationships) == ((), ())
    assert graph.merges == dict.fromkeys(MERGE_RULES, 0)


# ----------------------------------------------------------------------------- fuzzy matching


def fuzzy(names: list[tuple[str, str]], threshold: float = 90) -> ResolvedGraph:
    return resolve_graph(
        [unit(f"u{i}", [ent(name, type_)]) for i, (name, type_) in enumerate(names)],
        fuzzy_threshold=threshold,
    )


def test_fuzzy_merges_spelling_variants_at_90() -> None:
    names = [
        ("Northfield Medical Center", "ORG"),
        ("Northfield Medical Center", "ORG"),
        ("Northfield Medical Centre", "ORG"),
    ]
    graph = fuzzy(names)
    assert [(e.name, e.text_unit_ids) for e in graph.entities] == [
        ("Northfield Medical Center", ("u0", "u1", "u2"))
    ]
    assert graph.merges["fuzzy"] == 1
    assert len(resolve_graph([unit("u0", [ent(n) for n, _ in names])]).entities) == 2


def test_fuzzy_matches_token_order() -> None:
    graph = fuzzy([("Medical Center Northfield", ""), ("Northfield Medical Center", "")])
    assert len(graph.entities) == 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("World War I", "World War II"),
        ("Apollo 11", "Apollo 13"),
        ("Louis XIV", "Louis XV"),
        ("Type A", "Type B"),
        ("가나다연구원", "가나다연구소"),
        ("東京大学", "東京大学院"),
    ],
)
def test_fuzzy_guard_keeps_discriminated_names_apart(a: str, b: str) -> None:
    graph = fuzzy([(a, ""), (b, "")], threshold=50)
    assert {e.name for e in graph.entities} == {a, b}
    assert graph.merges["fuzzy"] == 0


def test_fuzzy_at_90_keeps_a_longer_name_apart() -> None:
    a, b = "Northfield University", "Northfield University Hospital"
    assert fuzz.token_sort_ratio(a.casefold(), b.casefold()) < 90
    assert {e.name for e in fuzzy([(a, ""), (b, "")]).entities} == {a, b}


def test_fuzzy_never_joins_two_types() -> None:
    graph = fuzzy(
        [("Northfield Medical Center", "ORG"), ("Northfield Medical Centre", "LOCATION")]
    )
    assert len(graph.entities) == 2
    untyped = fuzzy([("Northfield Medical Center", "ORG"), ("Northfield Medical Centre", "")])
    assert [e.type for e in untyped.entities] == ["ORG"]


def test_fuzzy_chain_never_joins_two_types() -> None:
    graph = fuzzy(
        [
            ("Northfield Medical Center", "ORG"),
            ("Northfield Medical Centre", ""),
            ("Northfield Medical Centres", "LOCATION"),
        ]
    )
    # Centre-Centres (98) links before Center-Centre (96); then Center would bring ORG into a
    # LOCATION group, so it stays alone.
    assert sorted(e.text_unit_ids for e in graph.entities) == [("u0",), ("u1", "u2")]
    assert sorted(e.type for e in graph.entities) == ["LOCATION", "ORG"]
    assert graph.merges["fuzzy"] == 1


def test_fuzzy_threshold_is_checked() -> None:
    with pytest.raises(ValueError, match="0-100"):
        resolve_graph([], fuzzy_threshold=101)


def test_discriminator_tokens() -> None:
    assert discriminator_tokens("world war ii") == ("ii",)
    assert discriminator_tokens("apollo 13") == ("13",)
    assert discriminator_tokens("boeing 747 400 type c") == ("400", "747", "c")
    assert discriminator_tokens("northfield medical center") == ()


def test_fuzzy_links_score_is_token_sort_ratio() -> None:
    keys = sorted(["abc def ghi", "ghi abc def", "abc def gxi", "zzz"])
    links = list(fuzzy_links(keys, threshold=85))
    assert links == [("abc def ghi", "ghi abc def"), ("abc def ghi", "abc def gxi"),
                     ("abc def gxi", "ghi abc def")]  # fmt: skip
    assert fuzz.token_sort_ratio("abc def ghi", "ghi abc def") == 100
    assert fuzz.token_sort_ratio("abc def ghi", "abc def gxi") >= 85


def test_apply_summaries_replaces_only_the_given_descriptions() -> None:
    graph = resolve_graph(
        [
            unit("u1", [ent("A", description="one"), ent("B", description="b")],
                 [rel("A", "B", "X", "r1")]),
            unit("u2", [ent("A", description="two")], [rel("A", "B", "X", "r2")]),
        ]
    )  # fmt: skip
    (x,) = graph.relationships
    summarized = apply_summaries(graph, {entity_id("A"): "A, summarized.", x.id: "X, short."})
    assert {e.name: e.description for e in summarized.entities} == {
        "A": "A, summarized.",
        "B": "b",
    }
    assert summarized.relationships[0].description == "X, short."
    assert summarized.description_fragments[entity_id("A")] == ("one", "two")
    assert graph.relationships[0].description == "r1\nr2"  # the input is unchanged
