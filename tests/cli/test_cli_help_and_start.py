"""Help without noise, a README that lists every command, and a cheap start (issue 16 items
12, 13 and the query's model-loading step of item 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.support.corpus import write_good_docs
from unified_kg_rag.cli.app import app

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]



def _command_paths() -> list[list[str]]:
    """Every command and group of the app, as the argument lists that reach it."""
    paths: list[list[str]] = [[]]
    root = typer.main.get_command(app)
    todo: list[tuple[list[str], object]] = [([], root)]
    while todo:
        path, command = todo.pop()
        for name, sub in getattr(command, "commands", {}).items():
            paths.append([*path, name])
            todo.append(([*path, name], sub))
    return paths


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "ukr")
def test_help_shows_no_bool_type_on_flags(runner: CliRunner, path: list[str]) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout
    assert "--help" in result.stdout


def test_readme_cli_table_lists_delete_reset_yes_and_strategies() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    table = readme[readme.index("## CLI reference"):]
    table = table[: table.index("\n\n", table.index("| command |"))]
    rows = {ln.split("|")[1].strip(): ln for ln in table.splitlines() if ln.startswith("| `ukr")}
    assert any(k.startswith("`ukr delete") for k in rows)
    assert any(k.startswith("`ukr strategies") for k in rows)
    index_row = next(v for k, v in rows.items() if k.startswith("`ukr index"))
    assert "--reset" in index_row and "--yes" in index_row


def _run_python(code: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


_IMPORTED = """
import sys
from unified_kg_rag.cli.app import app
try:
    app({args!r}, standalone_mode=False)
except SystemExit:
    pass
heavy = ("torch", "sentence_transformers", "transformers", "sklearn", "networkx", "igraph")
print("HEAVY=" + ",".join(sorted(m for m in heavy if m in sys.modules)))
"""


@pytest.mark.parametrize("args", [["--help"], ["query", "--help"], ["status"],
                                  ["strategies"]])
def test_help_and_status_import_no_model_library(tmp_path: Path, args: list[str]) -> None:
    write_good_docs(tmp_path / "docs")
    if args[0] in ("status", "strategies"):
        assert CliRunner().invoke(app, ["index", str(tmp_path / "docs"), "-C", str(tmp_path),
                                        "-q"]).exit_code == 0  # fmt: skip
    out = _run_python(_IMPORTED.format(args=[*args, "-C", str(tmp_path)]
                                       if args[0] in ("status", "strategies") else args),
                      tmp_path)  # fmt: skip
    assert "HEAVY=" in out
    assert out.rsplit("HEAVY=", 1)[1].strip() == ""


def _query_on_a_terminal(project: Path, *extra: str) -> tuple[str, str, int]:
    """Run ``ukr query`` with stderr on a pseudo-terminal; return stdout, stderr, exit code."""
    import pty
    import select

    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    env.update(TERM="xterm-256color", COLUMNS="120")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "unified_kg_rag.cli", "query", "What do owls hunt?", "-C",
         str(project), *extra], stdout=subprocess.PIPE, stderr=slave, env=env,
    )  # fmt: skip
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 300)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = proc.stdout.read() if proc.stdout else b""
    code = proc.wait(timeout=60)
    os.close(master)
    return out.decode(), err.decode(errors="replace"), code


@pytest.fixture(scope="module")
def small_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("steps")
    write_good_docs(root / "docs")
    assert CliRunner().invoke(app, ["index", str(root / "docs"), "-C", str(root),
                                    "-q"]).exit_code == 0  # fmt: skip
    return root


def test_query_on_a_terminal_shows_the_model_loading_step(small_project: Path) -> None:
    out, err, code = _query_on_a_terminal(small_project)
    assert code == 0, err
    assert "Loading the embedding model" in err
    assert "Loading" not in out and "voles" in out  # stdout holds the answer only


def test_query_json_on_a_terminal_stays_clean(small_project: Path) -> None:
    out, err, code = _query_on_a_terminal(small_project, "--json")
    assert code == 0, err
    assert json.loads(out)["answer_kind"] == "extractive"
    assert "Loading" not in err and "Retrieving" not in err


@pytest.mark.parametrize("argv", [["query", "x", "-k", "0"], ["query", "--bogus"], ["qery"]])
def test_a_usage_error_is_one_line_with_exit_2(argv: list[str], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "unified_kg_rag.cli", *argv, "-C", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("UsageError: "), done.stderr
    assert "--help')" in lines[0]
