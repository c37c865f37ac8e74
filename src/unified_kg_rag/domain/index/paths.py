"""The one form a document path takes: relative to the folder it was indexed from.

Sources show it, the registry records it and a ``path`` filter matches it. A user may type
it in other forms: as shown (``notes/a.md``), with ``./``, absolute
(``/home/me/corpus/notes/a.md``), or relative to the current directory
(``corpus/notes/a.md``). `stored_path` maps each onto the stored form.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Iterable, Mapping

__all__ = ["full_location", "full_location_of", "location_index", "stored_path"]


def location_index(documents: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Map each document's full location (scope + ``/`` + path) to its stored path.

    Args:
        documents: ``(source_scope, path)`` pairs, as the doc registry records them.
    """
    return {full_location_of(scope, path): path for scope, path in documents}


def full_location_of(source_scope: str, path: str) -> str:
    """A document's full location: its folder (source scope) joined with its stored path."""
    return f"{source_scope.rstrip('/')}/{path}"


def stored_path(
    value: str, known: Mapping[str, str], *, cwd: str | None = None
) -> str:
    """Return the stored form of a path a user typed, or ``value`` itself when none fits.

    Tried in order: the value as stored; without leading ``./`` and normalised
    (``a/../b`` → ``b``); as a full location (scope + path); relative to ``cwd``, as a
    full location. Each is compared in Unicode NFC too (a name typed in NFD, as macOS
    passes it, matches its NFC record and the reverse).

    Args:
        value: the path as typed.
        known: full location → stored path (`location_index`).
        cwd: the current directory (POSIX, absolute), for a path typed relative to it.

    Returns:
        The stored path, or ``value`` unchanged (it then matches nothing).
    """
    stored = {_nfc(p): p for p in known.values()}
    plain = posixpath.normpath(value) if value else value
    for form in (value, plain):
        if _nfc(form) in stored:
            return stored[_nfc(form)]
    location = full_location(value, known, cwd=cwd)
    return known[location] if location is not None else value


def full_location(
    value: str, known: Mapping[str, str], *, cwd: str | None = None
) -> str | None:
    """Return the full location (a key of ``known``) ``value`` names exactly, else None.

    Only an absolute path, or a path relative to ``cwd``, names one document exactly; the
    shown form (relative to the indexed folder) may be held by documents of several
    folders.

    Args:
        value: the path as typed.
        known: full location → stored path (`location_index`).
        cwd: the current directory (POSIX, absolute).
    """
    locations = {_nfc(loc): loc for loc in known}
    plain = posixpath.normpath(value) if value else value
    if posixpath.isabs(plain) and _nfc(plain) in locations:
        return locations[_nfc(plain)]
    if cwd and plain and not posixpath.isabs(plain):
        joined = posixpath.normpath(posixpath.join(cwd, plain))
        if _nfc(joined) in locations:
            return locations[_nfc(joined)]
    return None


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)
