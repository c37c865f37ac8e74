"""The HTML parser: visible text in reading order, one line per block.

Paragraph-like blocks and table rows are separated by a blank line (a row is a record: it
stays its own paragraph, so sentence splitting and quotes never run two rows together), list
items and line breaks by one newline. Scripts, styles, navigation and other non-content
elements are dropped. Text inside a paragraph is joined with single spaces (the source's line
wrapping is not kept), ``<pre>`` keeps its lines and indentation, and table cells are joined
with `` | ``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from unified_kg_rag.adapters.parsers.base import finish, require_bytes
from unified_kg_rag.adapters.parsers.encoding import decode_text
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.models import MetadataValue, ParsedDocument

if TYPE_CHECKING:
    from bs4 import BeautifulSoup
    from bs4.element import Tag

__all__ = ["HtmlParser", "html_to_text"]

_DROPPED = frozenset(
    {"script", "style", "nav", "noscript", "template", "head", "svg", "iframe", "object", "canvas"}
)
_PARAGRAPHS = frozenset(
    {
        "p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "ul", "ol",
        "dl", "figure", "section", "article", "header", "footer", "main", "aside", "address",
        "form", "fieldset", "hr", "details", "tr",
    }
)  # fmt: skip
_LINES = frozenset(
    {"br", "li", "dt", "dd", "div", "caption", "figcaption", "summary", "legend", "option"}
)
_CELLS = frozenset({"td", "th"})
_PARAGRAPH, _LINE = 2, 1
_SPACES = re.compile(r"\s+")


class HtmlParser:
    """Parses ``.html``/``.htm``: visible text; title from ``<title>``, else the first ``<h1>``.

    Uses beautifulsoup4 with the standard library's ``html.parser`` backend (no C extension).

    Args:
        config: the ``parsing`` section (unused).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Decode ``data`` and extract its visible text.

        Raises:
            InputError: the file is empty, binary, or has no visible text.
        """
        from bs4 import BeautifulSoup

        require_bytes(data, path)
        decoded = decode_text(data, path=path)
        soup = BeautifulSoup(decoded.text, "html.parser")
        metadata: dict[str, MetadataValue] = {"encoding": decoded.encoding}
        html_tag = soup.find("html")
        lang = html_tag.get("lang") if html_tag is not None else None
        if isinstance(lang, str) and lang.strip():
            metadata["language"] = lang.strip()
        title = _title(soup)
        return finish(html_to_text(soup), path=path, title=title, metadata=metadata)


def _title(soup: BeautifulSoup) -> str:
    for name in ("title", "h1"):
        tag = soup.find(name)
        if tag is not None:
            text = " ".join(tag.get_text(" ").split())
            if text:
                return text
    return ""


def html_to_text(soup: Tag) -> str:
    """Return the visible text of a parsed HTML tree.

    Block elements start new lines (paragraph-like ones and table rows are separated by a
    blank line, list items and line breaks by one newline); whitespace inside a line collapses to
    one space except in ``<pre>``. The walk is iterative, so deep nesting cannot overflow the
    stack.
    """
    from bs4.element import NavigableString, Tag

    out = _Writer()
    stack: list[tuple[object, bool]] = [(soup, True)]
    while stack:
        node, entering = stack.pop()
        if isinstance(node, Tag):
            name = node.name.lower()
            if not entering:
                out.close_block(name)
                continue
            if name in _DROPPED and node is not soup:
                continue
            out.open_block(name)
            stack.append((node, False))
            stack.extend((child, True) for child in reversed(node.contents))
        elif type(node) is NavigableString:  # not comments, doctypes, CDATA or processing
            out.write(str(node))
    return out.text()


class _Writer:
    """Accumulates lines; pending breaks merge, so nested blocks never stack blank lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.has_text = False  # the current line holds visible text
        self.pending = 0  # the break owed before the next visible text
        self.pre_depth = 0

    def open_block(self, name: str) -> None:
        if name == "pre":
            self.pre_depth += 1
        if name in _PARAGRAPHS:
            self.pending = max(self.pending, _PARAGRAPH)
        elif name in _LINES:
            self.pending = max(self.pending, _LINE)
        elif name in _CELLS and self.has_text and not self.pending:
            self.parts.append(" | ")

    def close_block(self, name: str) -> None:
        if name == "pre":
            self.pre_depth -= 1
        if name in _PARAGRAPHS:
            self.pending = max(self.pending, _PARAGRAPH)
        elif name in _LINES and name != "br":
            self.pending = max(self.pending, _LINE)

    def write(self, text: str) -> None:
        if self.pre_depth:
            for i, piece in enumerate(text.split("\n")):
                if i:
                    self.pending = max(self.pending, _LINE)
                if piece.strip():
                    self._put(piece.rstrip())
            return
        collapsed = _SPACES.sub(" ", text)
        if collapsed.strip():
            self._put(collapsed)
        elif collapsed and self.has_text and not self.pending:
            self.parts.append(" ")

    def _put(self, piece: str) -> None:
        if self.pending:
            self._flush()
            if self.lines:
                self.lines.extend([""] * (self.pending - 1))
            self.pending = 0
        after_space = not self.has_text or (self.parts and self.parts[-1].endswith(" "))
        if after_space and not self.pre_depth:
            piece = piece.lstrip(" ")
        self.parts.append(piece)
        self.has_text = True

    def _flush(self) -> None:
        if self.has_text:
            self.lines.append("".join(self.parts).rstrip())
        self.parts = []
        self.has_text = False

    def text(self) -> str:
        self._flush()
        return "\n".join(self.lines)

