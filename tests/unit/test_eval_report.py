"""`evaluation.report`: a hand-written run folder rendered as Markdown and self-contained HTML."""

from __future__ import annotations

import base64
import builtins
import json
import re
from pathlib import Path
from typing import Any

import pytest

from unified_kg_rag.evaluation.report import ReportFiles, write_report
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.unit

EVIL = "<script>alert(1)</script>"
ARM = f"ppr{EVIL}"


def _summary(mean: float, low: float, high: float, n: int = 4) -> dict[str, Any]:
    return {"mean": mean, "low": low, "high": high, "n": n}


def _delta(arm: str, metric: str, est: float, low: float, high: float, better: bool | None,
           category: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {"arm": arm, "baseline": "naive", "metric": metric, "category": category,
            "estimate": est, "low": low, "high": high, "n": 4, "better": better}  # fmt: skip


def _cost(calls: int, tokens_in: int, p50: float) -> dict[str, Any]:
    return {"rows": 8, "calls": calls, "cache_hits": 1, "input_tokens": tokens_in,
            "output_tokens": 40, "embedded_texts": 4, "money": None, "latency_ms_p50": p50,
            "latency_ms_p95": p50 * 2, "retrieval_ms_p50": 5.0, "retrieval_ms_p95": 9.0}  # fmt: skip


MANIFEST: dict[str, Any] = {
    "run_id": "2026-12-02T07-00-00-ab12", "created": "2026-12-02T07:00:00Z",
    "finished": "2026-12-02T07:05:00Z", "dataset": "data/qa.jsonl",
    "questions": ["q1", "q2", "q3", "q4"], "arms": ["naive", ARM, "closed_book"],
    "baseline": "naive", "repeats": 2, "retrieval_only": False, "index": "default",
    "index_record": {"methodologies": ["naive", "ppr"], "counts": {"documents": 12}},
    "config_hash": "c0ffee", "answer_model": "qwen3:8b", "judge_model": "qwen3:8b",
    "judge_is_answer_model": True, "judges": ["correctness", "pairwise"], "seed": 0,
    "versions": {"unified-kg-rag": "0.9.0", "python": "3.11.9"}, "settings": {},
}  # fmt: skip

COMPARISON: dict[str, Any] = {
    "run_id": MANIFEST["run_id"], "baseline": "naive",
    "arms": [
        {"arm": "naive", "closed_book": False, "questions": 4, "rows": 8, "failed": 0,
         "errors": [], "metrics": {
             "recall@2": _summary(0.5, 0.25, 0.75), "recall@5": _summary(0.625, 0.375, 0.875),
             "f1": _summary(0.4, 0.2, 0.6), "cost/calls": _summary(1.0, 1.0, 1.0)},
         "cost": _cost(8, 4000, 120.0), "abstention": None},
        {"arm": ARM, "closed_book": False, "questions": 4, "rows": 8, "failed": 1,
         "errors": ["ModelError: timed out"], "metrics": {
             "recall@2": _summary(0.75, 0.5, 1.0), "recall@5": _summary(0.875, 0.625, 1.0),
             "f1": _summary(0.55, 0.3, 0.8)},
         "cost": _cost(16, 6000, 250.5),
         "abstention": {"n_answerable": 3, "n_unanswerable": 1, "precision": 1.0,
                        "recall": 0.5}},
        {"arm": "closed_book", "closed_book": True, "questions": 4, "rows": 8, "failed": 0,
         "errors": [], "metrics": {"f1": _summary(0.125, 0.0, 0.25)},
         "cost": _cost(8, 800, 80.0), "abstention": None},
    ],
    "deltas": [
        _delta(ARM, "recall@2", 0.25, 0.05, 0.45, True),
        _delta(ARM, "f1", 0.15, -0.1, 0.4, None),
        _delta(ARM, "cost/calls", 1.0, 1.0, 1.0, False),
        _delta("closed_book", "f1", -0.275, -0.5, -0.05, False),
    ],
    "by_category": [
        _delta(ARM, "f1", 0.2, -0.1, 0.5, None, category=EVIL),
        _delta(ARM, "recall@5", 0.5, 0.25, 0.75, True, category=EVIL),
        _delta(ARM, "f1", 0.1, -0.2, 0.4, None, category="bridge"),
    ],
    "categories": {EVIL: 2, "bridge": 2},
    "category_means": {
        EVIL: {"naive": {"f1": 0.3}, ARM: {"f1": 0.5}, "closed_book": {"f1": 0.1}},
        "bridge": {"naive": {"f1": 0.5}, ARM: {"f1": 0.6}, "closed_book": {"f1": 0.15}},
    },
    "abstention_precision": [_delta(ARM, "abstention/precision", 0.1, -0.2, 0.4, None)],
    "pairwise": {ARM: {
        "pairs": 4, "failed": 0, "unjudged": 0,
        "criteria": {"correctness": {"wins": 2, "losses": 1, "ties": 0, "inconsistent": 1,
                                     "failed": 0, "judged": 4, "unjudged": 0,
                                     "win_rate": 0.6667, "position_consistency": 0.75}},
        "length": {"pairs": 4, "correlation": {"correctness": None}, "buckets": [
            {"label": "<=0.67", "pairs": 0, "decided": {"correctness": 0},
             "win_rate": {"correctness": None}},
            {"label": "1.1-1.5", "pairs": 3, "decided": {"correctness": 3},
             "win_rate": {"correctness": 0.6667}}]}}},
    "judge_failures": {"correctness": 2},
    "gates": [{"expression": f"{ARM}.recall@5 < naive.recall@5 + 0.03", "violated": False,
               "left": 0.875, "right": 0.655, "reason": ""},
              {"expression": "naive.f1 < 0.5", "violated": True, "left": 0.4, "right": 0.5,
               "reason": ""}],
    "stats": {"resamples": 2000, "confidence": 0.9, "seed": 7},
    "warnings": ["2 questions have no supporting documents"],
}  # fmt: skip


def _run_dir(tmp_path: Path, *, comparison: bool = True) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
    if comparison:
        (run / "comparison.json").write_text(json.dumps(COMPARISON), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    """The report of the hand-written run (read-only: drawn once for the module)."""
    return write_report(_run_dir(tmp_path_factory.mktemp("report")), title="Nightly <b>eval</b>")


def _row(text: str, first_cell: str) -> str:
    """The Markdown table row whose first cell is ``first_cell``."""
    return next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))


