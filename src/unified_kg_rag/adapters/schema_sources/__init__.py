"""Schema sources: where the extraction schema comes from (``graph.extraction.schema_sources``).

Built-in kinds: ``inline`` and ``file`` (`yaml_file`: the YAML schema format), ``owl``,
``rdfs`` and ``skos`` (`rdf`: ontologies read with rdflib, imported on first use). A plugin
registers another kind with ``SCHEMA_SOURCES.register("kind", loader)``. `load_extraction_schema`
reads every configured source and merges them (`domain.extraction.schema.merge_schemas`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from unified_kg_rag.adapters.registry import SCHEMA_SOURCES
from unified_kg_rag.config.extraction_schema import SchemaSourceConfig
from unified_kg_rag.config.graph import ExtractionConfig
from unified_kg_rag.domain.extraction.schema import (
    ExtractionSchema,
    merge_schemas,
    undeclared_in_patterns,
)
from unified_kg_rag.util.errors import ConfigurationError

from .yaml_file import load_file, load_inline

__all__ = ["load_extraction_schema", "load_owl", "load_skos"]

logger = logging.getLogger(__name__)


def load_owl(source: SchemaSourceConfig, project_dir: Path | None, field: str) -> ExtractionSchema:
    """Read an OWL or RDFS ontology (`rdf.read_ontology`; rdflib loads on first use)."""
    from unified_kg_rag.adapters.schema_sources.rdf import read_ontology

    return read_ontology(source, project_dir, field)


def load_skos(source: SchemaSourceConfig, project_dir: Path | None, field: str) -> ExtractionSchema:
    """Read a SKOS vocabulary (`rdf.read_skos`; rdflib loads on first use)."""
    from unified_kg_rag.adapters.schema_sources.rdf import read_skos

    return read_skos(source, project_dir, field)


def load_extraction_schema(
    config: ExtractionConfig, project_dir: Path | None
) -> ExtractionSchema | None:
    """Return the schema ``config.schema_sources`` declare, merged in order; None without any.

    A source's patterns may name types another source declares (a patterns-only YAML file
    beside an ontology): they are checked against the merged schema.

    Raises:
        ConfigurationError: an unknown kind (listing the registered ones), a source that
            cannot be read (one line naming the file or the field), a pattern naming a type
            no source declares (naming the source and the pattern), or sources that together
            declare no type and no name synonym (unless one is a SKOS vocabulary whose
            aliases were all left out: then a warning, and None).
    """
    if not config.schema_sources:
        return None
    fields = [f"graph.extraction.schema_sources.{i}" for i in range(len(config.schema_sources))]
    schemas = [
        SCHEMA_SOURCES.get(source.kind)(source, project_dir, field)
        for field, source in zip(fields, config.schema_sources, strict=True)
    ]
    merged = merge_schemas(schemas)
    for field, source, schema in zip(fields, config.schema_sources, schemas, strict=True):
        if problem := undeclared_in_patterns(schema.patterns, merged):
            if not source.path:
                raise ConfigurationError(f"{field}: {problem}")
            path = Path(source.path).expanduser()
            if not path.is_absolute() and project_dir is not None:
                path = project_dir / path
            raise ConfigurationError(f"schema file {path}: {problem}")
    if not merged.declares_types and not merged.name_synonyms:
        if any(s.kind == "skos" and s.name_synonyms for s in config.schema_sources):
            # a valid vocabulary whose every alias was left out (another concept's name)
            logger.warning(
                "graph.extraction.schema_sources: no entity type, relationship type or usable "
                "name synonym is left; extraction runs without a schema"
            )
            return None
        raise ConfigurationError(
            "the extraction schema declares no entity type, no relationship type and no "
            "name synonym (check the schema_sources files)",
            field="graph.extraction.schema_sources",
        )  # fmt: skip
    return merged


SCHEMA_SOURCES.register("inline", load_inline)
SCHEMA_SOURCES.register("file", load_file)
SCHEMA_SOURCES.register("owl", load_owl)
SCHEMA_SOURCES.register("rdfs", load_owl)
SCHEMA_SOURCES.register("skos", load_skos)
