"""The parsers of plain-text formats kept as they are: ``.txt`` and Markdown.

Markdown is not rendered: its text is indexed as written (markup included), so offsets and
quotes match the file. Only the title is taken from it.
"""

from __future__ import annotations

import re

from unified_kg_rag.adapters.parsers.base import finish, require_bytes
from unified_kg_rag.adapters.parsers.encoding import decode_text
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.models import ParsedDocument

__all__ = ["MarkdownParser", "TextParser", "markdown_title"]

_ATX_H1 = re.compile(r" {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


class TextParser:
    """Parses ``.txt`` files: the decoded text as is, no title (the loader uses the file stem).

    Args:
        config: the ``parsing`` section (unused; parsers are built from it uniformly).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Decode ``data`` as text.

        Raises:
            InputError: the file is empty, whitespace only, or binary.
        """
        require_bytes(data, path)
        decoded = decode_text(data, path=path)
        return finish(decoded.text, path=path, metadata={"encoding": decoded.encoding})


class MarkdownParser:
    """Parses Markdown: the text as written; the title is the first level-1 ATX heading.

    Args:
        config: the ``parsing`` section (unused).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Decode ``data`` and find its title.

        Raises:
            InputError: the file is empty, whitespace only, or binary.
        """
        require_bytes(data, path)
        decoded = decode_text(data, path=path)
        return finish(
            decoded.text,
            path=path,
            title=markdown_title(decoded.text),
            metadata={"encoding": decoded.encoding},
        )


def markdown_title(text: str) -> str:
    """Return the text of the first level-1 ATX heading (``# Title``) of ``text``, or ``""``.

    Headings inside fenced code blocks (a ``# comment`` in a shell example) do not count;
    closing ``#`` marks are dropped. Source: CommonMark spec 0.31, §4.2 (ATX headings) and
    §4.5 (fenced code blocks).
    """
    fence: str | None = None
    for line in text.splitlines():
        marker = _FENCE.match(line)
        if marker is not None:
            run = marker.group(1)
            if fence is None:
                fence = run
            elif run[0] == fence[0] and len(run) >= len(fence) and not line.strip(" `~"):
                fence = None
            continue
        if fence is not None:
            continue
        heading = _ATX_H1.fullmatch(line)
        if heading is not None and heading.group(1).strip():
            return heading.group(1).strip()
    return ""
