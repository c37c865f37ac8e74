"""``ukr index --cluster`` / ``indexing.cluster``: bad values fail in one line, nothing stored.

No cluster is started here (see ``tests/integration/test_ray_index.py`` for the runs on one):
a malformed value, an address nobody answers and a missing ``ray`` all stop the run before
the project's store is opened.
"""

from __future__ import annotations

import builtins
import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from unified_kg_rag.cli.app import app
from unified_kg_rag.config.cluster import check_cluster_address
from unified_kg_rag.config.models import UkrConfig


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Rivers run to the sea.", encoding="utf-8")
    return docs


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, then closed: nobody listens there
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _stored(project: Path) -> list[str]:
    return sorted(p.name for p in project.rglob("*") if p.is_file() and p.name != "ukr.yaml")


@pytest.mark.parametrize("value", ["auto", "ray://10.0.0.5:10001", "head.local:6379",
                                   "ray://[::1]:10001", " auto "])  # fmt: skip
def test_cluster_addresses_accepted(value: str) -> None:
    assert check_cluster_address(value) == value.strip()
    assert UkrConfig(indexing={"cluster": value}).indexing.cluster == value.strip()


@pytest.mark.parametrize("value", ["ray://", "http://head:10001", "head", "head:0",
                                   "head:70000", "ray://head:port", "a b:1"])  # fmt: skip
def test_malformed_cluster_addresses_refused(value: str) -> None:
    with pytest.raises(ValueError, match="is not a cluster address"):
        check_cluster_address(value)
    with pytest.raises(ValueError, match=r"indexing\.cluster"):
        UkrConfig(indexing={"cluster": value})


def test_malformed_cluster_option_fails_in_one_line(runner: CliRunner, tmp_path: Path) -> None:
    project = tmp_path / "p"
    result = runner.invoke(app, ["index", str(_docs(tmp_path)), "-C", str(project),
                                 "--cluster", "head"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "ConfigurationError: --cluster: 'head' is not a cluster address; use `ray://HOST:PORT`"
        " (Ray Client), `HOST:PORT` (a cluster's GCS address) or `auto`"]
    assert _stored(project) == []


@pytest.mark.parametrize("form", ["ray://127.0.0.1:{}", "127.0.0.1:{}"])
def test_unreachable_cluster_fails_in_one_line_before_anything_is_stored(
    runner: CliRunner, tmp_path: Path, form: str
) -> None:
    pytest.importorskip("ray", reason="the `ray` extra is not installed")
    project = tmp_path / "p"
    address = form.format(_closed_port())
    result = runner.invoke(app, ["index", str(_docs(tmp_path)), "-C", str(project),
                                 "--cluster", address])  # fmt: skip
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"ConfigurationError: --cluster / indexing.cluster: cannot connect to the Ray cluster "
        f"at {address}: ")
    assert _stored(project) == []


def test_cluster_from_the_configuration_without_ray_installed(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "ukr.yaml").write_text("indexing:\n  cluster: auto\n", encoding="utf-8")
    real_import = builtins.__import__

    def no_ray(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    result = runner.invoke(app, ["index", str(_docs(tmp_path)), "-C", str(project)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "ConfigurationError: --cluster / indexing.cluster: ray is not installed; install the "
        "`ray` extra: pip install 'unified-kg-rag[ray]'"]
    assert _stored(project) == []


def test_malformed_cluster_in_the_configuration_names_the_field(
    runner: CliRunner, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "ukr.yaml").write_text("indexing:\n  cluster: 'ray://'\n", encoding="utf-8")
    result = runner.invoke(app, ["index", str(_docs(tmp_path)), "-C", str(project)])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert "indexing.cluster" in result.stderr and "is not a cluster address" in result.stderr
    assert _stored(project) == []


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code", "first_word"),
                         [(signal.SIGINT, 130, "Interrupted"), (signal.SIGTERM, 143, "Terminated")])  # fmt: skip
def test_a_signal_while_connecting_stops_the_run_at_once(
    tmp_path: Path, sig: signal.Signals, code: int, first_word: str
) -> None:
    """A port that accepts TCP but never speaks Ray Client: ``ray.init`` waits 30 s there.

    The connection runs on a thread of its own, so Ctrl-C / SIGTERM end the command with
    130 / 143 well before Ray gives up (the subprocess is given 20 s), nothing stored.
    """
    pytest.importorskip("ray", reason="the `ray` extra is not installed")
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                accepted.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    project = tmp_path / "p"
    address = f"ray://127.0.0.1:{listener.getsockname()[1]}"
    proc = subprocess.Popen([sys.executable, "-m", "unified_kg_rag.cli", "index",
                             str(_docs(tmp_path)), "-C", str(project), "--cluster", address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(accepted) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the probe's connection, then Ray Client's own
        assert len(accepted) >= 2, "the run never tried to connect"
        time.sleep(0.5)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=20)
    finally:
        proc.kill()
        listener.close()
        for conn in accepted:
            conn.close()
    assert proc.returncode == code, stderr
    assert stderr.strip().splitlines()[-1].startswith(f"{first_word}: nothing new was stored")
    assert _stored(project) == []
