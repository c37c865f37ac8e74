"""Render a prompt template into chat messages.

A template is Markdown text with ``{placeholder}`` fields; a line ``=== user ===`` splits its
system part from its user part (without it the whole template is one user message). Values
are substituted in one pass, so braces inside a value are never read as placeholders.
"""

from __future__ import annotations

from collections.abc import Mapping

import regex

from unified_kg_rag.domain.models import Message

__all__ = ["USER_SEPARATOR", "render_messages"]

USER_SEPARATOR = "=== user ==="
"""The line that splits a template into its system part and its user part."""


def render_messages(template: str, values: Mapping[str, str]) -> list[Message]:
    """Return ``[system, user]`` messages (``[user]`` without a system part) of ``template``.

    Args:
        template: the template text.
        values: placeholder name → text; only these names are substituted, other braces
            are left as written.
    """
    if values:
        pattern = regex.compile(r"\{(" + "|".join(regex.escape(k) for k in values) + r")\}")

        def fill(text: str) -> str:
            return pattern.sub(lambda m: values[m.group(1)], text).strip()
    else:

        def fill(text: str) -> str:
            return text.strip()

    lines = template.splitlines()
    if USER_SEPARATOR in (line.strip() for line in lines):
        cut = next(i for i, line in enumerate(lines) if line.strip() == USER_SEPARATOR)
        system, user = "\n".join(lines[:cut]), "\n".join(lines[cut + 1 :])
    else:
        system, user = "", template
    messages = [Message(role="system", content=fill(system))] if system.strip() else []
    messages.append(Message(role="user", content=fill(user)))
    return messages
