"""Asking the model again: a scope in which the LLM response cache is written but not read.

`ukr index --force-rebuild` re-asks the model for every extraction; without this scope the
response cache would answer with the replies it was meant to replace. The scope travels in a
`contextvars` variable, so the caching middleware (adapters) sees it without the application
naming an adapter.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cache_refresh_requested", "refresh_cache"]

_REFRESH: contextvars.ContextVar[bool] = contextvars.ContextVar("ukr_cache_refresh", default=False)


@contextmanager
def refresh_cache(enabled: bool = True) -> Iterator[None]:
    """Within this scope (when ``enabled``), cached replies are not served; new ones are stored."""
    token = _REFRESH.set(enabled or _REFRESH.get())
    try:
        yield
    finally:
        _REFRESH.reset(token)


def cache_refresh_requested() -> bool:
    """True inside a `refresh_cache` scope."""
    return _REFRESH.get()
