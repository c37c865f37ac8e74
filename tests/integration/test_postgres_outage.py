"""A PostgreSQL outage is reported as one: "PostgreSQL at <URL> is unreachable (<reason>)".

Whatever notices it first: the pool that finds no connection, a statement whose connection
drops, the lease heartbeat of an index run. Real servers only: the session's pgserver reached
through a TCP port the test closes (`TcpForwarder`), and a private pgserver the test crashes
(`PrivateServer`). A server that answers keeps its own message.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.support.postgres import PrivateServer, TcpForwarder, fresh_catalog

from unified_kg_rag.adapters.postgres.backend import PostgresBackend
from unified_kg_rag.adapters.postgres.database import Conn
from unified_kg_rag.config.models import PostgresConfig
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.util.errors import StoreConnectionError

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

TU = Collection.TEXT_UNITS


@pytest.fixture
def forwarder(postgres_url: str) -> Iterator[TcpForwarder]:
    if "host=" not in postgres_url:
        pytest.fail("the outage tests need the pgserver test server (Unix socket)")
    proxy = TcpForwarder(postgres_url.rsplit("host=", 1)[1] + "/.s.PGSQL.5432")
    yield proxy
    proxy.stop()


def test_a_pool_timeout_on_a_port_with_nothing_listening_says_connection_refused(
    forwarder: TcpForwarder, postgres_url: str
) -> None:
    url = forwarder.url(postgres_url)
    config = PostgresConfig(schema_name=fresh_catalog(), connect_timeout_s=2, pool_min_size=1)

    async def body() -> None:
        async with PostgresBackend(url, config) as store:
            assert await store.search_index("i").count(TU) == 0  # the pool is open
            forwarder.stop()  # nothing listens on the port any more
            started = time.monotonic()
            with pytest.raises(StoreConnectionError) as err:
                await store.search_index("i").count(TU)
            assert time.monotonic() - started < 30
            port = forwarder.port
            assert str(err.value) == (
                f"PostgreSQL at postgresql://postgres@127.0.0.1:{port}/postgres is unreachable "
                f'(connection refused, server at "127.0.0.1", port {port}): no connection '
                "within 2 s (stores.postgres.connect_timeout_s)"
            )
            assert "***" not in str(err.value)  # the empty password garbles nothing
            assert "***" not in str(err.value.__cause__)

    asyncio.run(body())


def test_a_statement_whose_server_went_away_names_the_outage(
    forwarder: TcpForwarder, postgres_url: str
) -> None:
    url = forwarder.url(postgres_url)
    config = PostgresConfig(schema_name=fresh_catalog(), connect_timeout_s=2)

    async def body() -> None:
        async with PostgresBackend(url, config) as store:

            async def slow(conn: Conn) -> None:
                await conn.execute("SELECT pg_sleep(10)")

            call = asyncio.create_task(store.database.catalog_tx(slow))
            await asyncio.sleep(0.5)
            forwarder.stop()
            with pytest.raises(StoreConnectionError) as err:
                await asyncio.wait_for(call, 30)
            text = str(err.value)
            assert text.startswith(
                f"PostgreSQL at postgresql://postgres@127.0.0.1:{forwarder.port}/postgres is "
                "unreachable (connection refused")
            assert "; the connection was lost: " in text

    asyncio.run(body())


def test_a_dropped_connection_to_a_server_still_up_is_not_called_unreachable(
    forwarder: TcpForwarder, postgres_url: str
) -> None:
    url = forwarder.url(postgres_url)
    config = PostgresConfig(schema_name=fresh_catalog(), connect_timeout_s=2)

    async def body() -> None:
        async with PostgresBackend(url, config) as store:

            async def slow(conn: Conn) -> None:
                await conn.execute("SELECT pg_sleep(10)")

            call = asyncio.create_task(store.database.catalog_tx(slow))
            await asyncio.sleep(0.5)
            forwarder.drop_connections()  # the port still accepts: the server is reachable
            with pytest.raises(StoreConnectionError) as err:
                await asyncio.wait_for(call, 30)
            assert "unreachable" not in str(err.value)
            assert str(err.value).startswith(
                f"PostgreSQL postgresql://postgres@127.0.0.1:{forwarder.port}/postgres: ")
            assert await store.list_indexes() == []  # and the next call works

    asyncio.run(body())


def test_a_pool_timeout_while_the_server_answers_says_the_pool_was_busy(
    postgres_url: str,
) -> None:
    config = PostgresConfig(schema_name=fresh_catalog(), connect_timeout_s=1, pool_min_size=0,
                            pool_max_size=1)  # fmt: skip

    async def body() -> None:
        async with PostgresBackend(postgres_url, config) as store:
            loop = asyncio.get_running_loop()
            held = asyncio.Event()

            async def hold(conn: Conn) -> None:  # runs on the backend's own loop thread
                loop.call_soon_threadsafe(held.set)
                await conn.execute("SELECT pg_sleep(3)")

            holder = asyncio.create_task(store.database.catalog_tx(hold))
            await asyncio.wait_for(held.wait(), 10)
            with pytest.raises(StoreConnectionError) as err:
                await store.list_indexes()
            assert str(err.value).endswith(
                "no free connection within 1 s (stores.postgres.connect_timeout_s): all 1 "
                "connections of the pool stayed busy (stores.postgres.pool_max_size)")
            assert "unreachable" not in str(err.value)
            await holder

    asyncio.run(body())


def _write_corpus(folder: Path, n: int) -> None:
    folder.mkdir()
    words = ["harbour", "lighthouse", "keeper", "lamp", "tide", "river", "valley", "forest", "meadow", "orchard", "granary", "mill", "bridge", "ferry", "quarry"]
    for i in range(n):
        text = " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(120))
        (folder / f"doc{i:03d}.md").write_text(f"# Document {i}\n\n{text}\n", encoding="utf-8")


def _documents(url: str, catalog: str) -> int:
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
            row = conn.execute(
                "SELECT schema_name FROM " + f'"{catalog}".indexes WHERE name = %s',
                ("default",)).fetchone()
            if row is None:
                return 0
            count = conn.execute(f'SELECT count(*) FROM "{row[0]}".doc_records').fetchone()
            return int(count[0]) if count else 0
    except psycopg.Error:
        return 0


def test_an_index_run_whose_database_crashes_reports_the_outage_not_a_lost_lease(
    tmp_path: Path,
) -> None:
    """`ukr index` with a short lease; the PostgreSQL postmaster is killed mid-run. The run
    must end naming the unreachable server first (exit 1), not "LeaseLostError ... another
    run may own the index now"."""
    server = PrivateServer(tmp_path / "pgdata")
    catalog = fresh_catalog()
    try:
        _write_corpus(tmp_path / "docs", 150)
        env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
        env.update(UKR_STORES__KIND="postgres", UKR_STORES__POSTGRES__URL=server.url,
                   UKR_STORES__POSTGRES__SCHEMA_NAME=catalog,
                   UKR_STORES__POSTGRES__CONNECT_TIMEOUT_S="2", UKR_INDEXING__LEASE_S="3",
                   UKR_INDEXING__BATCH_DOCUMENTS="5")  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "unified_kg_rag.cli", "index", str(tmp_path / "docs"),
             "-C", str(tmp_path / "project")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            if _documents(server.url, catalog) >= 5:
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()  # still running: stopped mid-run
        server.kill()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.cleanup()
    last = stderr.strip().splitlines()[-1]
    assert proc.returncode == 1, stderr
    assert last.startswith(
        "StoreConnectionError: PostgreSQL at postgresql://postgres@/postgres is unreachable "
        f'(connection refused, server on socket "{server.socket_dir}/.s.PGSQL.5432")'), stderr
    assert "LeaseLostError" not in stderr and "another run may own" not in stderr
    assert "***" not in stderr
