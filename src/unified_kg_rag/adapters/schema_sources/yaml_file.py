"""The ``inline`` and ``file`` schema sources: the YAML schema format.

A schema file holds the keys ``entity_types``, ``relationship_types`` and ``patterns``
(`domain.extraction.schema.SchemaDocument`; the shape ``ukr prompt-tune --schema-out``
writes). Errors are one line naming the file (or the config field) and the key at fault.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from unified_kg_rag.config.extraction_schema import SchemaSourceConfig
from unified_kg_rag.domain.extraction.schema import (
    ExtractionSchema,
    SchemaDocument,
    document_error,
    schema_from_document,
)
from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["load_file", "load_inline", "parse_schema_yaml", "source_path"]


def source_path(source: SchemaSourceConfig, project_dir: Path | None, field: str) -> Path:
    """Return the source's file (relative to the project directory), checked to exist.

    Raises:
        ConfigurationError: no ``path``, a folder or no such file, or inline-only fields
            (``entity_types``, ``relationship_types``, ``patterns``) set on a file kind.
    """
    for inline_only in ("entity_types", "relationship_types", "patterns"):
        if getattr(source, inline_only):
            raise ConfigurationError(
                f"schema source kind {source.kind!r} reads its schema from path; "
                f"{inline_only} belongs to kind 'inline'", field=f"{field}.{inline_only}",
            )  # fmt: skip
    if not source.path:
        raise ConfigurationError(f"schema source kind {source.kind!r} needs a path",
                                 field=f"{field}.path")  # fmt: skip
    path = Path(source.path).expanduser()
    if not path.is_absolute() and project_dir is not None:
        path = project_dir / path
    if path.is_dir():
        raise ConfigurationError(f"schema file {path} is a folder, not a file",
                                 field=f"{field}.path")  # fmt: skip
    if not path.is_file():
        raise ConfigurationError(f"schema file {path} not found", field=f"{field}.path")
    return path


def parse_schema_yaml(text: str, origin: str) -> ExtractionSchema:
    """Read a YAML schema document.

    Args:
        text: the YAML text.
        origin: where it came from, for messages (the file path).

    Raises:
        ConfigurationError: invalid YAML, not a mapping, an unknown key, or a blank or
            repeated name (one line: origin, key, problem). Patterns are checked against
            the merged schema (`load_extraction_schema`).
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        message = " ".join(f"{origin}: invalid YAML{where}: {problem}".split())
        raise ConfigurationError(message) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{origin}: expected a mapping with entity_types, relationship_types and "
            f"patterns, got {type(data).__name__}"
        )
    try:
        return schema_from_document(SchemaDocument.model_validate(data))
    except ValidationError as exc:
        raise ConfigurationError(document_error(exc, origin)) from None


def load_file(source: SchemaSourceConfig, project_dir: Path | None, field: str) -> ExtractionSchema:
    """The ``file`` source: a YAML schema file at ``path``.

    Raises:
        ConfigurationError: no path, a missing or unreadable file, or an invalid document.
    """
    path = source_path(source, project_dir, field)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read schema file {path}: {exc}", field=field) from exc
    return parse_schema_yaml(text, f"schema file {path}")


def load_inline(
    source: SchemaSourceConfig, project_dir: Path | None, field: str
) -> ExtractionSchema:
    """The ``inline`` source: the schema written in the configuration entry itself.

    Raises:
        ConfigurationError: a name is repeated or blank, or ``path``/``format`` is set (an
            inline source reads no file).
    """
    for file_only in ("path", "format"):
        if getattr(source, file_only):
            raise ConfigurationError(
                f"schema source kind 'inline' reads no file; drop {file_only} or use kind "
                "'file'", field=f"{field}.{file_only}",
            )  # fmt: skip
    try:
        document = SchemaDocument(
            entity_types=source.entity_types,
            relationship_types=source.relationship_types,
            patterns=source.patterns,
        )
    except ValidationError as exc:
        raise ConfigurationError(document_error(exc, field)) from None
    return schema_from_document(document)
