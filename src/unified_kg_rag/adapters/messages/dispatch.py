"""Structural dispatch of message archives: the first source whose ``matches`` accepts a file.

Source: seed 001 (``find_message_source``: first match in registration order, None when no
source claims the file, so callers count-and-skip it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from unified_kg_rag.adapters.registry import MESSAGE_SOURCES
from unified_kg_rag.ports import MessageSource

__all__ = ["find_message_source", "load_message_sources"]


def load_message_sources(names: Sequence[str] | None = None) -> list[MessageSource]:
    """Build the registered message sources, in registration order (the dispatch order).

    Args:
        names: only these sources, in this order (``--source NAME``); None for all.

    Raises:
        ConfigurationError: a name is not registered (the message lists the known ones).
    """
    chosen = MESSAGE_SOURCES.in_order() if names is None else list(names)
    return [MESSAGE_SOURCES.get(name)() for name in chosen]


def find_message_source(path: Path, sources: Sequence[MessageSource]) -> MessageSource | None:
    """Return the first of ``sources`` whose ``matches`` accepts ``path``, else None.

    Args:
        path: a candidate file (any kind of path: ``matches`` never raises).
        sources: the sources to try, in order (`load_message_sources`).
    """
    for source in sources:
        if source.matches(path):
            return source
    return None