def test_markdown_tables_hold_the_hand_set_values(report: ReportFiles) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    assert report.markdown == report.markdown.parent / "report.md"
    assert report.markdown.parent.name == "run"
    # arms are columns, metrics rows
    assert md.count("| metric | naive |") == 1
    assert "(no retrieval) |" in md.split("| metric | naive |")[1].splitlines()[0]
    assert _row(md, "questions").startswith("| questions | 4 |")
    assert _row(md, "recall@2").startswith("| recall@2 | 0.500 [0.250, 0.750] |")
    assert _row(md, "f1").startswith("| f1 | 0.400 [0.200, 0.600] |")
    assert _row(md, "f1").endswith("| 0.125 [0.000, 0.250] |")
    assert "**Mean per arm [90% interval]**" in md
    # deltas: signed, with the marker; the main metrics first, cost after
    assert "| recall@2 | +0.250 [+0.050, +0.450] | 4 | ▲ better |" in md
    assert "| f1 | +0.150 [-0.100, +0.400] | 4 | · inconclusive |" in md
    assert "| f1 | -0.275 [-0.500, -0.050] | 4 | ▼ worse |" in md
    assert md.index("| recall@2 | +0.250") < md.index("| cost/calls |")
    # per category: headline answer and retrieval metric, compact
    assert "| bridge | 2 | +0.100 · | — |" in md
    # cost: totals and latency percentiles in ms
    assert "| naive | 8 | 8 | 1 | 4,000 | 40 | 120.0 | 240.0 | 5.0 | 9.0 |" in md
    # pairwise: win rate and position consistency, then the length buckets
    assert ("| ppr&lt;script>alert(1)&lt;/script> | 3 | 1 | 1.000 | 0.500 |" in md)
    assert "| naive | +0.100 [-0.200, +0.400] | 4 | · inconclusive |" in md
    assert "| correctness | 0.667 | 0.750 | 2 | 1 | 0 | 1 | 0 |" in md
    assert "| 1.1-1.5 | 3 | 0.667 |" in md
    assert "| naive.f1 &lt; 0.5 | FAIL | 0.400 | 0.500 |  |" in md
    assert "1 of 2 gates failed." in md
    assert "> **Warning:** The judge model (qwen3:8b) is also the answer model" in md
    assert "judge correctness: 2 failed verdicts" in md
    assert "2 questions have no supporting documents" in md
    assert "95%" not in md and "2,000 resamples, seed 7" in md
    assert "| index methodologies | naive, ppr |" in md
    assert "| index counts | documents: 12 |" in md


