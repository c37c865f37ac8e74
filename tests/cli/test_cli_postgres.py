"""``ukr`` on PostgreSQL: the same commands, chosen with ``--stores postgres``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.corpus import write_bad_inputs, write_good_docs
from tests.support.postgres import fresh_catalog
from unified_kg_rag.cli.app import app

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture
def runner(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, postgres_url: str) -> CliRunner:
    monkeypatch.setenv("UKR_STORES__POSTGRES__URL", postgres_url)
    monkeypatch.setenv("UKR_STORES__POSTGRES__SCHEMA_NAME", fresh_catalog())
    return runner


def test_index_query_and_status_on_postgres(runner: CliRunner, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    write_good_docs(corpus)
    write_bad_inputs(corpus, big_line_bytes=20_000)
    pg = ["-C", str(tmp_path), "--stores", "postgres"]
    first = runner.invoke(app, ["index", str(corpus), *pg, "--json"])
    assert first.exit_code == 3, first.output  # the four bad files fail, one line each
    assert json.loads(first.stdout)["documents_new"] == 10
    assert len(json.loads(first.stdout)["failed"]) == 4
    again = runner.invoke(app, ["index", str(corpus), *pg, "--json"])
    assert json.loads(again.stdout)["documents_unchanged"] == 6
    assert json.loads(again.stdout)["documents_retried"] == 4
    assert json.loads(again.stdout)["text_units_embedded"] == 0

    answer = runner.invoke(app, ["query", "What do barn owls hunt at night?", *pg, "--json"])
    assert answer.exit_code == 0, answer.output
    out = json.loads(answer.stdout)
    assert "voles" in out["answer"] and out["sources"][0]["path"] == "owls.md"

    status = runner.invoke(app, ["status", *pg, "--json"])
    assert status.exit_code == 0, status.output
    report = json.loads(status.stdout)
    assert report["store"].startswith("postgresql://") and "@" in report["store"]
    (info,) = report["indexes"]
    assert info["documents"] == {"failed": 4, "processed": 6}
    assert info["embedding_dimension"] == 384

    # the SQLite store of the same project holds nothing: --stores chose the backend
    assert not (tmp_path / ".ukr" / "ukr.db").exists()


def test_postgres_without_url_exits_2_naming_the_field(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UKR_STORES__POSTGRES__URL")
    result = runner.invoke(app, ["status", "-C", str(tmp_path), "--stores", "postgres"])
    assert result.exit_code == 2
    assert "stores.postgres.url" in result.stderr


def test_unreachable_postgres_exits_with_a_store_error(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_STORES__POSTGRES__URL", "postgresql://u:hunter2@127.0.0.1:1/db")
    monkeypatch.setenv("UKR_STORES__POSTGRES__CONNECT_TIMEOUT_S", "2")
    result = runner.invoke(app, ["query", "owls", "-C", str(tmp_path), "--stores", "postgres"])
    assert result.exit_code == 1
    assert result.stderr == (
        "StoreConnectionError: PostgreSQL at postgresql://u@127.0.0.1:1/db is unreachable "
        '(connection refused, server at "127.0.0.1", port 1)\n'
    )
    assert "hunter2" not in result.stderr


def test_config_show_masks_the_database_url(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "show", "-C", str(tmp_path), "--stores", "postgres"])
    assert result.exit_code == 0, result.output
    assert "kind: postgres" in result.stdout
    assert os.environ["UKR_STORES__POSTGRES__URL"] not in result.stdout


def test_a_held_postgres_index_refuses_a_second_writer(runner: CliRunner, tmp_path: Path) -> None:
    import asyncio

    from unified_kg_rag.adapters.postgres.backend import PostgresBackend
    from unified_kg_rag.config.models import PostgresConfig

    write_good_docs(tmp_path / "docs")
    config = PostgresConfig(schema_name=os.environ["UKR_STORES__POSTGRES__SCHEMA_NAME"])

    async def hold() -> None:
        async with PostgresBackend(os.environ["UKR_STORES__POSTGRES__URL"], config) as store:
            await store.doc_registry("default").acquire_lease("worker-7:99:beef", 600)

    asyncio.run(hold())
    result = runner.invoke(
        app, ["index", str(tmp_path / "docs"), "-C", str(tmp_path), "--stores", "postgres"])
    assert result.exit_code == 2, result.output
    assert "is being written by worker-7:99:beef" in result.stderr
    status = runner.invoke(app, ["status", "-C", str(tmp_path), "--stores", "postgres", "--json"])
    assert status.exit_code == 0  # readers are not blocked by the lease


def test_a_server_error_with_an_empty_password_url_reads_as_the_server_wrote_it(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    """The guide's pgserver URL has an empty password (``postgresql://postgres:@/...``): the
    masking must leave the server's message as it was, not put ``***`` between its letters."""
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(postgres_url)
    if "host" not in info or not str(info["host"]).startswith("/"):
        pytest.fail("this test needs the pgserver test server (empty password, Unix socket)")
    url = f"postgresql://{info.get('user', 'postgres')}:@/no_such_db?host={info['host']}"
    monkeypatch.setenv("UKR_STORES__POSTGRES__URL", url)
    result = runner.invoke(app, ["status", "-C", str(tmp_path), "--stores", "postgres"])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "StoreConnectionError: PostgreSQL postgresql://postgres@/no_such_db: connection "
        f'failed: connection to server on socket "{info["host"]}/.s.PGSQL.5432" failed: '
        'FATAL:  database "no_such_db" does not exist\n'
    )
