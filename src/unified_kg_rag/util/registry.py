"""A typed, name-keyed registry for plugins (providers, parsers, strategies).

Registering is the only import-time effect a plugin module has. Heavy adapters register a
*loader* (a function that imports the library on first use), so an unselected plugin costs
nothing. Lookups of unknown names raise `ConfigurationError` listing the registered names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps plugin names to registered objects of type ``T``.

    Args:
        role: what the registry holds, used in error messages (``"llm provider"``).
        field: the configuration field whose value selects an entry (``"llm.kind"``), if any.
    """

    def __init__(self, role: str, *, field: str | None = None) -> None:
        self.role = role
        self.field = field
        self._items: dict[str, T] = {}

    def register(self, name: str, item: T, *, replace: bool = False) -> T:
        """Register ``item`` under ``name``.

        Raises:
            ValueError: ``name`` is taken and ``replace`` is false (a programming error).
        """
        key = name.lower()
        if key in self._items and not replace:
            raise ValueError(f"{self.role} {name!r} is already registered")
        self._items[key] = item
        return item

    def decorator(self, name: str) -> Callable[[T], T]:
        """Return a decorator that registers the decorated object under ``name``."""

        def wrap(item: T) -> T:
            return self.register(name, item)

        return wrap

    def get(self, name: str) -> T:
        """Return the entry registered as ``name`` (case-insensitive).

        Raises:
            ConfigurationError: no entry has that name; the message lists the registered names.
        """
        try:
            return self._items[name.lower()]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise ConfigurationError(
                f"unknown {self.role} {name!r}; registered: {known}", field=self.field
            ) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> list[str]:
        """Return the registered names, sorted."""
        return sorted(self._items)

    def in_order(self) -> list[str]:
        """Return the registered names in registration order (for first-match dispatch).

        Re-registering a name with ``replace=True`` keeps its original position.
        """
        return list(self._items)
