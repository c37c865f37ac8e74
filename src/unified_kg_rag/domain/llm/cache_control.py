"""Controlling the LLM response cache from the application, through `contextvars` scopes.

- `refresh_cache`: the cache is written but not read. `ukr index --force-rebuild` re-asks
  the model for every extraction; without it the cache would answer with the replies it was
  meant to replace.
- `accept_replies`: a validator of reply texts. The cache stores only replies the caller can
  use and serves a stored reply only if it still passes, so a reply that failed to parse
  (prose, a broken report) is asked again on the next run instead of failing forever.

The scopes travel in `contextvars` variables, so the caching middleware (adapters) sees them
without the application naming an adapter; each asyncio task has its own.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["accept_replies", "cache_refresh_requested", "refresh_cache", "reply_acceptable"]

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


_VALIDATOR: contextvars.ContextVar[Callable[[str], bool] | None] = contextvars.ContextVar(
    "ukr_cache_validator", default=None
)


@contextmanager
def accept_replies(validator: Callable[[str], bool]) -> Iterator[None]:
    """Within this scope, only reply texts ``validator`` accepts are cached or served."""
    token = _VALIDATOR.set(validator)
    try:
        yield
    finally:
        _VALIDATOR.reset(token)


def reply_acceptable(text: str) -> bool:
    """True when no validator is in scope or the validator accepts ``text`` (never raises)."""
    validator = _VALIDATOR.get()
    if validator is None:
        return True
    try:
        return bool(validator(text))
    except Exception:
        return False
