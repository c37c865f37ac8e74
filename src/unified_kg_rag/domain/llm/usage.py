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

__all__ = ["current_usage", "record_usage", "spend_note", "usage_scope"]

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


def current_usage() -> TokenUsage | None:
    """Return the outermost open scope's usage (a whole run's spend so far), if any."""
    scopes = _SCOPES.get()
    return scopes[0] if scopes else None


def spend_note() -> str:
    """Return ``"12,345 tokens"`` spent in the outermost scope, for progress bars ("" when none)."""
    usage = current_usage()
    if usage is None or not (usage.input_tokens or usage.output_tokens):
        return ""
    return f"{usage.input_tokens + usage.output_tokens:,} tokens"
