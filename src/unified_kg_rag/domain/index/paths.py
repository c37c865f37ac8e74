"""The one form a document path takes: relative to the folder it was indexed from.

Sources show it, the registry records it and a ``path`` filter matches it. A user may type
it in other forms: as shown (``notes/a.md``), with ``./``, absolute
(``/home/me/corpus/notes/a.md``), or relative to the current directory
(``corpus/notes/a.md``). `stored_path` maps each onto the stored form.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

__all__ = ["location_index", "stored_path"]


def location_index(documents: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Map each document's full location (scope + ``/`` + path) to its stored path.

    Args:
        documents: ``(source_scope, path)`` pairs, as the doc registry records them.
    """
    return {f"{scope.rstrip('/')}/{path}": path for scope, path in documents}


def stored_path(
    value: str, known: Mapping[str, str], *, cwd: str | None = None
) -> str:
    """Return the stored form of a path a user typed, or ``value`` itself when none fits.

    Tried in order: the value as stored; without leading ``./`` and normalised
    (``a/../b`` → ``b``); as a full location (scope + path); relative to ``cwd``, as a
    full location.

    Args:
        value: the path as typed.
        known: full location → stored path (`location_index`).
        cwd: the current directory (POSIX, absolute), for a path typed relative to it.

    Returns:
        The stored path, or ``value`` unchanged (it then matches nothing).
    """
    stored = set(known.values())
    if value in stored:
        return value
    plain = posixpath.normpath(value) if value else value
    if plain in stored:
        return plain
    if posixpath.isabs(plain) and plain in known:
        return known[plain]
    if cwd and not posixpath.isabs(plain):
        joined = posixpath.normpath(posixpath.join(cwd, plain))
        if joined in known:
            return known[joined]
    return value
