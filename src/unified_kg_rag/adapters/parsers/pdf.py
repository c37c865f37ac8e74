"""The PDF parser: the text layer of each page, read with pypdf, pages separated by a blank line.

PDFs without a text layer (scans) fail with a message saying so; this package does no OCR.

The title is its own paragraph: the text layer puts a title on the line above the first
sentence with only a line break between them, which sentence splitting reads as one sentence
("Annual Report Acme Ltd. was founded ..."). The title is the document information's title
when the first page starts with it, else the lines that open the first page in a font larger
than the page's body text; a blank line is put after it (and the second becomes the document
title when the information has none).
"""

from __future__ import annotations

import io
import logging
import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from unified_kg_rag.adapters.parsers.base import finish, one_line, require_bytes, stated_date
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.models import MetadataValue, ParsedDocument
from unified_kg_rag.util.errors import InputError

__all__ = ["NO_TEXT_REASON", "PdfParser"]

logger = logging.getLogger(__name__)

NO_TEXT_REASON = "no extractable text (scanned PDF?)"
"""The reason given for a PDF whose pages have no text layer."""


class PdfParser:
    """Parses ``.pdf`` files with pypdf.

    An encrypted PDF is opened with the empty password (many PDFs are encrypted only to set
    permissions); one that needs a real password fails. A page whose text cannot be extracted
    is skipped with a warning; the others are kept.

    Args:
        config: the ``parsing`` section (unused).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Extract the text of every page.

        Returns:
            Text with pages joined by a blank line; title and ``author`` from the document
            information; metadata ``pages`` (page count).

        Raises:
            InputError: the file is empty, corrupt or truncated (pypdf's reason, on one line),
                encrypted with a password, or has no text layer.
        """
        from pypdf import PdfReader

        require_bytes(data, path)
        # pypdf raises many exception types on damaged files (its own, ValueError, KeyError,
        # TypeError ...), at open time or lazily; every one means "this PDF cannot be read".
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise InputError(path, "encrypted PDF (a password is needed)")
            pages = list(reader.pages)
            info = reader.metadata
        except InputError:
            raise
        except Exception as exc:
            raise InputError(path, f"cannot read PDF: {one_line(exc)}") from exc
        texts: list[str] = []
        heading = ""
        for number, page in enumerate(pages, start=1):
            try:
                if texts:
                    page_text = page.extract_text()
                else:
                    page_text, heading = _text_and_heading(page)
            except Exception as exc:  # one bad page does not lose the others
                logger.warning("%s: page %d skipped: %s", path, number, one_line(exc))
                continue
            if page_text.strip():
                texts.append(page_text.strip())
        metadata: dict[str, MetadataValue] = {"pages": len(pages)}
        title = ""
        if info is not None:
            title = _info_text(lambda: info.title)
            author = _info_text(lambda: info.author)
            if author:
                metadata["author"] = author
            for key, read in (("modified", lambda: info.modification_date),
                              ("created", lambda: info.creation_date)):
                if (when := stated_date(read)) is not None:
                    metadata[key] = when
        if texts:
            texts[0], found = _title_paragraph(texts[0], [title, heading])
            title = title or found
        text = "\n\n".join(texts)
        return finish(text, path=path, title=title, metadata=metadata, empty_reason=NO_TEXT_REASON)


def _info_text(read: Callable[[], object]) -> str:
    try:
        value = read()
    except Exception:  # a malformed information dictionary only loses the field
        return ""
    return " ".join(value.split()) if isinstance(value, str) else ""


_LARGER = 1.15
"""A line is set larger than the body text when its font size is this many times the body's."""


def _text_and_heading(page: Any) -> tuple[str, str]:
    """Return a page's text and the text that opens it in a font larger than its body text.

    The body size is the font size most characters of the page are set in; the heading is
    every fragment before the first one at (or below) that size ("" when the page opens with
    body text). Sizes are the font size times the text and transformation matrices' vertical
    scale.
    """
    fragments: list[tuple[str, float]] = []

    def visit(text: str, cm: Any, tm: Any, font: Any, size: float) -> None:
        if text.strip():
            fragments.append((text, size * _scale(tm) * _scale(cm)))

    page_text = page.extract_text(visitor_text=visit)
    if not fragments:
        return page_text, ""
    chars: Counter[float] = Counter()
    for text, size in fragments:
        chars[round(size, 1)] += len(text.strip())
    body = chars.most_common(1)[0][0]
    lead: list[str] = []
    for text, size in fragments:
        if size <= body * _LARGER:
            break
        lead.append(text)
    return page_text, " ".join(" ".join(lead).split())


def _scale(matrix: Any) -> float:
    try:
        return math.hypot(float(matrix[2]), float(matrix[3])) or 1.0
    except (TypeError, ValueError, IndexError):
        return 1.0


def _title_paragraph(text: str, candidates: list[str]) -> tuple[str, str]:
    """Put a blank line after the first candidate title that ``text`` starts with.

    A candidate matches when ``text``'s opening lines, whitespace collapsed and case folded,
    are exactly it; it must be followed by more text.

    Returns:
        ``text`` (with the title made its own paragraph when one matched) and the candidate
        that matched ("" when none did).
    """
    lines = text.split("\n")
    for candidate in candidates:
        wanted = " ".join(candidate.split()).casefold()
        if not wanted:
            continue
        opening = ""
        for i, line in enumerate(lines[:-1], start=1):
            opening = " ".join(f"{opening} {line}".split()).casefold()
            if opening == wanted:
                head, rest = "\n".join(lines[:i]), "\n".join(lines[i:])
                if rest.strip():
                    return f"{head.rstrip()}\n\n{rest.lstrip()}", candidate
                break
            if len(opening) > len(wanted):
                break
    return text, ""
