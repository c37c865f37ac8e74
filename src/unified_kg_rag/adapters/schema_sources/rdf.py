"""The ``owl``, ``rdfs`` and ``skos`` schema sources: ontologies read with rdflib.

OWL / RDFS (`read_ontology`): every named ``owl:Class`` / ``rdfs:Class`` is an entity type
(``rdfs:label`` → upper-snake name, ``rdfs:comment`` → description, the IRI kept); every named
``owl:ObjectProperty`` / ``rdf:Property`` whose range is not a literal (``xsd:*``,
``rdfs:Literal``, ``rdf:langString``, ``rdf:PlainLiteral``, ...) is a relationship type, and
each of its ``rdfs:domain`` × ``rdfs:range`` pairs of declared classes a pattern. A class's
``rdfs:subClassOf`` declared classes are its ``parents``, and a pattern naming a class allows
its subclasses (transitively; `ExtractionSchema.allows`), so ``Person subClassOf Agent``
with ``worksFor`` of domain ``Agent`` allows ``PERSON WORKS_FOR ...``.
Blank nodes (unions, restrictions) and the RDF/RDFS/OWL/XSD vocabularies' own terms are
skipped.

SKOS (`read_skos`): a vocabulary of names, not of types. Each ``skos:Concept``'s
``skos:altLabel``/``skos:hiddenLabel`` (and prefLabels in other languages) are, with
``name_synonyms``, names of the entity its ``skos:prefLabel`` names (resolution merges them);
an alias that is another concept's prefLabel, or that two concepts claim, is left out (a
warning gives the count). A concept also declared ``owl:Class`` / ``rdfs:Class`` is an
entity type named by its prefLabel (description: ``skos:definition``, else
``skos:scopeNote``, else ``rdfs:comment``) whose other labels are the type's synonyms.

Labels: the language asked for (``en`` also matches ``en-GB``: the primary subtag), then an
untagged literal, then the smallest other.

Terms are sorted by IRI, so the same content gives the same schema (the order is part of the
prompt). Two terms with one name keep the first IRI (a warning names the other).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterable
from pathlib import Path

import regex
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import OWL, RDF, RDFS, SKOS, XSD
from rdflib.util import guess_format

from unified_kg_rag.config.extraction_schema import SchemaSourceConfig
from unified_kg_rag.domain.extraction.schema import (
    EntityTypeSpec,
    ExtractionSchema,
    RelationshipTypeSpec,
    safe_name_synonyms,
    upper_snake,
)
from unified_kg_rag.util.errors import ConfigurationError

from .yaml_file import source_path

__all__ = ["read_ontology", "read_skos"]

logger = logging.getLogger(__name__)

_BUILTIN = (str(RDF), str(RDFS), str(OWL), str(XSD))
_DATATYPE_PROPERTY = OWL.DatatypeProperty
_BYTES_REPR = regex.compile(r"\bb'(?:[^'\\]|\\.)*'" + r'|\bb"(?:[^"\\]|\\.)*"')
_LITERAL_RANGES = frozenset({RDFS.Literal, RDF.langString, RDF.PlainLiteral, RDF.HTML,
                             RDF.XMLLiteral, RDF.JSON})  # fmt: skip


def parse_graph(source: SchemaSourceConfig, project_dir: Path | None, field: str) -> Graph:
    """Parse the source's file into an rdflib graph.

    Raises:
        ConfigurationError: no path, a missing file, an unknown syntax, or a file rdflib
            cannot parse (one line naming the file and the syntax).
    """
    path = source_path(source, project_dir, field)
    fmt = source.format or guess_format(str(path))
    if fmt is None:
        raise ConfigurationError(
            f"cannot tell the RDF syntax of {path} from its suffix; set format "
            "(turtle, xml, json-ld, nt, n3, trig)", field=f"{field}.format",
        )  # fmt: skip
    graph = Graph()
    try:
        graph.parse(str(path), format=fmt)
    except Exception as exc:  # rdflib raises parser-specific types (BadSyntax, SAXParseException)
        detail = _clean_detail(exc)
        raise ConfigurationError(
            f"cannot parse ontology {path} as {fmt}: {detail}", field=field
        ) from exc
    return graph


def _clean_detail(exc: Exception) -> str:
    """One line of a parser's message: bytes reprs (``b'...'``) shown as their UTF-8 text."""

    def text_of(match: regex.Match[str]) -> str:
        try:
            raw = ast.literal_eval(match.group(0))
        except (ValueError, SyntaxError):
            return match.group(0)
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else match.group(0)

    text = _BYTES_REPR.sub(text_of, str(exc)).replace(" of <>", "")
    return " ".join(text.replace("\\n", " ").split())[:200] or type(exc).__name__


def _rank(value: Literal, language: str) -> int:
    """0: the language asked for; 1: its primary subtag (``en`` ~ ``en-GB``); 2: untagged."""
    tag = (value.language or "").lower()
    if not tag:
        return 2
    if tag == language.lower():
        return 0
    return 1 if tag.split("-")[0] == language.lower().split("-")[0] else 3


def _text(graph: Graph, term: URIRef, predicates: Iterable[URIRef], language: str) -> str:
    """The best literal of ``term`` under the first predicate that has one.

    Preference: the language asked for, then one of its primary subtag (``en`` matches
    ``en-GB``), then an untagged literal, then the smallest other.
    """
    for predicate in predicates:
        values = [v for v in graph.objects(term, predicate) if isinstance(v, Literal)]
        if values:
            best = min((_rank(v, language), " ".join(str(v).split())) for v in values)
            return best[1]
    return ""