def test_every_figure_is_written_linked_and_embedded(report: ReportFiles) -> None:
    files = report
    names = ["recall_at_k", "deltas", "cost_quality", "categories"]
    assert files.figures == [f"report-figures/{n}.png" for n in names]
    md = files.markdown.read_text(encoding="utf-8")
    page = files.html.read_text(encoding="utf-8")
    for rel in files.figures:
        assert (files.markdown.parent / rel).read_bytes().startswith(b"\x89PNG")
        assert f"]({rel})" in md
    images = re.findall(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 4
    svgs = [base64.b64decode(i).decode("utf-8") for i in images]
    assert all(s.lstrip().startswith("<?xml") and "</svg>" in s for s in svgs)
    # text stays text, escaped by the SVG writer: the arm's name in the recall legend
    assert "ppr&lt;script&gt;" in svgs[0]
    assert len(page.encode()) < 300_000
    # same run, same bytes (a report can be committed and diffed)
    again = write_report(files.markdown.parent, out_dir=files.markdown.parent / "again",
                         title="Nightly <b>eval</b>")  # fmt: skip
    assert again.html.read_text(encoding="utf-8") == page


def test_html_is_self_contained_and_escapes_the_data(report: ReportFiles) -> None:
    page = report.html.read_text("utf-8")
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(script|link|iframe)\b", page, re.IGNORECASE)
    assert not re.search(r"""(src|href)=["'](?!data:)""", page)
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<title>Nightly &lt;b&gt;eval&lt;/b&gt;</title>" in page
    assert "<caption>Mean per arm [90% interval]</caption>" in page
    assert '<td class="better">+0.250 [+0.050, +0.450]</td>' not in page
    assert '<td class="better l">▲ better</td>' in page
    assert '<td class="fail l">FAIL</td>' in page
    assert 'class="warn" role="alert"' in page
    assert "prefers-color-scheme:dark" in page


def test_markdown_escapes_markup_and_cell_breaks(report: ReportFiles) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    assert md.startswith("# Nightly &lt;b>eval&lt;/b>\n")
    assert EVIL not in md
    assert "| metric | naive | ppr&lt;script>alert(1)&lt;/script> |" in md


def test_out_dir_and_default_title(tmp_path: Path) -> None:
    out = tmp_path / "site" / "eval"
    files = write_report(_run_dir(tmp_path), out_dir=out)
    assert files.markdown == out / "report.md" and files.html == out / "report.html"
    assert (out / "report-figures" / "deltas.png").is_file()
    assert not (tmp_path / "run" / "report.md").exists()
    assert files.markdown.read_text("utf-8").startswith(f"# Evaluation {MANIFEST['run_id']}\n")


def test_a_missing_comparison_says_how_to_build_it(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, comparison=False)
    with pytest.raises(UsageError) as info:
        write_report(run)
    assert info.value.field == str(run)
    assert str(info.value) == (f"{run}: no comparison.json: run `ukr eval data/qa.jsonl "
                               f"--from-results {run}` first")  # fmt: skip


def test_a_folder_without_manifest_or_with_bad_json_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no manifest\.json"):
        write_report(tmp_path)
    with pytest.raises(UsageError, match="no such directory"):
        write_report(tmp_path / "nope")
    run = _run_dir(tmp_path)
    (run / "comparison.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(UsageError, match=r"comparison\.json: not a JSON object"):
        write_report(run)


def test_without_matplotlib_the_tables_stay_and_a_note_replaces_the_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run_dir(tmp_path)
    write_report(run)  # an earlier report drew the figures
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    files = write_report(run)
    assert files.figures == []
    md = files.markdown.read_text("utf-8")
    page = files.html.read_text("utf-8")
    for text in (md, page):
        assert "Figures not drawn: matplotlib is not installed" in text
        assert "0.500 [0.250, 0.750]" in text
    assert "<img" not in page and "![" not in md
    assert not list((run / "report-figures").glob("*.png"))


def test_sections_without_data_are_left_out(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"run_id": "r", "dataset": "d.jsonl"}), "utf-8")
    (run / "comparison.json").write_text(json.dumps({"run_id": "r", "baseline": "naive", "arms": [
        {"arm": "naive", "metrics": {"em": _summary(1.0, 1.0, 1.0)}, "cost": {"rows": 1}}]}),
        "utf-8")  # fmt: skip
    files = write_report(run)
    md = files.markdown.read_text("utf-8")
    assert files.figures == []  # no recall, delta, f1/recall@5 or category to draw
    assert "| metric | naive |" in md and "| em | 1.000 [1.000, 1.000] |" in md
    for absent in ("## Differences", "## Per question category", "## Gates", "## Pairwise",
                   "## Abstention", "## Warnings"):  # fmt: skip
        assert absent not in md
