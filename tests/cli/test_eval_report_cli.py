"""``ukr eval report RUN_DIR``: the command function on a small app of its own.

``cli/evaluate.py`` registers `report_command` on ``eval_app``; these tests register it on a
two-command app so they do not depend on that line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from unified_kg_rag.cli.eval_report import report_command

pytestmark = pytest.mark.unit

app = typer.Typer()
app.command("report")(report_command)


@app.command("other")
def _other() -> None:
    """A second command, so ``report`` is a subcommand as under ``ukr eval``."""


def _run_dir(tmp_path: Path, *, comparison: bool = True) -> Path:
    run = tmp_path / "run-1"
    run.mkdir()
    manifest = {"run_id": "run-1", "created": "2026-12-02T07:00:00Z", "dataset": "qa.jsonl",
                "arms": ["naive", "ppr"], "baseline": "naive"}  # fmt: skip
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    if comparison:
        summary = {"mean": 0.5, "low": 0.25, "high": 0.75, "n": 2}
        arms = [{"arm": a, "questions": 2, "rows": 2, "failed": 0,
                 "metrics": {"recall@5": summary}, "cost": {"rows": 2, "latency_ms_p50": 12.5}} for a in ("naive", "ppr")]
        comp = {"run_id": "run-1", "baseline": "naive", "arms": arms,
                "deltas": [{"arm": "ppr", "baseline": "naive", "metric": "recall@5",
                            "estimate": 0.0, "low": -0.1, "high": 0.1, "n": 2, "better": None}],
                "stats": {"resamples": 100, "confidence": 0.95, "seed": 0}}  # fmt: skip
        (run / "comparison.json").write_text(json.dumps(comp), encoding="utf-8")
    return run


def test_json_lists_the_files_written(runner: CliRunner, tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    out = tmp_path / "site"
    result = runner.invoke(app, ["report", str(run), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)
    assert files["markdown"] == str(out / "report.md")
    assert files["html"] == str(out / "report.html")
    # recall@k, the forest plot and cost/quality (recall@5); no categories
    assert files["figures"] == ["report-figures/recall_at_k.png", "report-figures/deltas.png",
                                "report-figures/cost_quality.png"]  # fmt: skip
    assert Path(files["html"]).read_text("utf-8").count("<img ") == 3
    md = Path(files["markdown"]).read_text()
    assert "| metric | naive |" in md and "| questions | 2 |" in md
    assert "| recall@5 | 0.500 [0.250, 0.750] | 0.500 [0.250, 0.750] |" in md


def test_plain_output_says_what_was_written(runner: CliRunner, tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    result = runner.invoke(app, ["report", str(run), "--title", "Nightly"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (f"Wrote {run / 'report.md'} and {run / 'report.html'} "
                                     "(3 figures)")  # fmt: skip
    assert (run / "report.md").read_text("utf-8").startswith("# Nightly\n")


def test_a_run_without_comparison_exits_2_with_the_hint(
    runner: CliRunner, tmp_path: Path
) -> None:
    run = _run_dir(tmp_path, comparison=False)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "UsageError" in result.stderr and "--from-results" in result.stderr
    assert not (run / "report.md").exists()
