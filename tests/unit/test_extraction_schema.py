"""The extraction schema's pure rules: keys, documents, merging, alignment, conformance, annotations."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.extraction.schema import (
    EntityTypeSpec,
    ExtractionSchema,
    RelationshipTypeSpec,
    SchemaDocument,
    document_error,
    merge_schemas,
    schema_from_document,
    schema_key,
    schema_prompt_block,
    undeclared_in_patterns,
    upper_snake,
)
from unified_kg_rag.domain.extraction.schema_conformance import (
    align_by_name,
    annotate_entities,
    annotate_relationships,
    conform_records,
    entity_candidates,
    name_alignment,
    parse_alignment_reply,
    render_alignment_messages,
)
from unified_kg_rag.domain.graph.resolution import resolve_graph
from unified_kg_rag.domain.identity import entity_id, entity_key
from unified_kg_rag.domain.models import Entity, Relationship
from unified_kg_rag.domain.prompts import load_prompt

SCHEMA = schema_from_document(SchemaDocument.model_validate({
    "entity_types": [
        {"name": "Person", "description": "A human being.", "iri": "https://schema.org/Person",
         "synonyms": ["human", "Individual"]},
        {"name": "ORGANIZATION", "description": "A company or institution."},
        {"name": "LOCATION"},
    ],
    "relationship_types": [
        {"name": "works for", "description": "Employment.", "iri": "https://schema.org/worksFor"},
        {"name": "LOCATED_IN"},
    ],
    "patterns": [["PERSON", "WORKS_FOR", "ORGANIZATION"],
                 ["ORGANIZATION", "LOCATED_IN", "LOCATION"]],
}))  # fmt: skip


def ent(name: str, kind: str) -> ExtractedEntity:
    return ExtractedEntity(name=name, type=kind, description=f"{name} is a {kind}.")


def rel(source: str, target: str, kind: str) -> ExtractedRelationship:
    return ExtractedRelationship(source=source, target=target, type=kind, strength=7)


def record(fp: str, entities: list[ExtractedEntity],
           relationships: list[ExtractedRelationship] = ()) -> ExtractionRecord:  # type: ignore[assignment]
    return ExtractionRecord(fingerprint=fp, entities=tuple(entities),
                            relationships=tuple(relationships))  # fmt: skip


UNIT = record("f1", [
    ent("Ada", "PERSON"), ent("Acme", "ORGANISATION"), ent("Paris", "CITY"),
    ent("Bob", "human"),
], [
    rel("Ada", "Acme", "WORKS_FOR"),     # Acme's type is off-schema: no pattern check
    rel("Bob", "Ada", "WORKS_FOR"),      # PERSON -> PERSON: no pattern allows it
    rel("Ada", "Paris", "VISITED"),      # off-schema relationship type
    rel("Bob", "Acme", "works-for"),     # a declared type in another spelling
])  # fmt: skip


def test_keys_and_upper_snake() -> None:
    assert schema_key(" works-for ") == "WORKS_FOR" == schema_key("Works  For")
    assert schema_key(schema_key("a b")) == "A_B"
    assert upper_snake("worksFor") == "WORKS_FOR"
    assert upper_snake("HTTPServer") == "HTTP_SERVER"
    assert upper_snake("Creative work") == "CREATIVE_WORK"
    assert upper_snake("ＰＥＲＳＯＮ") == "PERSON"  # NFKC


def test_document_normalises_names_and_synonyms() -> None:
    person = SCHEMA.entity_type("person")
    assert person is not None and person.name == "PERSON"
    assert person.synonyms == ("HUMAN", "INDIVIDUAL")
    assert SCHEMA.entity_type("Individual") is person  # a synonym names the type
    assert SCHEMA.relationship_type("Works For") is not None
    assert SCHEMA.entity_type("CITY") is None
    assert SCHEMA.allows("PERSON", "WORKS_FOR", "ORGANIZATION")
    assert not SCHEMA.allows("PERSON", "WORKS_FOR", "PERSON")


@pytest.mark.parametrize(("data", "fragment"), [
    ({"entity_types": [{"name": "A", "colour": "red"}]},
     "entity_types.0.colour: Extra inputs are not permitted"),
    ({"entity_type": []}, "entity_type: Extra inputs are not permitted"),
    ({"entity_types": [7]}, "entity_types.0: Input should be a valid dictionary"),
    ({"entity_types": [{"name": "A"}, {"name": "a"}]}, "entity_types declares A more than once"),
    ({"entity_types": [{"name": "  "}]}, "entity_types.0.name: a type name must not be blank"),
])  # fmt: skip
def test_bad_documents_give_one_line_naming_the_field(data: dict[str, object],
                                                      fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SchemaDocument.model_validate(data)
    message = document_error(caught.value, "schema file s.yaml")
    assert message.startswith("schema file s.yaml: ")
    assert fragment in message and "\n" not in message


def test_patterns_are_checked_against_the_merged_schema() -> None:
    own = SchemaDocument.model_validate({"patterns": [["PERSON", "KNOWS", "B"]]})
    assert own.patterns == (("PERSON", "KNOWS", "B"),)  # another source may declare them
    assert undeclared_in_patterns(own.patterns, SCHEMA) == (
        "patterns.0: relationship type KNOWS is not declared in any schema source")
    assert undeclared_in_patterns([("PERSON", "WORKS_FOR", "B")], SCHEMA) == (
        "patterns.0: target type B is not declared in any schema source")
    assert undeclared_in_patterns(SCHEMA.patterns, SCHEMA) == ""


def test_parents_let_a_kind_fit_its_parents_patterns() -> None:
    doc = SchemaDocument.model_validate({
        "entity_types": ["AGENT", {"name": "PERSON", "parents": "agent"},
                         {"name": "SCIENTIST", "parents": ["PERSON"]}, "ORGANIZATION"],
        "relationship_types": ["WORKS_FOR"],
        "patterns": [["AGENT", "WORKS_FOR", "ORGANIZATION"]],
    })  # fmt: skip
    schema = schema_from_document(doc)
    assert schema.allows("SCIENTIST", "WORKS_FOR", "ORGANIZATION")  # two levels up
    assert not schema.allows("ORGANIZATION", "WORKS_FOR", "SCIENTIST")
    extra = ExtractionSchema(entity_types=(EntityTypeSpec(name="ORGANIZATION",
                                                          parents=("AGENT",)),))
    merged = merge_schemas([schema, extra])
    assert merged.entity_type("ORGANIZATION").parents == ("AGENT",)  # type: ignore[union-attr]
    assert merged.allows("ORGANIZATION", "WORKS_FOR", "ORGANIZATION")


def test_merge_keeps_first_description_and_iri_and_unites_synonyms() -> None:
    first = ExtractionSchema(entity_types=(EntityTypeSpec(name="PERSON", synonyms=("HUMAN",)),))
    second = ExtractionSchema(
        entity_types=(EntityTypeSpec(name="PERSON", description="A human.", iri="urn:p",
                                     synonyms=("PEOPLE",)),
                      EntityTypeSpec(name="CITY")),
        relationship_types=(RelationshipTypeSpec(name="LIVES_IN"),),
        patterns=(("PERSON", "LIVES_IN", "CITY"),),
        name_synonyms=(("NYC", "New York City"),),
    )  # fmt: skip
    merged = merge_schemas([first, second])
    assert [t.name for t in merged.entity_types] == ["PERSON", "CITY"]
    person = merged.entity_types[0]
    assert (person.description, person.iri, person.synonyms) == ("A human.", "urn:p",
                                                                 ("HUMAN", "PEOPLE"))
    assert merged.patterns == (("PERSON", "LIVES_IN", "CITY"),)
    assert merged.name_synonyms == (("NYC", "New York City"),)
    assert merged.fingerprint != merge_schemas([second, first]).fingerprint


def test_align_by_name_exact_synonym_then_similarity() -> None:
    candidates = entity_candidates(SCHEMA)
    assert align_by_name("organization", candidates) == "ORGANIZATION"
    assert align_by_name("HUMAN", candidates) == "PERSON"
    assert align_by_name("ORGANISATION", candidates) == "ORGANIZATION"  # similarity
    assert align_by_name("PERSONS", candidates) == "PERSON"
    assert align_by_name("CITY", candidates) is None  # nothing close enough
    assert align_by_name("CITY", candidates, threshold=0) is not None


def test_strict_drops_off_schema_items_and_pattern_violations() -> None:
    out, report = conform_records([("u1", UNIT)], SCHEMA, "strict")
    (_, kept), = out
    assert [(e.name, e.type) for e in kept.entities] == [("Ada", "PERSON"), ("Bob", "PERSON")]
    # Ada->Acme and Ada->Paris lose an endpoint, Bob->Ada breaks the patterns,
    # Bob->Acme loses its endpoint too
    assert kept.relationships == ()
    assert report.entities.model_dump() == {"conforming": 2, "aligned": 0, "dropped": 2,
                                            "flagged": 0}
    assert report.relationships.dropped == 4 and report.pattern_violations == 1
    # each statement counted once: the pattern-violating Bob->Ada is not also conforming
    assert report.relationships.model_dump() == {"conforming": 0, "aligned": 0, "dropped": 4,
                                                 "flagged": 0}
    assert report.off_schema_entity_types == {"CITY": 1, "ORGANISATION": 1}
    # VISITED is off-schema though Ada->Paris was dropped for its endpoint first
    assert report.off_schema_relationship_types == {"VISITED": 1}
    assert UNIT.entities[1].type == "ORGANISATION"  # the stored record is untouched


def test_align_maps_by_name_and_flags_what_it_cannot() -> None:
    records = [("u1", UNIT)]
    alignment = name_alignment(records, SCHEMA)
    assert alignment.entity_types == {"ORGANISATION": "ORGANIZATION"}
    assert alignment.relationship_types == {}  # VISITED is like nothing declared
    out, report = conform_records(records, SCHEMA, "align", alignment)
    types = {e.name: e.type for e in out[0][1].entities}
    assert types == {"Ada": "PERSON", "Acme": "ORGANIZATION", "Paris": "CITY", "Bob": "PERSON"}
    assert [r.type for r in out[0][1].relationships] == ["WORKS_FOR", "WORKS_FOR", "VISITED",
                                                          "WORKS_FOR"]
    assert report.entities.model_dump() == {"conforming": 2, "aligned": 1, "dropped": 0,
                                            "flagged": 1}
    assert report.relationships.flagged == 1 and report.pattern_violations == 1
    assert report.aligned_by == "name"


def test_open_keeps_everything_and_flags() -> None:
    out, report = conform_records([("u1", UNIT)], SCHEMA, "open")
    assert len(out[0][1].entities) == 4 and len(out[0][1].relationships) == 4
    assert report.entities.flagged == 2 and report.relationships.flagged == 1
    assert report.off_schema_relationship_types == {"VISITED": 1}


def test_a_kind_without_declared_types_conforms() -> None:
    schema = ExtractionSchema(entity_types=(EntityTypeSpec(name="PERSON", synonyms=("HUMAN",)),))
    out, report = conform_records([("u1", UNIT)], schema, "strict")
    # Bob -> Ada is kept whatever its type; the three naming Acme or Paris lose an endpoint
    assert report.relationships.model_dump() == {"conforming": 1, "aligned": 0, "dropped": 3,
                                                 "flagged": 0}
    assert [(r.source, r.type) for r in out[0][1].relationships] == [("Bob", "WORKS_FOR")]


def test_annotations_from_merged_types() -> None:
    entities = annotate_entities([
        Entity(id="1", name="Ada", type="PERSON"), Entity(id="2", name="Paris", type="CITY"),
        Entity(id="3", name="Acme", type="organization"),
    ], SCHEMA)  # fmt: skip
    assert [(e.in_schema, e.type_iri) for e in entities] == [
        (True, "https://schema.org/Person"), (False, None), (True, None)]
    rels = annotate_relationships([
        Relationship(id="r", source_id="1", target_id="3", type="WORKS_FOR"),
        Relationship(id="s", source_id="1", target_id="2", type="VISITED"),
    ], SCHEMA)  # fmt: skip
    assert [(r.in_schema, r.predicate_iri) for r in rels] == [
        (True, "https://schema.org/worksFor"), (False, None)]
    # unset annotations are not dumped: items stored without a schema stay as they were
    assert "in_schema" not in Entity(id="1", name="Ada").model_dump_json()
    assert '"in_schema":true' in entities[0].model_dump_json()


def test_prompt_block_lists_types_and_patterns_without_placeholders() -> None:
    schema = ExtractionSchema(entity_types=(
        EntityTypeSpec(name="PERSON", description="Named in {text} like {entity_types}."),))
    block = schema_prompt_block(schema)
    assert "{text}" not in block and "(text)" in block
    full = schema_prompt_block(SCHEMA)
    assert "- PERSON: A human being." in full
    assert "- WORKS_FOR: Employment." in full
    assert "- PERSON WORKS_FOR ORGANIZATION" in full
    assert "schema.org" not in full  # IRIs are not part of the prompt


def test_alignment_reply_reads_only_asked_labels_and_declared_targets() -> None:
    messages = render_alignment_messages(["CITY", "FIRM"], ["VISITED"], SCHEMA,
                                         load_prompt("align_schema_types.v1"))
    assert "CITY\nFIRM" in messages[-1].content and "- PERSON: A human being." in \
        messages[0].content
    reply = ('Sure: {"entity_types": {"city": "location", "FIRM": "ORGANIZATION", '
             '"OTHER": "PERSON", "X": null}, "relationship_types": {"VISITED": "TRAVELLED"}}')
    alignment = parse_alignment_reply(reply, ["CITY", "FIRM"], ["VISITED"], SCHEMA)
    assert alignment.entity_types == {"CITY": "LOCATION", "FIRM": "ORGANIZATION"}
    assert alignment.relationship_types == {} and alignment.by == "llm"
    assert alignment.unmatched == {}  # "X" was not asked
    with pytest.raises(ValueError, match="no JSON object"):
        parse_alignment_reply("no idea", ["CITY"], [], SCHEMA)
    refused = parse_alignment_reply('{"entity_types": {"organisation": null}}',
                                    ["ORGANISATION", "CITY"], [], SCHEMA)
    assert refused.entity_types == {} and refused.unmatched == {"entity_types": ["ORGANISATION"]}


@pytest.mark.parametrize("mode", ["open", "strict", "align"])
def test_counts_add_up_to_the_statements(mode: str) -> None:
    records = [("u1", UNIT), ("u2", record("f2", [ent("Eve", "PERSON"), ent("Max", "PERSON")],
                                           [rel("Eve", "Max", "WORKS_FOR"),
                                            rel("Max", "Eve", "KNOWS")]))]  # fmt: skip
    _, report = conform_records(records, SCHEMA, mode, name_alignment(records, SCHEMA))  # type: ignore[arg-type]
    for counts, statements in ((report.entities, 6), (report.relationships, 6)):
        assert sum(counts.model_dump().values()) == statements
    assert report.pattern_violations == 2  # Bob->Ada, Eve->Max: PERSON WORKS_FOR PERSON


def test_resolution_merges_names_through_synonyms() -> None:
    records = [
        ("u1", record("a", [ent("New York City", "PLACE"), ent("Ada", "PERSON")],
                      [rel("Ada", "NYC", "LIVES_IN")])),
        ("u2", record("b", [ent("NYC", "PLACE"), ent("Big Apple", "PLACE")])),
    ]
    plain = resolve_graph(records)
    assert len(plain.entities) == 4
    synonyms = {entity_key("NYC"): entity_key("New York City"),
                entity_key("Big Apple"): entity_key("New York City")}
    merged = resolve_graph(records, synonyms=synonyms)
    assert len(merged.entities) == 2 and merged.merges["synonym"] == 2
    city = next(e for e in merged.entities if e.type == "PLACE")
    assert city.text_unit_ids == ("u1", "u2")
    (edge,) = merged.relationships
    assert edge.target_id == city.id
    assert merged.key_to_entity_id[entity_key("nyc")] == city.id
    assert (city.name, city.id) == ("New York City", entity_id("New York City"))
    # order-free: the same statements in another order give the same graph
    assert resolve_graph(records[::-1], synonyms=synonyms).entities == merged.entities
    assert "synonym" not in plain.merges


def test_patterns_constrain_only_the_types_they_name() -> None:
    schema = ExtractionSchema(
        entity_types=(EntityTypeSpec(name="PERSON"), EntityTypeSpec(name="CITY")),
        relationship_types=(RelationshipTypeSpec(name="BORN_IN"),
                            RelationshipTypeSpec(name="KNOWS")),
        patterns=(("PERSON", "BORN_IN", "CITY"),),
    )  # fmt: skip
    assert schema.allows("CITY", "KNOWS", "PERSON")  # no pattern names KNOWS
    assert not schema.allows("CITY", "BORN_IN", "PERSON")
    unit = record("f", [ent("Ada", "PERSON"), ent("London", "CITY")],
                  [rel("London", "Ada", "KNOWS"), rel("London", "Ada", "BORN_IN"),
                   rel("Ada", "London", "BORN_IN")])  # fmt: skip
    out, report = conform_records([("u", unit)], schema, "strict")
    assert [(r.source, r.type) for r in out[0][1].relationships] == [
        ("London", "KNOWS"), ("Ada", "BORN_IN")]
    assert report.pattern_violations == 1


def test_name_alignment_ignores_partial_matches() -> None:
    candidates = {"LOCATED_IN": "LOCATED_IN", "BORN_ON": "BORN_ON"}
    assert align_by_name("IS_LOCATED_IN", candidates) == "LOCATED_IN"
    assert align_by_name("IN", candidates) is None
    assert align_by_name("IS", candidates) is None
