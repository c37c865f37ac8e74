"""The JSON and JSON Lines parsers: values rendered as readable ``key: value`` lines.

Nested keys are dotted (``author.name: Ann``) and list items indexed (``tags[0]: x``), so a
line keeps its meaning on its own after chunking. Each field is its own line and its own
sentence (a full stop ends a value that has no sentence-final punctuation), so a quote or a
sentence-aligned chunk boundary never runs two fields together; records (the items of a
top-level list, the lines of a JSON Lines file) are paragraphs, separated by a blank line.

A JSON object's string ``title`` is the document's title; with a string ``text`` too (a common
corpus format) the document is that title and text, otherwise its fields are rendered.
"""

from __future__ import annotations

import json

import regex

from unified_kg_rag.adapters.parsers.base import finish, one_line, require_bytes
from unified_kg_rag.adapters.parsers.encoding import decode_text
from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.models import MetadataValue, ParsedDocument
from unified_kg_rag.util.errors import InputError

__all__ = ["JsonLinesParser", "JsonParser", "field_line", "render_json"]

# sentence-final punctuation, then closing quotes or brackets, at the end of a value
_ENDS_SENTENCE = regex.compile(r"[.!?…。！？][\p{Pe}\p{Pf}\"']*\s*$")


class JsonParser:
    """Parses ``.json`` files.

    A list's items are separated by a blank line; an object or scalar is rendered whole.

    Args:
        config: the ``parsing`` section (unused).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Decode and render ``data``.

        Raises:
            InputError: the file is empty, binary, not valid JSON (line and column named),
                nested too deeply, or holds no text.
        """
        require_bytes(data, path)
        decoded = decode_text(data, path=path)
        try:
            value = json.loads(decoded.text, parse_int=str)
        except json.JSONDecodeError as exc:
            reason = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {one_line(exc.msg)}"
            raise InputError(path, reason) from exc
        except RecursionError as exc:
            raise InputError(path, "JSON nested too deeply") from exc
        metadata: dict[str, MetadataValue] = {"encoding": decoded.encoding}
        title = ""
        if isinstance(value, dict):
            title_field, text = value.get("title"), value.get("text")
            title = title_field if isinstance(title_field, str) else ""
            if title and isinstance(text, str):
                return finish(text, path=path, title=title, metadata=metadata)
        if isinstance(value, list):
            metadata["records"] = len(value)
            text = "\n\n".join(block for block in map(render_json, value) if block.strip())
        else:
            text = render_json(value)
        return finish(text, path=path, title=title, metadata=metadata)


class JsonLinesParser:
    """Parses ``.jsonl`` files: one paragraph per non-blank line, rendered as `render_json`.

    Args:
        config: the ``parsing`` section (unused).
    """

    def __init__(self, config: ParsingConfig | None = None) -> None:
        self.config = config

    def parse(self, data: bytes, *, path: str) -> ParsedDocument:
        """Decode ``data`` and render each line.

        Raises:
            InputError: the file is empty, binary, has a line that is not valid JSON (the
                line number is named), or holds no text.
        """
        require_bytes(data, path)
        decoded = decode_text(data, path=path)
        blocks: list[str] = []
        records = 0
        for number, line in enumerate(decoded.text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line, parse_int=str)
            except json.JSONDecodeError as exc:
                reason = f"invalid JSON on line {number} (column {exc.colno}): {one_line(exc.msg)}"
                raise InputError(path, reason) from exc
            except RecursionError as exc:
                raise InputError(path, f"JSON nested too deeply on line {number}") from exc
            records += 1
            block = render_json(value)
            if block.strip():
                blocks.append(block)
        metadata: dict[str, MetadataValue] = {"encoding": decoded.encoding, "records": records}
        return finish("\n\n".join(blocks), path=path, metadata=metadata)


def render_json(value: object) -> str:
    """Render a decoded JSON value as ``key: value`` lines, one sentence each (`field_line`).

    Objects give dotted keys, lists indexed keys (``a.b[2].c: x``); a scalar at the top is
    written alone, as it is. Strings are written as they are, other scalars in JSON form
    (``true``, ``null``, ``1.5``); empty objects and lists are left out. Iterative, so depth
    is bounded only by what ``json`` itself parses.

    Args:
        value: what ``json.loads`` returned.

    Returns:
        The lines joined by LF (empty for an empty object or list).
    """
    lines: list[str] = []
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict):
            children = [(f"{key}.{k}" if key else str(k), v) for k, v in item.items()]
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(f"{key}[{i}]", v) for i, v in enumerate(item)]))
        else:
            text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            lines.append(field_line(key, text) if key else text)
    return "\n".join(lines)


def field_line(key: str, value: str) -> str:
    """Return the line ``key: value``, ended as a sentence.

    A full stop is added unless ``value`` already ends with sentence-final punctuation
    (``. ! ? …`` or a CJK full stop, closing quotes or brackets after it), so a sentence
    splitter, a quote or a chunk boundary treats the field as one sentence of its own.

    Args:
        key: the field's (dotted) key.
        value: the field's text.
    """
    value = value.rstrip()
    if not value or _ENDS_SENTENCE.search(value):
        return f"{key}: {value}"
    return f"{key}: {value}."
