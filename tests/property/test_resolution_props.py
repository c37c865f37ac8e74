"""Resolution laws: input order never matters, ids follow the identity keys, the graph is whole."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.graph.resolution import compact_name_key, resolve_graph
from unified_kg_rag.domain.identity import entity_id, entity_key, relationship_id

pytestmark = pytest.mark.unit

# Names chosen to collide under every rule: key variants, designators, CJK spacing, fuzzy kin.
NAMES = [
    "Acme", "ACME", "Acme Inc", "Acme.", "Acme Corp", "Bolt", "bolt ", "C++", "C#", "AT&T",
    "AT&T Inc.", "가나다", "(주)가나다", "가나다 상사", "가나다상사", "東京", "トヨタ株式会社",
    "トヨタ", "World War I", "World War II", "Northfield Medical Center",
    "Northfield Medical Centre", "Star Wars: Episode IV", "x",
]  # fmt: skip
TYPES = ["", "ORG", "PERSON", "PLACE"]
WORDS = ["", "a founder", "a maker", "an old firm", "a city"]

entities = st.builds(
    ExtractedEntity,
    name=st.sampled_from(NAMES),
    type=st.sampled_from(TYPES),
    description=st.sampled_from(WORDS),
    confidence=st.one_of(st.none(), st.integers(1, 10).map(float)),
)
relationships = st.builds(
    ExtractedRelationship,
    source=st.sampled_from(NAMES),
    target=st.sampled_from(NAMES),
    type=st.sampled_from(["OWNS", "owns", "LOCATED_IN", ""]),
    description=st.sampled_from(WORDS),
    strength=st.integers(1, 10).map(float),
)
records = st.lists(
    st.tuples(
        st.sampled_from([f"u{i}" for i in range(8)]),
        st.builds(
            ExtractionRecord,
            fingerprint=st.sampled_from(["f1", "f2"]),
            entities=st.lists(entities, max_size=5).map(tuple),
            relationships=st.lists(relationships, max_size=5).map(tuple),
        ),
    ),
    max_size=8,
    unique_by=lambda pair: (pair[0], pair[1].fingerprint),
)


@settings(max_examples=150, deadline=None)
@given(records, st.randoms(use_true_random=False), st.sampled_from([None, 85.0]))
def test_input_order_does_not_matter(
    pairs: list[tuple[str, ExtractionRecord]], rnd: random.Random, threshold: float | None
) -> None:
    shuffled = list(pairs)
    rnd.shuffle(shuffled)
    assert resolve_graph(shuffled, fuzzy_threshold=threshold) == resolve_graph(
        pairs, fuzzy_threshold=threshold
    )


@settings(max_examples=150, deadline=None)
@given(records)
def test_repeated_pairs_are_read_once(pairs: list[tuple[str, ExtractionRecord]]) -> None:
    assert resolve_graph(pairs + pairs) == resolve_graph(pairs)


@settings(max_examples=150, deadline=None)
@given(records, st.sampled_from([None, 85.0]))
def test_graph_is_whole_and_ids_follow_identity(
    pairs: list[tuple[str, ExtractionRecord]], threshold: float | None
) -> None:
    graph = resolve_graph(pairs, fuzzy_threshold=threshold)
    ids = {e.id for e in graph.entities}
    names = {e.id: e.name for e in graph.entities}
    units = {u for u, _ in pairs}
    assert len(ids) == len(graph.entities)
    for e in graph.entities:
        assert e.id == entity_id(e.name)
        assert e.text_unit_ids == tuple(sorted(set(e.text_unit_ids)))
        assert set(e.text_unit_ids) <= units and e.text_unit_ids
    neighbours: dict[str, set[str]] = {i: set() for i in ids}
    for r in graph.relationships:
        assert r.source_id in ids and r.target_id in ids and r.source_id != r.target_id
        assert r.id == relationship_id(names[r.source_id], names[r.target_id], r.type)
        assert r.text_unit_ids == tuple(sorted(set(r.text_unit_ids)))
        assert len(r.text_unit_ids) <= r.weight <= 10 * len(r.text_unit_ids)
        neighbours[r.source_id].add(r.target_id)
        neighbours[r.target_id].add(r.source_id)
    assert {e.id: e.rank for e in graph.entities} == {i: len(n) for i, n in neighbours.items()}
    stated = {
        entity_key(x.name) for _, rec in pairs for x in rec.entities
    } | {entity_key(n) for _, rec in pairs for x in rec.relationships for n in (x.source, x.target)}
    assert set(graph.key_to_entity_id) == stated
    assert set(graph.key_to_entity_id.values()) == ids


names = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != "")


@given(names)
def test_compact_key_is_never_empty(name: str) -> None:
    assert compact_name_key(name) != ""


LATIN_DESIGNATORS = {"inc", "ltd", "llc", "co", "corp", "corporation", "incorporated",
                     "limited", "gmbh", "plc", "ag", "sa", "and"}  # fmt: skip
latin_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé&+", min_size=2, max_size=8).filter(
    lambda w: w not in LATIN_DESIGNATORS and w.strip("&+")
)
latin_names = st.lists(latin_words, min_size=1, max_size=3).map(" ".join)
hangul_names = st.text(alphabet="가나다라마바사아자차카타파하", min_size=1, max_size=6)


@given(latin_names, st.sampled_from([" Inc", " Co., Ltd.", " GmbH", " S.A.", " & Co", ", LLC"]))
def test_compact_key_drops_a_latin_designator(name: str, designator: str) -> None:
    assert compact_name_key(name + designator) == compact_name_key(name)
    assert compact_name_key(name.upper() + designator) == compact_name_key(name)


@given(hangul_names, hangul_names, st.sampled_from(["주식회사 ", "(주)", "㈜", "주식회사", ""]))
def test_compact_key_drops_a_korean_designator_and_spaces(
    first: str, second: str, designator: str
) -> None:
    assert compact_name_key(designator + first + " " + second) == first + second
    assert compact_name_key(first + second + " " + designator.strip()) == first + second
