"""The PDF parser: the text layer of each page, read with pypdf, pages separated by a blank line.

PDFs without a text layer (scans) fail with a message saying so; this package does no OCR.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable

from unified_kg_rag.adapters.parsers.base import finish, one_line, require_bytes
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
        for number, page in enumerate(pages, start=1):
            try:
                page_text = page.extract_text()
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
        text = "\n\n".join(texts)
        return finish(text, path=path, title=title, metadata=metadata, empty_reason=NO_TEXT_REASON)


def _info_text(read: Callable[[], object]) -> str:
    try:
        value = read()
    except Exception:  # a malformed information dictionary only loses the field
        return ""
    return " ".join(value.split()) if isinstance(value, str) else ""
