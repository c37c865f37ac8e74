"""`ukr index` leaves the SQLite HNSW index built and saved, so the first query builds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytestmark = pytest.mark.integration
pytest.importorskip("usearch")

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "computing-history"


def _files(project: Path) -> list[str]:
    folder = project / ".ukr" / "ann"
    return sorted(p.name for p in folder.glob("*.usearch")) if folder.is_dir() else []


def test_an_index_run_builds_the_hnsw_index_of_collections_past_the_threshold(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified_kg_rag.cli.app import app

    monkeypatch.setenv("UKR_STORES__SQLITE__ANN__EXACT_SEARCH_MAX_VECTORS", "3")
    project = tmp_path / "p"
    result = runner.invoke(app, ["index", str(CORPUS), "-C", str(project), "--json"])
    assert result.exit_code == 0, result.output
    built = _files(project)
    # the text units collection (more than 3 vectors) has its file before any query
    assert any("-text_units-" in name for name in built), built

    query = runner.invoke(app, ["query", "Who designed Colossus?", "-C", str(project),
                                "--json"])  # fmt: skip
    assert query.exit_code == 0, query.output
    payload = json.loads(query.output)
    assert payload["sources"], payload
    assert _files(project) == built  # served from the saved file: nothing rebuilt or re-saved


def test_with_ann_off_an_index_run_writes_no_hnsw_file(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified_kg_rag.cli.app import app

    monkeypatch.setenv("UKR_STORES__SQLITE__ANN__EXACT_SEARCH_MAX_VECTORS", "3")
    monkeypatch.setenv("UKR_STORES__SQLITE__ANN__ENABLED", "false")
    project = tmp_path / "p"
    result = runner.invoke(app, ["index", str(CORPUS), "-C", str(project), "--json"])
    assert result.exit_code == 0, result.output
    assert _files(project) == []
