"""Schema sources: inline YAML, a YAML file, OWL/RDFS/SKOS ontologies (real files, rdflib)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import FOAF, OWL, RDF, RDFS

from unified_kg_rag.adapters.registry import SCHEMA_SOURCES
from unified_kg_rag.adapters.schema_sources import load_extraction_schema
from unified_kg_rag.config.graph import ExtractionConfig
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.extraction.schema import schema_prompt_block
from unified_kg_rag.domain.extraction.schema_conformance import conform_records
from unified_kg_rag.util.errors import ConfigurationError

SCHEMA_YAML = """\
entity_types:
  - name: PERSON
    description: A human being.
    iri: https://schema.org/Person
    synonyms: [HUMAN, INDIVIDUAL]
  - name: ORGANIZATION
    description: A company.
relationship_types:
  - name: WORKS_FOR
    description: The source is employed by the target.
    iri: https://schema.org/worksFor
patterns:
  - [PERSON, WORKS_FOR, ORGANIZATION]
"""

OWL_TTL = """\
@prefix : <http://example.org/onto#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

:Person a owl:Class ; rdfs:label "Person"@en, "Personne"@fr ;
    rdfs:comment "A human being."@en .
:ResearchInstitute a owl:Class ; rdfs:label "research institute" .
:Country a rdfs:Class .
:worksFor a owl:ObjectProperty ; rdfs:label "works for"@en ;
    rdfs:comment "Employment." ; rdfs:domain :Person ; rdfs:range :ResearchInstitute .
:locatedIn a owl:ObjectProperty ; rdfs:domain :ResearchInstitute, :Person ;
    rdfs:range :Country .
:birthDate a owl:DatatypeProperty ; rdfs:domain :Person ; rdfs:range xsd:date .
:nickname a rdf:Property ; rdfs:range rdfs:Literal .
[] a owl:Class ; owl:unionOf ( :Person :Country ) .
"""

SKOS_TTL = """\
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <http://example.org/places/> .

ex:nyc a skos:Concept ; skos:prefLabel "New York City"@en, "Nueva York"@es ;
    skos:altLabel "NYC"@en, "Big Apple"@en ; skos:hiddenLabel "N.Y.C." ;
    skos:definition "The most populous city of the United States."@en .
