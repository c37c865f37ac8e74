"""The one template mechanism: placeholders, the system/user split, and filling.

A template is Markdown text with ``{name}`` placeholders. Filling is one left-to-right pass:

- ``{name}`` is replaced by ``values[name]`` when ``name`` is given; a name that is not given
  is left as written;
- a template that writes ``{{`` anywhere uses ``str.format``'s escapes: ``{{`` and ``}}`` read
  as one literal brace (most packaged prompts show their JSON examples so); a template
  without ``{{`` keeps every brace that is not a placeholder as written (``{"a": {"b": 1}}``);
- a value is inserted as given and never read again, so braces inside a value (unit text,
  code, JSON) are never taken for placeholders.

A line ``=== user ===`` splits a chat template into its system part (before) and its user part
(after); each part is stripped of surrounding whitespace before it is filled; without that
line the whole template is one user message. A whole-text template (`render_text`) is filled
as written, nothing split or stripped.

Every packaged prompt renders byte-identically to the per-module renderers this replaces
(`tests/prompts/rendered_v1.json` holds their outputs), so the response cache keys and the
extraction fingerprints of existing indexes stay valid. Source: seed 000 §11.
"""

from __future__ import annotations

from collections.abc import Mapping

import regex

from unified_kg_rag.domain.models import Message

__all__ = [
    "USER_SEPARATOR",
    "fill",
    "placeholders",
    "render_messages",
    "render_text",
    "split_template",
    "uses_escapes",
]

USER_SEPARATOR = "=== user ==="
"""The line that splits a template into its system part and its user part."""

_TOKEN = regex.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SEPARATOR_LINE = regex.compile(r"^[ \t]*=== user ===[ \t]*\r?$", regex.M)


def placeholders(template: str) -> frozenset[str]:
    """Return the ``{name}`` placeholder names of ``template`` (``{{name}}`` is a literal)."""
    return frozenset(m.group(1) for m in _TOKEN.finditer(template) if m.group(1))


def uses_escapes(template: str) -> bool:
    """Return whether ``template`` uses ``{{``/``}}`` escapes (it writes ``{{`` somewhere)."""
    return "{{" in template


def fill(text: str, values: Mapping[str, str], *, escapes: bool | None = None) -> str:
    """Return ``text`` with its placeholders filled in one pass (see the module docstring).

    Args:
        text: template text.
        values: placeholder name → text; other names are left as written.
        escapes: read ``{{``/``}}`` as literal braces (None: when ``text`` writes ``{{``;
            a part of a split template takes the whole template's answer).
    """
    unescape = uses_escapes(text) if escapes is None else escapes

    def sub(m: regex.Match[str]) -> str:
        name = m.group(1)
        if name is None:  # "{{" or "}}"
            return m.group(0)[0] if unescape else m.group(0)
        return values[name] if name in values else m.group(0)

    return _TOKEN.sub(sub, text)


def split_template(template: str) -> tuple[str, str]:
    """Split a template into ``(system, user)`` on its first ``=== user ===`` line.

    A template without that line is all user text, with an empty system part. Both parts are
    stripped of surrounding whitespace.
    """
    parts = _SEPARATOR_LINE.split(template, maxsplit=1)
    if len(parts) == 1:
        return "", template.strip()
    return parts[0].strip(), parts[1].strip()


def render_messages(template: str, values: Mapping[str, str]) -> list[Message]:
    """Return ``[system, user]`` messages (``[user]`` without a system part) of ``template``.

    Args:
        template: the template text.
        values: placeholder name → text; only these names are substituted.
    """
    escapes = uses_escapes(template)
    system, user = (fill(part, values, escapes=escapes) for part in split_template(template))
    messages = [Message(role="system", content=system)] if system else []
    return [*messages, Message(role="user", content=user)]


def render_text(template: str, values: Mapping[str, str] | None = None) -> str:
    """Return a whole-text template filled (one message's text; nothing split or stripped).

    Args:
        template: the template text.
        values: placeholder name → text (none: only ``{{``/``}}`` are unescaped).
    """
    return fill(template, values or {})
