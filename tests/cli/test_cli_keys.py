"""``ukr keys`` and how ``ukr serve`` treats a public address with and without keys (issue 17)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified_kg_rag.cli.app import app
from unified_kg_rag.service.access import ACCESS_LOGGER


@pytest.fixture
def access_logger() -> Iterator[logging.Logger]:
    """The access logger, its level restored after the test (`ukr serve` sets it)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    level = logger.level
    yield logger
    logger.setLevel(level)


def test_keys_add_prints_the_key_once_and_list_never_shows_it(
    runner: CliRunner, tmp_path: Path
) -> None:
    added = runner.invoke(app, ["keys", "add", "ci", "--scope", "write", "-C", str(tmp_path)])
    assert added.exit_code == 0, added.output
    key = added.stdout.strip()
    assert key.startswith("ukr_") and "\n" not in key
    assert "stored in" in added.stderr and key not in added.stderr
    stored = (tmp_path / ".ukr" / "api_keys.json").read_text()
    assert key not in stored
    listed = runner.invoke(app, ["keys", "list", "-C", str(tmp_path)])
    assert listed.exit_code == 0 and listed.stdout.startswith("ci\twrite\t")
    as_json = json.loads(runner.invoke(app, ["keys", "list", "--json", "-C", str(tmp_path)]).stdout)
    assert [(k["name"], k["scopes"]) for k in as_json] == [("ci", ["write"])]
    assert set(as_json[0]) == {"name", "scopes", "created_at"}
    removed = runner.invoke(app, ["keys", "remove", "ci", "-C", str(tmp_path)])
    assert removed.exit_code == 0 and runner.invoke(
        app, ["keys", "list", "-C", str(tmp_path)]).stdout == ""


@pytest.mark.parametrize(("argv", "message"), [
    (["keys", "add", "ci", "--scope", "root"], "'root' is not a scope"),
    (["keys", "add", "no spaces"], "a key name is 1-64"),
    (["keys", "remove", "nobody"], "no key named 'nobody'"),
])
def test_keys_refuse_bad_arguments_in_one_line_with_exit_2(
    runner: CliRunner, tmp_path: Path, argv: list[str], message: str
) -> None:
    result = runner.invoke(app, [*argv, "-C", str(tmp_path)])
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_serve_binds_a_public_address_once_keys_exist_without_uvicorn_access_log(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    access_logger: logging.Logger,
) -> None:
    import uvicorn

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(uvicorn, "run", lambda api, **kw: calls.append(kw))
    assert runner.invoke(app, ["keys", "add", "ci", "-C", str(tmp_path)]).exit_code == 0
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0", "-C", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert calls == [{"host": "0.0.0.0", "port": 8420, "log_level": "info", "access_log": False,
                      "timeout_graceful_shutdown": 5}]
    assert "INSECURE" not in result.stderr
    assert access_logger.level == logging.INFO  # its own access log replaces uvicorn's


def test_serve_insecure_without_keys_warns_loudly(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    access_logger: logging.Logger,
) -> None:
    import uvicorn

    served: list[object] = []
    monkeypatch.setattr(uvicorn, "run", lambda api, **kw: served.append(api))
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0", "--insecure", "-C", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "WARNING" in result.stderr and "INSECURE: serving 0.0.0.0 without API keys" in (
        result.stderr)
    # it answers anyone: the DNS-rebinding Host check is off for this app, and only for it
    assert served[0].state.any_host is True  # type: ignore[attr-defined]
    assert "UKR_SERVICE__ALLOWED_HOSTS" not in os.environ


def test_serve_names_a_malformed_key_variable_and_not_its_value(
    runner: CliRunner, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["serve", "-C", str(tmp_path)],
                           env={"UKR_API_KEYS": "topsecret-value:everything"})
    assert result.exit_code == 2
    assert "UKR_API_KEYS: entry 1 is not KEY:SCOPE[+SCOPE]" in result.stderr
    assert "topsecret" not in result.output