def _local_name(iri: URIRef) -> str:
    text = str(iri)
    for cut in ("#", "/", ":"):
        if cut in text:
            text = text.rsplit(cut, 1)[1] or text
    return text


def _named(graph: Graph, kinds: Iterable[URIRef]) -> list[URIRef]:
    """The named (not blank, not built-in) subjects typed with one of ``kinds``, sorted."""
    found = {s for kind in kinds for s in graph.subjects(RDF.type, kind)}
    return sorted(s for s in found if isinstance(s, URIRef) and not str(s).startswith(_BUILTIN))


def _unique(name: str, iri: URIRef, seen: dict[str, URIRef], what: str) -> bool:
    if not name:
        logger.warning("ontology %s %s has no usable name; skipped", what, iri)
        return False
    if name in seen:
        logger.warning("ontology %s %s is named %s like %s; skipped", what, iri, name, seen[name])
        return False
    seen[name] = iri
    return True


def read_ontology(
    source: SchemaSourceConfig, project_dir: Path | None, field: str
) -> ExtractionSchema:
    """Read an OWL / RDFS ontology into an `ExtractionSchema` (see the module docstring).

    Raises:
        ConfigurationError: the file is missing or cannot be parsed, or it declares no class.
    """
    graph = parse_graph(source, project_dir, field)
    label = (RDFS.label, SKOS.prefLabel)
    comment = (RDFS.comment, SKOS.definition)
    names: dict[URIRef, str] = {}
    seen: dict[str, URIRef] = {}
    entities = []
    for cls in _named(graph, (OWL.Class, RDFS.Class)):
        name = upper_snake(_text(graph, cls, label, source.language) or _local_name(cls))
        if _unique(name, cls, seen, "class"):
            names[cls] = name
            entities.append(EntityTypeSpec(
                name=name, description=_text(graph, cls, comment, source.language),
                iri=str(cls),
            ))  # fmt: skip
    if not entities:
        raise ConfigurationError(
            f"ontology {source.path} declares no owl:Class or rdfs:Class", field=field
        )
    entities = [spec.model_copy(update={"parents": tuple(sorted(
        names[p] for p in graph.objects(URIRef(spec.iri or ""), RDFS.subClassOf)
        if isinstance(p, URIRef) and p in names and names[p] != spec.name
    ))}) for spec in entities]  # fmt: skip
    relations: list[RelationshipTypeSpec] = []
    patterns: list[tuple[str, str, str]] = []
    seen_rel: dict[str, URIRef] = {}
    for prop in _named(graph, (OWL.ObjectProperty, RDF.Property)):
        ranges = sorted(r for r in graph.objects(prop, RDFS.range) if isinstance(r, URIRef))
        datatype = any(str(r).startswith(str(XSD)) or r in _LITERAL_RANGES for r in ranges)
        if datatype or (prop, RDF.type, _DATATYPE_PROPERTY) in graph:
            continue  # a literal-valued property is no edge between entities
        name = upper_snake(_text(graph, prop, label, source.language) or _local_name(prop))
        if not _unique(name, prop, seen_rel, "property"):
            continue
        relations.append(RelationshipTypeSpec(
            name=name, description=_text(graph, prop, comment, source.language), iri=str(prop),
        ))  # fmt: skip
        domains = sorted(d for d in graph.objects(prop, RDFS.domain) if isinstance(d, URIRef))
        patterns.extend(
            (names[d], name, names[r])
            for d in domains for r in ranges if d in names and r in names
        )
    return ExtractionSchema(
        entity_types=tuple(entities),
        relationship_types=tuple(relations),
        patterns=tuple(dict.fromkeys(patterns)),
    )


def read_skos(source: SchemaSourceConfig, project_dir: Path | None, field: str) -> ExtractionSchema:
    """Read a SKOS vocabulary into name synonyms (and class concepts' types; module docstring).

    Raises:
        ConfigurationError: the file is missing or cannot be parsed, or it holds no concept.
    """
    graph = parse_graph(source, project_dir, field)
    description = (SKOS.definition, SKOS.scopeNote, RDFS.comment)
    classes = set(_named(graph, (OWL.Class, RDFS.Class)))
    concepts = _named(graph, (SKOS.Concept,))
    if not concepts:
        raise ConfigurationError(f"SKOS vocabulary {source.path} holds no skos:Concept",
                                 field=field)  # fmt: skip
    entities = []
    pairs: list[tuple[str, str]] = []
    prefs: list[str] = []
    seen: dict[str, URIRef] = {}
    for concept in concepts:
        pref = _text(graph, concept, (SKOS.prefLabel, RDFS.label), source.language)
        labels = sorted(
            {" ".join(str(v).split()) for p in (SKOS.prefLabel, SKOS.altLabel, SKOS.hiddenLabel)
             for v in graph.objects(concept, p) if isinstance(v, Literal)} - {pref, ""}
        )
        if pref:
            prefs.append(pref)
            pairs.extend((alias, pref) for alias in labels)
        if concept not in classes:
            continue
        name = upper_snake(pref or _local_name(concept))
        if _unique(name, concept, seen, "concept"):
            entities.append(EntityTypeSpec(
                name=name, description=_text(graph, concept, description, source.language),
                iri=str(concept), synonyms=tuple(upper_snake(v) for v in labels),
            ))  # fmt: skip
    aliases = (safe_name_synonyms(pairs, f"SKOS vocabulary {source.path}", prefs)
               if source.name_synonyms else [])  # fmt: skip
    return ExtractionSchema(entity_types=tuple(entities), name_synonyms=tuple(aliases))
