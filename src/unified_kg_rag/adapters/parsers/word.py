"""The Word (``.docx``) parser: body paragraphs and tables in document order, via python-docx.

Headers, footers, comments and text boxes are not read. Paragraphs are separated by a blank
line, consecutive list items by one newline; each table row is one line of cells joined by
`` | `` (a merged cell is written once), and rows are separated by a blank line.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from unified_kg_rag.adapters.parsers.base import finish, one_line, require_bytes
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.models import MetadataValue, ParsedDocument
from unified_kg_rag.util.errors import InputError

if TYPE_CHECKING:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

__all__ = ["DocxParser"]


class DocxParser:
    """Parses ``.docx`` files with python-docx.

    The title is the document property "title", else the first paragraph in the "Title"
    style, else the first "Heading 1"; ``author`` comes from the document properties.

    Args:
        config: the ``parsing`` section (unused).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Extract the body text.

        Raises:
            InputError: the file is empty, not a readable ``.docx`` package (the reason on one
                line), or has no text.
        """
        import docx

        require_bytes(data, path)
        # python-docx raises assorted errors on damaged packages (BadZipFile, KeyError,
        # PackageNotFoundError, lxml parse errors), some only while the body is read; each
        # means the file cannot be read.
        try:
            document = docx.Document(io.BytesIO(data))
            text, styled_title = _body_text(list(document.iter_inner_content()))
            core = document.core_properties
            prop_title, author = core.title or "", core.author or ""
        except Exception as exc:
            raise InputError(path, f"cannot read DOCX: {one_line(exc)}") from exc
        metadata: dict[str, MetadataValue] = {}
        if author.strip():
            metadata["author"] = " ".join(author.split())
        title = prop_title if prop_title.strip() else styled_title
        return finish(text, path=path, title=title, metadata=metadata)


def _body_text(blocks: list[Paragraph | Table]) -> tuple[str, str]:
    """Return the body text and the title found in it ("Title" style, else "Heading 1")."""
    from docx.table import Table

    pieces: list[str] = []
    titles: dict[str, str] = {}
    previous_was_list = False
    for block in blocks:
        if isinstance(block, Table):
            text, is_list = _table_text(block), False
        else:
            text, style = block.text, _style_name(block)
            is_list = style.startswith("list")
            if text.strip() and style in ("title", "heading 1"):
                titles.setdefault(style, text)
        if not text.strip():
            continue
        if pieces:
            pieces.append("\n" if is_list and previous_was_list else "\n\n")
        pieces.append(text.strip())
        previous_was_list = is_list
    return "".join(pieces), titles.get("title") or titles.get("heading 1", "")


def _style_name(paragraph: Paragraph) -> str:
    try:
        style = paragraph.style
    except Exception:  # a paragraph naming a style the package lacks reads as unstyled
        return ""
    name = getattr(style, "name", None)
    return name.casefold() if isinstance(name, str) else ""


def _table_text(table: Table) -> str:
    """Return a table's rows, cells joined by `` | ``, each row its own paragraph."""
    lines: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        last = None
        for cell in row.cells:
            if cell._tc is last:  # a horizontally merged cell repeats; write it once
                continue
            last = cell._tc
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n\n".join(lines)
