"""The extraction schema in a real graph build: OpenAI-compatible server on 127.0.0.1, SQLite.

The scripted model answers with off-schema types (``ORGANISATION``, ``CITY``, ``BASED_IN``)
and names a city by its SKOS ``altLabel``; the tests check what ``open``, ``strict`` and
``align`` (by name and with the LLM) store, that changing the mode re-annotates with zero
extraction calls, and that without a schema the extraction prompt and its fingerprint are
what they were before schemas existed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.models import Entity, Relationship
from unified_kg_rag.ingestion.graph.build import graph_extractor
from unified_kg_rag.ingestion.graph.report import GraphBuildReport
from unified_kg_rag.ingestion.pipeline import IndexPipeline

pytestmark = pytest.mark.integration

DOCS = {
    "ada.txt": "Ada Lovelace worked for the Analytical Society, based in London.",
    "nyc.txt": "NYC is large. Acme is located in New York City.",
}

SCHEMA = """\
entity_types:
  - {name: PERSON, description: A human being., iri: "https://schema.org/Person"}
  - {name: ORGANIZATION, description: A company or society.}
  - {name: LOCATION, description: A place., iri: "https://schema.org/Place"}
relationship_types:
  - {name: WORKS_FOR, description: Employment., iri: "https://schema.org/worksFor"}
  - {name: LOCATED_IN, description: Where an organization is.}
patterns:
  - [PERSON, WORKS_FOR, ORGANIZATION]
  - [ORGANIZATION, LOCATED_IN, LOCATION]
"""

PLACES = """\
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
<http://example.org/nyc> a skos:Concept ; skos:prefLabel "New York City"@en ;
    skos:altLabel "NYC"@en .
