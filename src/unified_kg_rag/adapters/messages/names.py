"""What the message sources share: handle → display-name lookup and the problem-list cap.

`MessageSourceOptions.handle_names` maps raw handles (``+15551234567``, ``bob@example.com``)
to names; several handles may map to one person. A handle is looked up exactly first, then
loosely: e-mail addresses case-insensitively, phone numbers by their digits and leading ``+``
(``+1 (555) 123-4567`` finds ``+15551234567``). Unmapped handles name themselves.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["HandleNames", "cap_problems"]

MAX_PROBLEMS = 20
"""How many problem lines a `ParsedArchive` lists before summarizing the rest."""


def _loose(handle: str) -> str:
    value = handle.strip()
    if "@" in value:
        return value.casefold()
    kept = "".join(ch for ch in value if ch.isdigit())
    if not kept:
        return value.casefold()
    return ("+" if value.startswith("+") else "") + kept


class HandleNames:
    """Looks up display names of raw handles.

    Args:
        mapping: raw handle → display name.
    """

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self._exact = dict(mapping)
        self._loose: dict[str, str] = {}
        for handle, name in mapping.items():
            self._loose.setdefault(_loose(handle), name)

    def get(self, handle: str) -> str | None:
        """Return the mapped name of ``handle``, or None when it is not mapped."""
        if handle in self._exact:
            return self._exact[handle]
        if not handle.strip():
            return None
        return self._loose.get(_loose(handle))

    def name(self, handle: str) -> str:
        """Return the mapped name of ``handle``, else ``handle`` itself."""
        mapped = self.get(handle)
        return handle if mapped is None else mapped


def cap_problems(problems: list[str], limit: int = MAX_PROBLEMS) -> tuple[str, ...]:
    """Return the first ``limit`` problem lines, plus one line counting the rest."""
    if len(problems) <= limit:
        return tuple(problems)
    return (*problems[:limit], f"... and {len(problems) - limit} more problem(s) not listed")
