"""What a graph build reads from the configuration (`ingestion.graph.build`).

The methodologies the ``graph`` stage builds, the extractor of a configuration (its prompts
in effect, with an extraction schema's variants and settings), and the ``graph`` settings
that enter a build's digest. Split from `build` so the build reads as its stages.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from unified_kg_rag.config.graph import ExtractionConfig
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.extraction.schema import ExtractionSchema
from unified_kg_rag.domain.index.methodologies import METHODOLOGIES
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.ports import ChatModel, RecordStore
from unified_kg_rag.util.hashing import sha256_json

from .extract import GraphExtractor
from .schema_step import schema_extractor_settings

__all__ = ["graph_extractor", "graph_methodologies", "graph_settings", "shaping_key"]


def graph_methodologies(methodologies: Sequence[str]) -> list[str]:
    """Return those of ``methodologies`` the ``graph`` stage builds, sorted (their profiles)."""
    return sorted(
        m for m in methodologies if (p := METHODOLOGIES.get(m)) is not None and p.stage == "graph"
    )


def _template(library: PromptLibrary, base: str, with_schema: bool) -> str:
    """Return ``base``'s template in effect, or its ``_schema`` variant's with a schema."""
    if with_schema and (library.source(f"{base}_schema") != "packaged"
                        or library.source(base) == "packaged"):  # fmt: skip
        return library.get(f"{base}_schema")
    return library.get(base)


def graph_extractor(
    config: UkrConfig,
    chat: ChatModel,
    records: RecordStore,
    project_dir: Path | None = None,
    schema: ExtractionSchema | None = None,
    prompts: PromptLibrary | None = None,
) -> GraphExtractor:
    """Return the `GraphExtractor` of ``config`` (its prompts in effect, its settings).

    With ``schema``, the schema's templates (``*_schema.v1``; an override of them wins, then
    an override of the plain ``extract_graph``/``glean_graph``) get the schema filled in and
    its entity types replace ``entity_types`` (`schema_step.schema_extractor_settings`);
    without one, nothing changes.

    Args:
        config: the effective configuration.
        chat: the wrapped chat model.
        records: the index's record store.
        project_dir: where relative prompt files are looked up (when ``prompts`` is None).
        schema: the extraction schema (None: none).
        prompts: the prompts in effect (None: read from ``config``, `load_prompt_library`).

    Raises:
        ConfigurationError: a configured prompt file is unreadable or its placeholders are
            wrong (one line naming the file).
    """
    graph = config.graph
    library = prompts if prompts is not None else load_prompt_library(config, project_dir)
    extraction = graph.extraction
    typed = schema is not None and schema.declares_types  # synonyms only: the plain prompt
    extract = _template(library, "extract_graph", typed)
    glean = _template(library, "glean_graph", typed)
    if schema is not None and typed:
        extraction, extract, glean = schema_extractor_settings(extraction, schema, extract, glean)
    return GraphExtractor(
        chat, records, extraction, extraction_template=extract, gleaning_template=glean,
        concurrency=graph.unit_concurrency,
    )  # fmt: skip


_SHAPING_FIELDS = (
    "grounding", "grounding_min_similarity", "grounding_weight", "min_confidence",
    "min_strength", "schema_sources", "schema_mode", "schema_align", "schema_align_threshold",
)  # fmt: skip
"""``graph.extraction`` settings newer than the build digest: they enter it only when set."""


def _shaping_fields_set(extraction: ExtractionConfig) -> set[str]:
    """Those of `_SHAPING_FIELDS` set away from their defaults."""
    defaults = ExtractionConfig()
    return {f for f in _SHAPING_FIELDS if getattr(extraction, f) != getattr(defaults, f)}


def graph_settings(config: UkrConfig, *, claims: bool) -> dict[str, object]:
    """The ``graph`` settings in a build's digest, as an index built before they existed had.

    ``graph.claims`` enters only with claims on, and each of `_SHAPING_FIELDS` only away from
    its default, so upgrading changes no digest and rebuilds no graph.
    """
    kept = _shaping_fields_set(config.graph.extraction)
    return config.graph.model_dump(mode="json", exclude={
        **({} if claims else {"claims": True}),
        "extraction": set(_SHAPING_FIELDS) - kept,
    })  # fmt: skip


def shaping_key(config: UkrConfig, schema_fingerprint: str | None) -> str:
    """Return the key of the settings that re-shape the graph before resolution ("" if none).

    The grounding and threshold fields of `_SHAPING_FIELDS` set away from their defaults and
    the extraction schema's fingerprint: what `delta.communities_fingerprint` clusters under.
    "" when none is set, as for an index built before these settings existed.
    """
    extraction = config.graph.extraction
    shaped = extraction.model_dump(mode="json", include=_shaping_fields_set(extraction))
    if not shaped and schema_fingerprint is None:
        return ""
    return sha256_json({"settings": shaped, "schema": schema_fingerprint})
