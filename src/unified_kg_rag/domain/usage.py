"""Usage metering per scope (a query, an indexing run) through `contextvars`.

A scope collects `TokenUsage` from every model call made inside it, including calls made by
tasks it spawns (contextvars are copied into tasks). Scopes nest: a call is counted in every
open scope.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from unified_kg_rag.domain.models import TokenUsage

__all__ = ["record_usage", "usage_scope"]

_SCOPES: contextvars.ContextVar[tuple[TokenUsage, ...]] = contextvars.ContextVar(
    "ukr_usage_scopes", default=()
)


@contextmanager
def usage_scope() -> Iterator[TokenUsage]:
    """Open a metering scope; yields the `TokenUsage` that calls inside it add to."""
    usage = TokenUsage()
    token = _SCOPES.set((*_SCOPES.get(), usage))
    try:
        yield usage
    finally:
        _SCOPES.reset(token)


def record_usage(delta: TokenUsage) -> None:
    """Add ``delta`` to every open scope (a no-op outside any scope)."""
    for usage in _SCOPES.get():
        usage.add(delta)
