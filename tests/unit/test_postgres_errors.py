"""Reading why PostgreSQL could not be reached (``adapters/postgres/errors.py``).

The messages are psycopg 3.3 / libpq 16's, as they come (captured against real servers).
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from unified_kg_rag.adapters.postgres.errors import translate, unreachable_reason
from unified_kg_rag.config.models import PostgresConfig
from unified_kg_rag.util.errors import StoreConnectionError, StoreError, StoreTimeoutError

pytestmark = pytest.mark.unit

LOC = "postgresql://ukr@db:5432/ukr"


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ('connection failed: connection to server at "127.0.0.1", port 1 failed: Connection '
         "refused\n\tIs the server running on that host and accepting TCP/IP connections?",
         'connection refused, server at "127.0.0.1", port 1'),
        ('connection is bad: connection to server on socket "/tmp/x/.s.PGSQL.5432" failed: No '
         "such file or directory\n\tIs the server running locally and accepting connections "
         "on that socket?",
         'no such file or directory, server on socket "/tmp/x/.s.PGSQL.5432"'),
        ('connection failed: connection to server at "db" (10.1.2.3), port 5432 failed: '
         "timeout expired",
         'timeout expired, server at "db" (10.1.2.3), port 5432'),
        ("failed to resolve host 'db.invalid': [Errno -2] Name or service not known",
         "host name 'db.invalid' not found: name or service not known"),
        ('connection failed: connection to server on socket "/tmp/x/.s.PGSQL.5432" failed: '
         "FATAL:  the database system is shutting down",
         'the database system is shutting down, server on socket "/tmp/x/.s.PGSQL.5432"'),
    ],
)
def test_the_drivers_reason_is_read(message: str, reason: str) -> None:
    assert unreachable_reason(psycopg.OperationalError(message)) == reason


@pytest.mark.parametrize(
    "message",
    [
        # the server answered: not unreachable
        'connection failed: connection to server on socket "/tmp/x/.s.PGSQL.5432" failed: '
        'FATAL:  database "no_such_db" does not exist',
        'connection failed: connection to server at "db", port 5432 failed: FATAL:  password '
        'authentication failed for user "ukr"',
        # not about connecting
        "consuming input failed: server closed the connection unexpectedly",
        "couldn't get a connection after 2.00 sec",
    ],
)
def test_a_server_that_answered_or_a_lost_connection_gives_no_reason(message: str) -> None:
    assert unreachable_reason(psycopg.OperationalError(message)) is None


def _translate(exc: BaseException, probed: BaseException | None) -> tuple[StoreError, int]:
    calls = 0

    async def probe() -> BaseException | None:
        nonlocal calls
        calls += 1
        return probed

    error = asyncio.run(translate(exc, location=LOC, config=PostgresConfig(connect_timeout_s=2,
                                                                          pool_max_size=3),
                                  line=lambda e: str(e).splitlines()[0], probe=probe))
    return error, calls


REFUSED = psycopg.OperationalError(
    'connection failed: connection to server at "db", port 5432 failed: Connection refused')


def test_a_refused_connection_needs_no_probe() -> None:
    error, calls = _translate(REFUSED, None)
    assert isinstance(error, StoreConnectionError) and calls == 0
    assert str(error) == (f'PostgreSQL at {LOC} is unreachable (connection refused, server at '
                          '"db", port 5432)')


def test_a_pool_timeout_is_explained_by_the_probe() -> None:
    timeout = PoolTimeout("couldn't get a connection after 2.00 sec")
    error, calls = _translate(timeout, REFUSED)
    assert calls == 1 and isinstance(error, StoreConnectionError)
    assert str(error) == (f'PostgreSQL at {LOC} is unreachable (connection refused, server at '
                          '"db", port 5432): no connection within 2 s '
                          "(stores.postgres.connect_timeout_s)")
    busy, _ = _translate(timeout, None)
    assert str(busy) == (f"PostgreSQL {LOC}: no free connection within 2 s "
                         "(stores.postgres.connect_timeout_s): all 3 connections of the pool "
                         "stayed busy (stores.postgres.pool_max_size)")
    full = psycopg.OperationalError(
        'connection failed: connection to server at "db", port 5432 failed: FATAL:  sorry, '
        "too many clients already")
    refused_by_server, _ = _translate(timeout, full)
    assert str(refused_by_server).startswith(
        f"PostgreSQL {LOC}: no connection within 2 s (stores.postgres.connect_timeout_s); a "
        "new connection fails: connection failed: ")
    assert "too many clients already" in str(refused_by_server)


def test_a_lost_connection_is_unreachable_only_when_the_probe_says_so() -> None:
    lost = psycopg.OperationalError(
        "consuming input failed: server closed the connection unexpectedly")
    down, _ = _translate(lost, REFUSED)
    assert str(down) == (f'PostgreSQL at {LOC} is unreachable (connection refused, server at '
                         '"db", port 5432); the connection was lost: consuming input failed: '
                         "server closed the connection unexpectedly")
    up, _ = _translate(lost, None)
    assert str(up) == (f"PostgreSQL {LOC}: consuming input failed: server closed the "
                       "connection unexpectedly")


def test_server_errors_keep_their_kind_and_make_no_probe() -> None:
    cancelled, calls = _translate(psycopg.errors.QueryCanceled("canceling statement"), None)
    assert isinstance(cancelled, StoreTimeoutError) and calls == 0
    answered, calls = _translate(psycopg.OperationalError(
        'connection failed: connection to server at "db", port 5432 failed: FATAL:  password '
        'authentication failed for user "ukr"'), None)
    assert isinstance(answered, StoreConnectionError) and calls == 0
    assert "unreachable" not in str(answered)
    other, calls = _translate(psycopg.errors.UndefinedTable('relation "x" does not exist'), None)
    assert type(other) is StoreError and calls == 0