"""


def _entity(name: str, kind: str) -> str:
    return (f"<entity><name>{name}</name><type>{kind}</type><description>{name}.</description>"
            f"<confidence>8</confidence><span>{name}</span></entity>")


def _rel(source: str, target: str, kind: str) -> str:
    return (f"<relationship><source>{source}</source><target>{target}</target><type>{kind}"
            f"</type><description>{source} {kind} {target}.</description><strength>8"
            f"</strength><span></span></relationship>")


REPLIES = {
    "Ada Lovelace worked": (
        [("Ada Lovelace", "PERSON"), ("Analytical Society", "ORGANISATION"), ("London", "CITY")],
        [("Ada Lovelace", "Analytical Society", "WORKS_FOR"),
         ("Analytical Society", "London", "BASED_IN")],
    ),
    "NYC is large": (
        [("NYC", "LOCATION"), ("Acme", "ORGANIZATION"), ("New York City", "LOCATION")],
        [("Acme", "New York City", "LOCATED_IN")],
    ),
}  # fmt: skip

ALIGN = {"entity_types": {"CITY": "LOCATION", "ORGANISATION": "ORGANIZATION"},
         "relationship_types": {"BASED_IN": "LOCATED_IN"}}  # fmt: skip


def _user(body: dict[str, Any]) -> str:
    return "\n".join(m.get("content", "") for m in body["messages"] if m.get("role") == "user")


def _system(body: dict[str, Any]) -> str:
    return "\n".join(m.get("content", "") for m in body["messages"] if m.get("role") == "system")


def reply(body: dict[str, Any]) -> str:
    text = _user(body)
    if "Map these extracted entity types" in text:
        return "Here you are:\n" + json.dumps(ALIGN)
    if "<current_items>" in text:
        return "<entities>None</entities>\n<relationships>None</relationships>"
    for marker, (ents, rels) in REPLIES.items():
        if marker in text:
            return ("<entities>\n" + "\n".join(_entity(*e) for e in ents) + "\n</entities>\n"
                    "<relationships>\n" + "\n".join(_rel(*r) for r in rels)
                    + "\n</relationships>")
    return "<entities>None</entities>\n<relationships>None</relationships>"


def _config(server: FakeOpenAIServer, **extraction: Any) -> UkrConfig:
    return UkrConfig.model_validate({
        "llm": {"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"},
                "retry_initial_s": 0.01, "retry_max_s": 0.05},
        "indexing": {"methodologies": ["lightrag"]},
        "graph": {"extraction": extraction},
    })  # fmt: skip


SOURCES = [{"kind": "file", "path": "schema.yaml"}, {"kind": "skos", "path": "places.ttl"}]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "p"
    project.mkdir()
    (project / "schema.yaml").write_text(SCHEMA, encoding="utf-8")
    (project / "places.ttl").write_text(PLACES, encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    return project, corpus


async def _build(app: App, corpus: Path) -> GraphBuildReport:
    pipeline = IndexPipeline(
        app.index("default"), embedder=FakeEmbedder(), chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
        extraction_schema=app.extraction_schema(),
    )  # fmt: skip
    report = await pipeline.run([corpus])
    assert report.graph is not None and not report.graph.error
    return report.graph


async def _graph(app: App) -> tuple[dict[str, Entity], list[Relationship]]:
    stores = app.index("default")
    ids = [entity_id(n) for n in ("Ada Lovelace", "Analytical Society", "London", "NYC",
                                  "New York City", "Acme")]  # fmt: skip
    entities = {e.name: e for e in await stores.graph.get_entities(ids)}
    edges = await stores.graph.edges_within([e.id for e in entities.values()])
    return entities, sorted(edges, key=lambda r: r.type)


def _extraction_calls(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests_to("/chat/completions")
            if "Extract the entities" in _user(r.body)]  # fmt: skip


def _alignment_calls(server: FakeOpenAIServer) -> int:
    return sum("Map these extracted" in _user(r.body)
               for r in server.requests_to("/chat/completions"))  # fmt: skip


def test_modes_reannotate_without_extracting_again(tmp_path: Path) -> None:
    project, corpus = _project(tmp_path)

    async def run(server: FakeOpenAIServer, **extraction: Any) -> dict[str, Any]:
        config = _config(server, schema_sources=SOURCES, **extraction)
        async with build_app(config, project) as app:
            report = await _build(app, corpus)
            entities, edges = await _graph(app)
            status = await app.status()  # its extractor keys records as the build's does
        assert status.indexes[0].extraction_records_orphaned == 0
        return {"report": report, "entities": entities, "edges": edges,
                "extraction_calls": len(_extraction_calls(server)),
                "alignment_calls": _alignment_calls(server)}  # fmt: skip

    with FakeOpenAIServer(reply=reply) as server:
        opened = asyncio.run(run(server))
        prompt = _extraction_calls(server)[0]
        strict = asyncio.run(run(server, schema_mode="strict"))
        aligned = asyncio.run(run(server, schema_mode="align", schema_align="llm"))
        again = asyncio.run(run(server, schema_mode="align", schema_align="llm"))

    # the schema shapes the prompt: its types replace entity_types, relationship types offered
    system = _system(prompt)
    # the SKOS vocabulary gives names, not types: its concepts are not offered as types
    assert "Entity types: PERSON, ORGANIZATION, LOCATION\n" in system
    assert "NEW_YORK_CITY" not in system
    assert "- WORKS_FOR: Employment." in system and "- PERSON WORKS_FOR ORGANIZATION" in system
    assert "schema.org" not in system

    report = opened["report"]
    assert opened["extraction_calls"] == 2 and report.schema_conformance is not None
    conf = report.schema_conformance
    assert (conf.mode, conf.entities.conforming, conf.entities.flagged) == ("open", 4, 2)
    assert conf.off_schema_entity_types == {"CITY": 1, "ORGANISATION": 1}
    assert conf.off_schema_relationship_types == {"BASED_IN": 1}
    entities = opened["entities"]
    # NYC (the SKOS altLabel) merged into New York City (the prefLabel)
    assert "NYC" not in entities and report.merges["synonym"] == 1
    city = entities["New York City"]
    assert (city.in_schema, city.type_iri) == (True, "https://schema.org/Place")
    assert len(city.text_unit_ids) == 1
    assert (entities["Ada Lovelace"].in_schema, entities["Ada Lovelace"].type_iri) == (
        True, "https://schema.org/Person")
    assert (entities["London"].type, entities["London"].in_schema) == ("CITY", False)
    assert [(r.type, r.in_schema, r.predicate_iri) for r in opened["edges"]] == [
        ("BASED_IN", False, None), ("LOCATED_IN", True, None),
        ("WORKS_FOR", True, "https://schema.org/worksFor")]

    # strict: rebuilt from the stored records, zero extraction calls
    assert strict["extraction_calls"] == 2 and not strict["report"].skipped_reason
    assert strict["report"].records_reused == 2 and strict["report"].units_extracted == 0
    assert set(strict["entities"]) == {"Ada Lovelace", "Acme", "New York City"}
    assert [r.type for r in strict["edges"]] == ["LOCATED_IN"]
    sconf = strict["report"].schema_conformance
    assert sconf is not None and sconf.entities.dropped == 2 and sconf.relationships.dropped == 2

    # align with the LLM: one alignment call for the build, no extraction call
    assert aligned["extraction_calls"] == 2 and aligned["alignment_calls"] == 1
    ents = aligned["entities"]
    assert (ents["London"].type, ents["London"].in_schema) == ("LOCATION", True)
    assert ents["Analytical Society"].type == "ORGANIZATION"
    assert [r.type for r in aligned["edges"]] == ["LOCATED_IN", "LOCATED_IN", "WORKS_FOR"]
    aconf = aligned["report"].schema_conformance
    assert aconf is not None and aconf.aligned_by == "llm"
    assert (aconf.entities.aligned, aconf.relationships.aligned) == (2, 1)
    # unchanged inputs: skipped, nothing asked
    assert again["report"].skipped_reason and again["alignment_calls"] == 1


def test_failed_llm_alignment_falls_back_to_names(tmp_path: Path) -> None:
    project, corpus = _project(tmp_path)

    def refusing(body: dict[str, Any]) -> str:
        return "I cannot do that." if "Map these extracted" in _user(body) else reply(body)

    async def run(server: FakeOpenAIServer) -> tuple[GraphBuildReport, dict[str, Entity]]:
        config = _config(server, schema_sources=SOURCES[:1], schema_mode="align",
                         schema_align="llm")  # fmt: skip
        async with build_app(config, project) as app:
            report = await _build(app, corpus)
            entities, _ = await _graph(app)
        return report, entities

    with FakeOpenAIServer(reply=refusing) as server:
        report, entities = asyncio.run(run(server))
    conf = report.schema_conformance
    assert conf is not None and conf.aligned_by == "name"
    assert entities["Analytical Society"].type == "ORGANIZATION"  # ORGANISATION, by name
    assert (entities["London"].type, entities["London"].in_schema) == ("CITY", False)
    assert "NYC" in entities  # no SKOS source: no name synonyms
    assert (conf.entities.aligned, conf.entities.flagged) == (1, 1)


def test_without_a_schema_the_prompt_and_fingerprint_are_unchanged(tmp_path: Path) -> None:
    with FakeOpenAIServer(reply=reply) as server:
        app = build_app(_config(server), tmp_path)
        assert app.extraction_schema() is None
        asyncio.run(app.aclose())

    class Chat:
        model_id = "gpt-test@http://127.0.0.1:1/v1"

    extractor = graph_extractor(UkrConfig(), Chat(), app.index().records)  # type: ignore[arg-type]
    # the digest extraction records were stored under before extraction schemas existed
    assert extractor.fingerprint("Ada Lovelace worked with Charles Babbage.") == (
        "8f992dd56a28073d61dd5d51d699f76672130e22bec12bff812e0baf7fc04218")
    assert "{schema_types}" not in extractor.extraction_template


def test_a_synonyms_only_schema_keeps_the_plain_prompt(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    with FakeOpenAIServer(reply=reply) as server:
        app = build_app(_config(server, schema_sources=SOURCES[1:]), project)
        schema = app.extraction_schema()
        asyncio.run(app.aclose())
    assert schema is not None and dict(schema.name_synonyms) == {"NYC": "New York City"}

    class Chat:
        model_id = "gpt-test@http://127.0.0.1:1/v1"

    plain = graph_extractor(UkrConfig(), Chat(), app.index().records)  # type: ignore[arg-type]
    synonyms_only = graph_extractor(UkrConfig(), Chat(), app.index().records,  # type: ignore[arg-type]
                                    schema=schema)
    # a SKOS vocabulary of places declares no types: nothing in the prompt changes
    assert synonyms_only.extraction_template == plain.extraction_template
    text = "NYC is large."
    assert synonyms_only.fingerprint(text) == plain.fingerprint(text)


def test_a_bad_schema_file_stops_the_graph_build_with_one_line(tmp_path: Path) -> None:
    project, _ = _project(tmp_path)
    (project / "schema.yaml").write_text("entity_types:\n  - name: A\n    colour: red\n")
    with FakeOpenAIServer(reply=reply) as server:
        app = build_app(_config(server, schema_sources=SOURCES[:1]), project)
        with pytest.raises(Exception) as caught:
            app.extraction_schema()
        asyncio.run(app.aclose())
    assert str(caught.value) == (
        f"schema file {project}/schema.yaml: entity_types.0.colour: Extra inputs are not "
        "permitted")


def test_llm_null_keeps_a_type_off_schema_though_its_name_aligns(tmp_path: Path) -> None:
    """The model says nothing fits ORGANISATION: name alignment must not override it."""
    project, corpus = _project(tmp_path)
    refusal = {"entity_types": {"ORGANISATION": None},  # CITY left out: aligned by name
               "relationship_types": {"BASED_IN": "LOCATED_IN"}}  # fmt: skip

    def answering(body: dict[str, Any]) -> str:
        return json.dumps(refusal) if "Map these extracted" in _user(body) else reply(body)

    async def run(server: FakeOpenAIServer, mode: str) -> tuple[GraphBuildReport,
                                                                dict[str, Entity]]:
        config = _config(server, schema_sources=SOURCES[:1], schema_mode=mode,
                         schema_align="llm")  # fmt: skip
        async with build_app(config, project) as app:
            report = await _build(app, corpus)
            entities, _ = await _graph(app)
        return report, entities

    with FakeOpenAIServer(reply=answering) as server:
        report, entities = asyncio.run(run(server, "align"))
    conf = report.schema_conformance
    assert conf is not None and conf.aligned_by == "llm"
    # by name alone ORGANISATION would become ORGANIZATION (test above); the model said null
    society = entities["Analytical Society"]
    assert (society.type, society.in_schema) == ("ORGANISATION", False)
    assert (entities["London"].type, entities["London"].in_schema) == ("CITY", False)
    assert (conf.entities.aligned, conf.entities.flagged) == (0, 2)
    assert conf.relationships.aligned == 1


IBM_SKOS = """\
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix ex: <http://example.org/> .
ex:ibm a skos:Concept ; skos:prefLabel "IBM"@en .
ex:ibm701 a skos:Concept ; skos:prefLabel "IBM 701"@en ; skos:altLabel "IBM"@en .
"""


def test_an_altlabel_that_is_another_concepts_preflabel_merges_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    project, _ = _project(tmp_path)
    (project / "ibm.ttl").write_text(IBM_SKOS, encoding="utf-8")
    corpus = tmp_path / "ibm"
    corpus.mkdir()
    (corpus / "ibm.txt").write_text("IBM built the IBM 701 in 1952.", encoding="utf-8")

    def ibm(body: dict[str, Any]) -> str:
        if "IBM built" not in _user(body) or "<current_items>" in _user(body):
            return "<entities>None</entities>\n<relationships>None</relationships>"
        return ("<entities>\n" + _entity("IBM", "ORGANIZATION") + _entity("IBM 701", "PRODUCT")
                + "\n</entities>\n<relationships>\n" + _rel("IBM", "IBM 701", "BUILT")
                + "\n</relationships>")

    async def run(server: FakeOpenAIServer) -> tuple[GraphBuildReport, list[Entity],
                                                      list[Relationship]]:
        config = _config(server, schema_sources=[SOURCES[0], {"kind": "skos",
                                                              "path": "ibm.ttl"}])
        async with build_app(config, project) as app:
            report = await _build(app, corpus)
            stores = app.index("default")
            entities = await stores.graph.get_entities([entity_id("IBM"), entity_id("IBM 701")])
            edges = await stores.graph.edges_within([e.id for e in entities])
        return report, entities, edges

    with caplog.at_level("WARNING"), FakeOpenAIServer(reply=ibm) as server:
        report, entities, edges = asyncio.run(run(server))
    assert sorted(e.name for e in entities) == ["IBM", "IBM 701"]
    assert [(r.type, r.source_id, r.target_id) for r in edges] == [
        ("BUILT", entity_id("IBM"), entity_id("IBM 701"))]
    assert report.merges.get("synonym", 0) == 0
    assert report.merges.get("self_loops_dropped", 0) == 0
    assert "1 alias name(s) left out" in caplog.text
