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
     "schema file {d}/s.yaml: patterns.0: relationship type KNOWS is not declared"),
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
    tmp_path: Path, files: dict[str, str], source: dict[str, object], fragment: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        _load(tmp_path, source)
    message = str(caught.value)
    assert fragment.format(d=tmp_path) in message
    assert "\n" not in message


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


def test_skos_labels_become_type_synonyms_and_name_synonyms(tmp_path: Path) -> None:
    (tmp_path / "places.ttl").write_text(SKOS_TTL, encoding="utf-8")
    schema = _load(tmp_path, {"kind": "skos", "path": "places.ttl"})
    assert schema is not None
    la, nyc = schema.entity_types
    assert (nyc.name, nyc.iri) == ("NEW_YORK_CITY", "http://example.org/places/nyc")
    assert nyc.description == "The most populous city of the United States."
    assert nyc.synonyms == ("BIG_APPLE", "N_Y_C", "NYC", "NUEVA_YORK")  # labels sorted
    assert la.synonyms == ("LA",)
    assert dict(schema.name_synonyms) == {
        "LA": "Los Angeles", "Big Apple": "New York City", "N.Y.C.": "New York City",
        "NYC": "New York City", "Nueva York": "New York City",
    }
    off = _load(tmp_path, {"kind": "skos", "path": "places.ttl", "name_synonyms": False})
    assert off is not None and off.name_synonyms == ()


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
