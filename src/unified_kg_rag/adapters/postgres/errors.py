"""From a psycopg or pool error to the store error a user reads, its real cause first.

A server that cannot be reached reads as such, whatever noticed it first: a refused connection
(``PostgreSQL at postgresql://ukr@db:5432/ukr is unreachable (connection refused)``), a pool
that found no connection within ``connect_timeout_s``, or a statement whose connection dropped
mid-run. For the last two the driver's own message does not say why (``couldn't get a
connection after 2.00 sec``, ``server closed the connection unexpectedly``), so one direct
connection is tried (`ProbeFn`) and its failure gives the reason. A server that answered
(failed authentication, a missing database) is not "unreachable": its message is kept.

What does not belong here: the pool and transactions (`database`), password masking (`urls`).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import psycopg
import psycopg.errors
from psycopg_pool import PoolTimeout

from unified_kg_rag.config.models import PostgresConfig
from unified_kg_rag.util.errors import StoreConnectionError, StoreError, StoreTimeoutError

__all__ = ["ProbeFn", "translate", "unreachable_reason"]

ProbeFn = Callable[[], Awaitable[BaseException | None]]
"""Tries one direct connection; returns its error, or None when the server answered."""

LineFn = Callable[[BaseException], str]
"""The first line of an error's message, password masked."""

_CONNECT_FAILED = re.compile(
    r'connection to server (?P<where>at "[^"]*"(?: \([^)]*\))?, port \d+|on socket "[^"]*") '
    r"failed: (?P<reason>[^\n]+)"
)
_RESOLVE_FAILED = re.compile(r"failed to resolve host '(?P<host>[^']*)': (?P<reason>[^\n]+)")
_ERRNO = re.compile(r"^\[Errno -?\d+\]\s*")
_SERVER_UNAVAILABLE = re.compile(r"^FATAL:\s+(?P<reason>the database system is [^\n]+)")
"""A server that answered, but only to say it is starting up, shutting down or recovering."""


def unreachable_reason(exc: BaseException) -> str | None:
    """Return why a connection attempt could not reach the server, or None.

    Args:
        exc: an error from connecting (psycopg's message quotes libpq's).

    Returns:
        The driver's reason in lower case, with where it tried (``connection refused, server
        at "127.0.0.1", port 1``); None when the server answered (a ``FATAL`` from it, such as
        failed authentication) or the error is not about connecting. A server that answered
        only to say it is starting up or shutting down counts as unreachable.
    """
    text = str(exc)
    match = _CONNECT_FAILED.search(text)
    if match is not None:
        reason = match["reason"].strip()
        unavailable = _SERVER_UNAVAILABLE.match(reason)
        if unavailable is not None:
            reason = unavailable["reason"]
        elif reason.startswith("FATAL:") or not reason:
            return None
        return f"{_lower_first(reason.rstrip('.'))}, server {match['where']}"
    match = _RESOLVE_FAILED.search(text)
    if match is not None:
        reason = _ERRNO.sub("", match["reason"]).strip()
        return f"host name {match['host']!r} not found: {_lower_first(reason)}"
    if isinstance(exc, (TimeoutError, ConnectionError)):  # the probe's own bound, socket errors
        return _lower_first(str(exc).strip() or type(exc).__name__)
    return None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) == 1 else text


def _connection_lost(exc: BaseException) -> bool:
    """True for an error that says a connection broke or could not be made."""
    if isinstance(exc, (PoolTimeout, OSError)):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith(("08", "57P"))


async def translate(
    exc: BaseException,
    *,
    location: str,
    config: PostgresConfig,
    line: LineFn,
    probe: ProbeFn,
) -> StoreError:
    """Return the typed store error for a driver or pool error, its cause named first.

    Args:
        exc: the psycopg, psycopg_pool or socket error.
        location: the masked server location (`urls.masked_location`).
        config: the ``stores.postgres`` section (timeouts and pool size, for the message).
        line: `LineFn` (first line of a message, password masked).
        probe: `ProbeFn`, called only when the error does not say why the server was lost.

    Returns:
        `StoreConnectionError` for an unreachable server (``PostgreSQL at ... is unreachable
        (reason)``), failed authentication, a lost connection or an exhausted pool;
        `StoreTimeoutError` for a statement cancelled by ``statement_timeout``; anything
        else `StoreError`.
    """
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return StoreTimeoutError(
            f"PostgreSQL {location}: statement cancelled after "
            f"{config.statement_timeout_s:g} s (stores.postgres.statement_timeout_s): "
            f"{line(exc)}"
        )
    if not _connection_lost(exc):
        return StoreError(f"PostgreSQL {location}: {line(exc)}")
    reason = unreachable_reason(exc)
    if reason is not None:  # the error itself says why
        return StoreConnectionError(f"PostgreSQL at {location} is unreachable ({reason})")
    if _CONNECT_FAILED.search(str(exc)):  # the server answered: authentication, database...
        return StoreConnectionError(f"PostgreSQL {location}: {line(exc)}")
    probed = await probe()
    reason = unreachable_reason(probed) if probed is not None else None
    waited = f"{config.connect_timeout_s:g} s (stores.postgres.connect_timeout_s)"
    if isinstance(exc, PoolTimeout):
        if reason is not None:
            return StoreConnectionError(
                f"PostgreSQL at {location} is unreachable ({reason}): no connection within "
                f"{waited}"
            )
        if probed is not None:
            return StoreConnectionError(
                f"PostgreSQL {location}: no connection within {waited}; a new connection "
                f"fails: {line(probed)}"
            )
        return StoreConnectionError(
            f"PostgreSQL {location}: no free connection within {waited}: all "
            f"{config.pool_max_size} connections of the pool stayed busy "
            "(stores.postgres.pool_max_size)"
        )
    if reason is not None:
        return StoreConnectionError(
            f"PostgreSQL at {location} is unreachable ({reason}); the connection was lost: "
            f"{line(exc)}"
        )
    return StoreConnectionError(f"PostgreSQL {location}: {line(exc)}")

