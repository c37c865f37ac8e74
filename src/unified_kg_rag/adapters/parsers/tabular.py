"""The CSV parser: one line of ``header: value; header: value`` per data row.

The first row is the header. The delimiter is sniffed from the start of the file among
comma, semicolon, tab and pipe (``csv.Sniffer``), falling back to comma. Rendering each row
with its headers keeps a row meaningful on its own after chunking. Rows are separated by a
blank line: each row is a paragraph, so sentence splitting and quotes never run two rows
together, and chunks end between rows rather than inside one.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from unified_kg_rag.adapters.parsers.base import finish, one_line, require_bytes
from unified_kg_rag.adapters.parsers.encoding import decode_text
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.models import MetadataValue, ParsedDocument
from unified_kg_rag.util.errors import InputError

__all__ = ["CsvParser", "render_rows"]

_SNIFF_CHARS = 65536
_DELIMITERS = ",;\t|"


class CsvParser:
    """Parses ``.csv`` files (any of the delimiters ``, ; TAB |``).

    Args:
        config: the ``parsing`` section (unused).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Decode ``data`` and render each data row on one line, as its own paragraph.

        Returns:
            Text with one line per non-empty row, rows separated by a blank line; metadata
            ``encoding``, ``rows`` (data rows), ``columns`` (header cells) and ``delimiter``.

        Raises:
            InputError: the file is empty, binary, malformed (the line is named), or has no
                data row.
        """
        require_bytes(data, path)
        decoded = decode_text(data, path=path)
        dialect = _sniff(decoded.text[:_SNIFF_CHARS])
        csv.field_size_limit(max(csv.field_size_limit(), _MAX_FIELD_CHARS))
        reader = csv.reader(io.StringIO(decoded.text, newline=""), dialect)
        try:
            header = next((row for row in reader if any(cell.strip() for cell in row)), [])
            lines = render_rows(header, reader)
        except csv.Error as exc:
            reason = f"malformed CSV at line {reader.line_num}: {one_line(exc)}"
            raise InputError(path, reason) from exc
        if not lines:
            raise InputError(path, "empty document (no data rows)")
        metadata: dict[str, MetadataValue] = {
            "encoding": decoded.encoding,
            "rows": len(lines),
            "columns": len(header),
            "delimiter": dialect.delimiter,
        }
        return finish("\n\n".join(lines), path=path, metadata=metadata)


_MAX_FIELD_CHARS = 64 * 1024 * 1024
"""Longest CSV cell accepted (the csv module's default is 131,072 characters)."""


def _sniff(sample: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS)
    except csv.Error:
        return csv.excel


def render_rows(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Render CSV rows as ``header: value; header: value`` lines.

    Args:
        header: the header cells; a blank header cell, or a cell past the header's end, is
            named ``column N`` (1-based).
        rows: an iterable of rows (lists of cells).

    Returns:
        One line per row with any non-blank cell; blank cells are left out, whitespace
        (newlines inside quoted cells too) collapses to one space.
    """
    names = [" ".join(h.split()) or f"column {i}" for i, h in enumerate(header, start=1)]
    lines: list[str] = []
    for row in rows:
        fields: list[str] = []
        for i, cell in enumerate(row, start=1):
            value = " ".join(cell.split())
            if value:
                name = names[i - 1] if i <= len(names) else f"column {i}"
                fields.append(f"{name}: {value}")
        if fields:
            lines.append("; ".join(fields))
    return lines
