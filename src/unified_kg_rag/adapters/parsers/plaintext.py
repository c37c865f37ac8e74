"""The parsers of plain-text formats kept as they are: ``.txt`` and Markdown.

Markdown is not rendered: its text is indexed as written (markup included), so offsets and
quotes match the file. Only the title is taken from it.
"""

from __future__ import annotations

import re

from unified_kg_rag.adapters.parsers.base import finish, require_bytes, stated_date
from unified_kg_rag.adapters.parsers.encoding import decode_text
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.models import MetadataValue, ParsedDocument

__all__ = ["MarkdownParser", "TextParser", "front_matter_dates", "markdown_title"]

_ATX_H1 = re.compile(r" {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_DATE_KEYS = {"date": "date", "lastmod": "modified", "updated": "modified",
              "modified": "modified", "last_modified": "modified", "created": "created"}
"""Front-matter keys (Jekyll, Hugo, MkDocs, Obsidian) → the metadata key of the date."""


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
            metadata={"encoding": decoded.encoding, **front_matter_dates(decoded.text)},
        )


def front_matter_dates(text: str) -> dict[str, MetadataValue]:
    """Return the dates a Markdown file's YAML front matter states, as ISO-8601 text.

    The front matter is a YAML mapping between a first line ``---`` and a line ``---`` (or
    ``...``). ``date`` gives ``date``; ``lastmod``, ``updated``, ``modified`` or
    ``last_modified`` give ``modified``; ``created`` gives ``created``. Values that are not
    dates or ISO-8601 times are ignored, and so is front matter that is not valid YAML.
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}
    import yaml

    try:
        values = yaml.safe_load(match.group(1))
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):  # 2024-13-45: ValueError
        return {}
    if not isinstance(values, dict):
        return {}
    out: dict[str, MetadataValue] = {}
    for key, target in _DATE_KEYS.items():
        value = values.get(key)
        if target in out or isinstance(value, bool):
            continue
        if isinstance(value, str):
            value = _iso_text(value)
        when = stated_date(lambda: value)  # noqa: B023 - called at once
        if when is not None:
            out[target] = when
    return out


def _iso_text(value: str) -> str | None:
    """``value`` when it is an ISO-8601 date or time, else None."""
    from datetime import datetime

    try:
        datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return value.strip()


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