ex:la a skos:Concept ; skos:prefLabel "Los Angeles"@en ; skos:altLabel "LA" .
"""


def _load(project: Path, *sources: dict[str, object]):  # type: ignore[no-untyped-def]
    config = ExtractionConfig.model_validate({"schema_sources": list(sources)})
    return load_extraction_schema(config, project)


def test_no_source_is_no_schema(tmp_path: Path) -> None:
    assert load_extraction_schema(ExtractionConfig(), tmp_path) is None


def test_yaml_file_and_inline_sources_merge(tmp_path: Path) -> None:
    (tmp_path / "schema.yaml").write_text(SCHEMA_YAML, encoding="utf-8")
    schema = _load(
        tmp_path, {"kind": "file", "path": "schema.yaml"},
        {"kind": "inline", "entity_types": [{"name": "person", "description": "ignored"},
                                            {"name": "city"}]},
    )  # fmt: skip
    assert schema is not None
    assert [t.name for t in schema.entity_types] == ["PERSON", "ORGANIZATION", "CITY"]
    assert schema.entity_types[0].description == "A human being."
    assert schema.entity_types[0].synonyms == ("HUMAN", "INDIVIDUAL")
    assert schema.relationship_types[0].iri == "https://schema.org/worksFor"
    assert schema.patterns == (("PERSON", "WORKS_FOR", "ORGANIZATION"),)


def test_inline_source_from_ukr_yaml_shape() -> None:
    config = UkrConfig.model_validate({"graph": {"extraction": {
        "schema_mode": "strict",
        "schema_sources": [{"kind": "inline", "entity_types": [{"name": "PERSON"}],
                            "relationship_types": [{"name": "KNOWS"}],
                            "patterns": [["PERSON", "KNOWS", "PERSON"]]}],
    }}})  # fmt: skip
    schema = load_extraction_schema(config.graph.extraction, None)
    assert schema is not None and schema.allows("PERSON", "KNOWS", "PERSON")


@pytest.mark.parametrize(("files", "source", "fragment"), [
    ({}, {"kind": "file", "path": "missing.yaml"}, "schema file {d}/missing.yaml not found"),
    ({"s.yaml": "entity_types: [\n  - name: A\n"}, {"kind": "file", "path": "s.yaml"},
     "schema file {d}/s.yaml: invalid YAML at line"),
    ({"s.yaml": "entity_types:\n  - name: A\n    colour: red\n"},
     {"kind": "file", "path": "s.yaml"},
     "schema file {d}/s.yaml: entity_types.0.colour: Extra inputs are not permitted"),
    ({"s.yaml": "entity_types:\n  - name: A\npatterns:\n  - [A, KNOWS, B]\n"},
     {"kind": "file", "path": "s.yaml"},
     "schema file {d}/s.yaml: patterns.0: relationship type KNOWS is not declared in any "
     "schema source"),
    ({"sub": None}, {"kind": "file", "path": "sub"}, "schema file {d}/sub is a folder"),
    ({"s.yaml": ""}, {"kind": "file", "path": "s.yaml"},
     "the extraction schema declares no entity type, no relationship type and no name "
     "synonym"),
    ({"s.yaml": "entity_types: [A]\n"}, {"kind": "inline", "path": "s.yaml"},
     "graph.extraction.schema_sources.0.path: schema source kind 'inline' reads no file"),
    ({"s.yaml": "entity_types: [A]\n"},
     {"kind": "file", "path": "s.yaml", "entity_types": ["B"]},
     "graph.extraction.schema_sources.0.entity_types: schema source kind 'file' reads its "
     "schema from path; entity_types belongs to kind 'inline'"),
    ({"v.ttl": "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n<http://e/a> a "
               "skos:Concept ; skos:prefLabel \"Zürich\" ; skos:altLabel Zurich .\n"},
     {"kind": "skos", "path": "v.ttl"}, "cannot parse ontology {d}/v.ttl as turtle: at line 2: "
     "Bad syntax (objectList expected) at ^ in: \".../a> a skos:Concept ; skos:prefLabel "
     "\"Zürich\""),
    ({"s.yaml": "- PERSON\n"}, {"kind": "file", "path": "s.yaml"},
     "schema file {d}/s.yaml: expected a mapping"),
    ({"o.ttl": "@prefix : <http://x/> .\n:A a :B .\n:C :d \"unterminated ."}, {"kind": "owl", "path": "o.ttl"},
     "cannot parse ontology {d}/o.ttl as turtle:"),
    ({"o.data": ""}, {"kind": "owl", "path": "o.data"}, "cannot tell the RDF syntax of"),
    ({}, {"kind": "skos"}, "schema source kind 'skos' needs a path"),
    ({}, {"kind": "inline", "entity_types": [{"name": "A"}], "patterns": [["A", "R", "A"]]},
     "graph.extraction.schema_sources.0: patterns.0: relationship type R is not declared"),
    ({}, {"kind": "shacl", "path": "x"}, "unknown schema source 'shacl'; registered: file, "
     "inline, owl, rdfs, skos"),
])  # fmt: skip
def test_bad_sources_give_one_line_naming_the_file_or_field(
    tmp_path: Path, files: dict[str, str | None], source: dict[str, object], fragment: str
) -> None:
    for name, text in files.items():
        if text is None:
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        _load(tmp_path, source)
    message = str(caught.value)
    assert fragment.format(d=tmp_path) in message
    assert "\n" not in message and "b'" not in message and 'b"' not in message


def test_owl_classes_properties_and_patterns(tmp_path: Path) -> None:
    (tmp_path / "onto.ttl").write_text(OWL_TTL, encoding="utf-8")
    schema = _load(tmp_path, {"kind": "owl", "path": "onto.ttl"})
    assert schema is not None
    # sorted by IRI; labels in the preferred language, else the local name
    assert [(t.name, t.description, t.iri) for t in schema.entity_types] == [
        ("COUNTRY", "", "http://example.org/onto#Country"),
        ("PERSON", "A human being.", "http://example.org/onto#Person"),
        ("RESEARCH_INSTITUTE", "", "http://example.org/onto#ResearchInstitute"),
    ]
    # literal-valued properties are no relationship types
    assert [(t.name, t.iri) for t in schema.relationship_types] == [
        ("LOCATED_IN", "http://example.org/onto#locatedIn"),
        ("WORKS_FOR", "http://example.org/onto#worksFor"),
    ]
    assert schema.relationship_types[1].description == "Employment."
    assert schema.patterns == (
        ("PERSON", "LOCATED_IN", "COUNTRY"), ("RESEARCH_INSTITUTE", "LOCATED_IN", "COUNTRY"),
        ("PERSON", "WORKS_FOR", "RESEARCH_INSTITUTE"),
    )
    french = _load(tmp_path, {"kind": "rdfs", "path": "onto.ttl", "language": "fr"})
    assert french is not None and french.entity_types[1].name == "PERSONNE"


def test_skos_gives_name_synonyms_not_entity_types(tmp_path: Path) -> None:
    (tmp_path / "places.ttl").write_text(SKOS_TTL, encoding="utf-8")
    schema = _load(tmp_path, {"kind": "skos", "path": "places.ttl"})
    assert schema is not None
    # a thesaurus of places is no list of entity types
    assert schema.entity_types == () and not schema.declares_types
    assert dict(schema.name_synonyms) == {
        "LA": "Los Angeles", "Big Apple": "New York City", "N.Y.C.": "New York City",
        "NYC": "New York City", "Nueva York": "New York City",
    }
    with pytest.raises(ConfigurationError, match="declares no entity type"):
        _load(tmp_path, {"kind": "skos", "path": "places.ttl", "name_synonyms": False})


def test_skos_labels_of_a_concept_declared_a_class_are_type_synonyms(tmp_path: Path) -> None:
    (tmp_path / "onto.ttl").write_text(OWL_TTL, encoding="utf-8")
    (tmp_path / "kinds.ttl").write_text(
        "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n"
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "<http://example.org/onto#Person> a skos:Concept, owl:Class ; "
        "skos:prefLabel \"Person\"@en ; skos:altLabel \"Human\"@en, \"Individual\" .\n"
        "<http://example.org/x/nyc> a skos:Concept ; skos:prefLabel \"New York City\" .\n",
        encoding="utf-8")
    schema = _load(tmp_path, {"kind": "owl", "path": "onto.ttl"},
                   {"kind": "skos", "path": "kinds.ttl"})
    assert schema is not None
    assert [t.name for t in schema.entity_types] == ["COUNTRY", "PERSON", "RESEARCH_INSTITUTE"]
    person = schema.entity_type("human")
    assert person is not None and person.name == "PERSON"
    assert person.synonyms == ("HUMAN", "INDIVIDUAL")


def test_skos_alias_that_names_another_concept_is_no_synonym(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "v.ttl").write_text(
        "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n@prefix ex: <http://e/> .\n"
        "ex:ibm a skos:Concept ; skos:prefLabel \"IBM\"@en .\n"
        "ex:ibm701 a skos:Concept ; skos:prefLabel \"IBM 701\"@en ; skos:altLabel \"IBM\", "
        "\"Defense Calculator\" .\n"
        "ex:a a skos:Concept ; skos:prefLabel \"Apple Inc.\" ; skos:altLabel \"Apple\" .\n"
        "ex:b a skos:Concept ; skos:prefLabel \"Apple Records\" ; skos:altLabel \"Apple\" .\n",
        encoding="utf-8")
    with caplog.at_level("WARNING"):
        schema = _load(tmp_path, {"kind": "skos", "path": "v.ttl"})
    assert schema is not None
    # IBM is a concept of its own; Apple is claimed by two concepts
    assert dict(schema.name_synonyms) == {"Defense Calculator": "IBM 701"}
    assert "2 alias name(s) left out" in caplog.text and "APPLE, IBM" in caplog.text


def test_a_vocabulary_whose_only_aliases_are_left_out_indexes_without_a_schema(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "v.ttl").write_text(
        "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n@prefix ex: <http://e/> .\n"
        "ex:ibm a skos:Concept ; skos:prefLabel \"IBM\" .\n"
        "ex:ibm701 a skos:Concept ; skos:prefLabel \"IBM 701\" ; skos:altLabel \"IBM\" .\n",
        encoding="utf-8")
    with caplog.at_level("WARNING"):
        assert _load(tmp_path, {"kind": "skos", "path": "v.ttl"}) is None
    assert "extraction runs without a schema" in caplog.text
    # an empty YAML schema is still an error: nothing there was left out
    (tmp_path / "s.yaml").write_text("entity_types: []\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="declares no entity type"):
        _load(tmp_path, {"kind": "file", "path": "s.yaml"})


def test_subclasses_fit_the_patterns_of_their_parents(tmp_path: Path) -> None:
    (tmp_path / "o.ttl").write_text(
        "@prefix : <http://e/> .\n@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        ":Agent a owl:Class . :Person a owl:Class ; rdfs:subClassOf :Agent .\n"
        ":Scientist a owl:Class ; rdfs:subClassOf :Person .\n"
        ":Organization a owl:Class . :Company a owl:Class ; rdfs:subClassOf :Organization .\n"
        ":worksFor a owl:ObjectProperty ; rdfs:domain :Agent ; rdfs:range :Organization .\n",
        encoding="utf-8")
    schema = _load(tmp_path, {"kind": "owl", "path": "o.ttl"})
    assert schema is not None
    assert schema.allows("PERSON", "WORKS_FOR", "ORGANIZATION")
    assert schema.allows("SCIENTIST", "WORKS_FOR", "COMPANY")  # transitive
    assert not schema.allows("ORGANIZATION", "WORKS_FOR", "PERSON")
    # the ontology's one pattern is kept as stated; the hierarchy is read at check time
    assert schema.patterns == (("AGENT", "WORKS_FOR", "ORGANIZATION"),)
    assert {t.name: t.parents for t in schema.entity_types} == {
        "AGENT": (), "COMPANY": ("ORGANIZATION",), "ORGANIZATION": (), "PERSON": ("AGENT",),
        "SCIENTIST": ("PERSON",)}
    assert "- SCIENTIST (a kind of PERSON)" in schema_prompt_block(schema)
    # strict keeps John Backus WORKS_FOR IBM (PERSON -> ORGANIZATION)
    unit = ExtractionRecord(fingerprint="f", entities=(
        ExtractedEntity(name="John Backus", type="PERSON"),
        ExtractedEntity(name="IBM", type="ORGANIZATION")), relationships=(
        ExtractedRelationship(source="John Backus", target="IBM", type="WORKS_FOR"),))
    out, report = conform_records([("u", unit)], schema, "strict")
    assert len(out[0][1].relationships) == 1 and report.pattern_violations == 0


def test_labels_match_the_primary_language_subtag_and_lang_strings_are_literals(
    tmp_path: Path,
) -> None:
    (tmp_path / "o.ttl").write_text(
        "@prefix : <http://e/> .\n@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        ":Person a owl:Class ; rdfs:label \"Mensch\"@de, \"Person\"@en-GB .\n"
        ":name a rdf:Property ; rdfs:domain :Person ; rdfs:range rdf:langString .\n"
        ":motto a owl:ObjectProperty ; rdfs:range rdf:PlainLiteral .\n"
        ":knows a owl:ObjectProperty ; rdfs:domain :Person ; rdfs:range :Person .\n",
        encoding="utf-8")
    schema = _load(tmp_path, {"kind": "owl", "path": "o.ttl"})
    assert schema is not None
    assert [t.name for t in schema.entity_types] == ["PERSON"]
    assert [t.name for t in schema.relationship_types] == ["KNOWS"]
    german = _load(tmp_path, {"kind": "owl", "path": "o.ttl", "language": "de-AT"})
    assert german is not None and german.entity_types[0].name == "MENSCH"


def test_patterns_may_name_types_of_another_source(tmp_path: Path) -> None:
    (tmp_path / "onto.ttl").write_text(OWL_TTL, encoding="utf-8")
    (tmp_path / "p.yaml").write_text("patterns:\n  - [COUNTRY, LOCATED_IN, COUNTRY]\n",
                                     encoding="utf-8")
    schema = _load(tmp_path, {"kind": "owl", "path": "onto.ttl"},
                   {"kind": "file", "path": "p.yaml"})
    assert schema is not None and schema.allows("COUNTRY", "LOCATED_IN", "COUNTRY")


def test_shorthand_names_and_a_single_synonym(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "entity_types:\n  - PERSON\n  - {name: ORGANIZATION, synonyms: company}\n"
        "relationship_types: [works for]\npatterns:\n  - [PERSON, WORKS_FOR, ORGANIZATION]\n",
        encoding="utf-8")
    schema = _load(tmp_path, {"kind": "file", "path": "s.yaml"})
    assert schema is not None
    assert [(t.name, t.synonyms) for t in schema.entity_types] == [
        ("PERSON", ()), ("ORGANIZATION", ("COMPANY",))]
    assert [t.name for t in schema.relationship_types] == ["WORKS_FOR"]
    inline = _load(tmp_path, {"kind": "inline", "entity_types": ["PERSON", "CITY"],
                              "relationship_types": ["BORN_IN"]})
    assert inline is not None and inline.entity_type_names() == ["PERSON", "CITY"]


def test_two_sources_describing_one_type_differently_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING"):
        schema = _load(tmp_path,
                       {"kind": "inline", "entity_types": [{"name": "PERSON",
                                                            "description": "A human."}]},
                       {"kind": "inline", "entity_types": [{"name": "person",
                                                            "description": "Anyone."}]})
    assert schema is not None and schema.entity_types[0].description == "A human."
    assert "entity type PERSON with different descriptions ('A human.', 'Anyone.')" in \
        caplog.text


def test_public_ontology_generated_from_rdflibs_bundled_foaf(tmp_path: Path) -> None:
    """FOAF's terms as rdflib ships them (no download): classes capitalised, properties not."""
    graph = Graph()
    terms = sorted(str(t).rsplit("/", 1)[1] for t in dir(FOAF))
    for term in terms:
        iri = URIRef(FOAF[term])
        if term[0].isupper():
            graph.add((iri, RDF.type, OWL.Class))
        else:
            graph.add((iri, RDF.type, OWL.ObjectProperty))
        graph.add((iri, RDFS.label, Literal(term, lang="en")))
    # the FOAF specification's domain and range of foaf:knows and foaf:member
    graph.add((FOAF.knows, RDFS.domain, FOAF.Person))
    graph.add((FOAF.knows, RDFS.range, FOAF.Person))
    graph.add((FOAF.member, RDFS.domain, FOAF.Group))
    graph.add((FOAF.member, RDFS.range, FOAF.Agent))
    graph.serialize(tmp_path / "foaf.rdf", format="xml")
    schema = _load(tmp_path, {"kind": "owl", "path": "foaf.rdf"})
    assert schema is not None
    classes = [t for t in terms if t[0].isupper()]
    assert len(schema.entity_types) == len(classes) >= 10
    names = {t.name for t in schema.entity_types}
    assert {"PERSON", "ORGANIZATION", "ONLINE_ACCOUNT", "AGENT", "GROUP"} <= names
    person = schema.entity_type("person")
    assert person is not None and person.iri == "http://xmlns.com/foaf/0.1/Person"
    assert schema.relationship_type("knows") is not None
    assert set(schema.patterns) == {("PERSON", "KNOWS", "PERSON"), ("GROUP", "MEMBER", "AGENT")}


def test_registry_lists_the_builtin_kinds() -> None:
    assert SCHEMA_SOURCES.names() == ["file", "inline", "owl", "rdfs", "skos"]
