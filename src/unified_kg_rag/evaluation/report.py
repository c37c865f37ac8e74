"""``ukr eval report``: a run's results as ``report.md`` and one self-contained ``report.html``.

A report is a pure function of the run folder's ``manifest.json`` and ``comparison.json``
(seed 000 §9: "a comparison is a pure function of saved files"): no model call, no index.
Both files are read as plain JSON objects, so a report reads runs written by other versions
(a field it lacks is left out, never invented).

What belongs here: reading the folder, the header and warnings sections, and writing the
files. The tables are `evaluation.report_tables`, the figures `evaluation.report_figures`
(matplotlib, optional), the markup `evaluation.report_render`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from unified_kg_rag.evaluation.report_figures import FIGURE_NAMES, Figure, draw_figures
from unified_kg_rag.evaluation.report_render import to_html, to_markdown
from unified_kg_rag.evaluation.report_tables import (
    Section,
    Table,
    abstention_tables,
    arms,
    as_list,
    as_map,
    category_table,
    cost_table,
    delta_tables,
    fmt,
    gate_table,
    join,
    main_table,
    pairwise_tables,
)
from unified_kg_rag.util.errors import UsageError

__all__ = ["FIGURES_DIR", "ReportFiles", "build_sections", "load_run", "write_report"]

logger = logging.getLogger(__name__)

FIGURES_DIR = "report-figures"
"""The folder beside ``report.md`` holding its figures as PNG files."""

NO_MATPLOTLIB = ("Figures not drawn: matplotlib is not installed "
                 "(pip install 'unified-kg-rag[viz]').")  # fmt: skip


class ReportFiles(BaseModel):
    """What `write_report` wrote.

    Attributes:
        markdown: ``report.md``.
        html: ``report.html`` (self-contained: figures embedded).
        figures: the PNG files ``report.md`` links, relative to its folder
            (``report-figures/recall_at_k.png`` ...); empty without matplotlib.
    """

    markdown: Path
    html: Path
    figures: list[str]


def write_report(
    run_dir: Path, *, out_dir: Path | None = None, title: str | None = None
) -> ReportFiles:
    """Write ``report.md``, ``report.html`` and ``report-figures/*.png`` for a saved run.

    Args:
        run_dir: the run folder ``ukr eval`` wrote (``manifest.json``, ``comparison.json``).
        out_dir: where to write (created); default ``run_dir``.
        title: the report's title; default ``Evaluation RUN_ID``.

    Returns:
        The paths written.

    Raises:
        UsageError: ``run_dir`` holds no manifest or no comparison (run
            ``ukr eval DATASET --from-results RUN_DIR`` to build it), or one is not a JSON
            object.
        OSError: a file cannot be written.
    """
    manifest, comparison = load_run(run_dir)
    out = out_dir or run_dir
    run_id = manifest.get("run_id") or comparison.get("run_id") or run_dir.name
    title = title or f"Evaluation {run_id}"
    try:
        figures = draw_figures(comparison)
        note = None
    except ImportError:
        logger.info("matplotlib is not installed: the report has no figures")
        figures, note = [], NO_MATPLOTLIB
    sections = build_sections(manifest, comparison, figures_note=note)
    out.mkdir(parents=True, exist_ok=True)
    pngs = _write_pngs(out / FIGURES_DIR, figures)
    titles = {f.name: (f.title, path) for f, path in zip(figures, pngs, strict=True)}
    md_path, html_path = out / "report.md", out / "report.html"
    md_path.write_text(to_markdown(title, sections, titles), encoding="utf-8")
    html_path.write_text(to_html(title, sections, figures), encoding="utf-8")
    return ReportFiles(markdown=md_path, html=html_path, figures=pngs)


def load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a run folder's manifest and comparison as JSON objects.

    Raises:
        UsageError: the folder, its manifest or its comparison is missing, or a file is not
            a JSON object (the field names the folder or the file).
    """
    if not run_dir.is_dir():
        reason = "not a directory" if run_dir.exists() else "no such directory"
        raise UsageError(reason, field=str(run_dir))
    if not (run_dir / "manifest.json").is_file():
        raise UsageError("not a run folder (no manifest.json)", field=str(run_dir))
    manifest = _read_object(run_dir / "manifest.json")
    if not (run_dir / "comparison.json").is_file():
        dataset = manifest.get("dataset") or "DATASET"
        raise UsageError(f"no comparison.json: run `ukr eval {dataset} --from-results "
                         f"{run_dir}` first", field=str(run_dir))  # fmt: skip
    return manifest, _read_object(run_dir / "comparison.json")


def _read_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", field=str(path)) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"not JSON ({exc})", field=str(path)) from exc
    if not isinstance(value, dict):
        raise UsageError("not a JSON object", field=str(path))
    return value


def _write_pngs(folder: Path, figures: list[Figure]) -> list[str]:
    """Write each figure's PNG; remove figures an earlier report drew and this one did not."""
    drawn = {f.name for f in figures}
    for name in FIGURE_NAMES:
        if name not in drawn:
            (folder / f"{name}.png").unlink(missing_ok=True)
    if figures:
        folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in figures:
        (folder / f"{f.name}.png").write_bytes(f.png)
        paths.append(f"{FIGURES_DIR}/{f.name}.png")
    return paths


def build_sections(
    manifest: Mapping[str, Any], comparison: Mapping[str, Any], *, figures_note: str | None
) -> list[Section]:
    """The report's sections, in order; a section without data is left out.

    Args:
        manifest: ``manifest.json``.
        comparison: ``comparison.json``.
        figures_note: a line shown instead of the figures (matplotlib missing), or None.
    """
    note = (figures_note,) if figures_note else ()
    baseline = str(comparison.get("baseline") or manifest.get("baseline") or "")
    sections = [_header(manifest, comparison)]
    main = main_table(comparison)
    if main is None and note:  # no results table to put the note under
        sections[0] = Section("Run", warnings=sections[0].warnings, text=note,
                              tables=sections[0].tables)  # fmt: skip
    warned = _warnings(comparison)
    if warned:
        sections.append(Section("Warnings", warnings=warned))
    if main is not None:
        sections.append(Section("Results", text=note, tables=(main,), figures=("recall_at_k",)))
    deltas = delta_tables(comparison)
    if deltas:
        sections.append(Section(f"Differences from the baseline ({baseline})",
                                tables=tuple(deltas), figures=("deltas",)))  # fmt: skip
    per_category = category_table(comparison)
    if per_category is not None:
        sections.append(Section("Per question category", tables=(per_category,),
                                figures=("categories",)))  # fmt: skip
    cost = cost_table(comparison)
    if cost is not None:
        sections.append(Section("Cost", tables=(cost,), figures=("cost_quality",)))
    abstention = abstention_tables(comparison)
    if abstention:
        sections.append(Section("Abstention", tables=tuple(abstention)))
    pairwise = pairwise_tables(comparison)
    if pairwise:
        sections.append(Section("Pairwise judge", tables=tuple(pairwise), text=(
            "Win rate: order-consistent verdicts won by the arm (a tie counts half); position "
            "consistency: share of pairs whose two orders agreed.",)))  # fmt: skip
    gates = gate_table(comparison)
    if gates is not None:
        failed = sum(1 for g in as_list(comparison.get("gates")) if as_map(g).get("violated"))
        sections.append(Section("Gates", tables=(gates,), text=(
            f"{failed} of {len(gates.rows)} gates failed." if failed
            else f"All {len(gates.rows)} gates passed.",)))  # fmt: skip
    return sections


def _header(manifest: Mapping[str, Any], comparison: Mapping[str, Any]) -> Section:
    record = as_map(manifest.get("index_record"))
    stats = as_map(comparison.get("stats"))
    judges = as_list(manifest.get("judges"))
    rows: list[tuple[str, str]] = [
        ("run id", str(manifest.get("run_id") or comparison.get("run_id") or "")),
        ("created / finished", f"{manifest.get('created') or '—'} / "
                               f"{manifest.get('finished') or 'not finished'}"),
        ("dataset", f"{manifest.get('dataset') or '—'} "
                    f"({fmt(len(as_list(manifest.get('questions'))))} questions)"),
        ("index", str(manifest.get("index") or "—")),
    ]  # fmt: skip
    rows += [(f"index {k}", fmt(v)) for k, v in record.items()]
    rows += [
        ("arms", join([a.get("arm") for a in arms(comparison)] or as_list(manifest.get("arms")))),
        ("baseline", str(comparison.get("baseline") or manifest.get("baseline") or "—")),
        ("repeats", fmt(manifest.get("repeats"))),
        ("retrieval only", fmt(bool(manifest.get("retrieval_only")))),
        ("answer model", str(manifest.get("answer_model") or "— (extractive or none)")),
        ("judge model", str(manifest.get("judge_model") or "—")
         + (f" (judges: {join(judges)})" if judges else "")),
        ("config hash", str(manifest.get("config_hash") or "—")),
        ("versions", fmt(as_map(manifest.get("versions")))),
        ("statistics", _stats_line(stats)),
    ]  # fmt: skip
    warnings: tuple[str, ...] = ()
    if manifest.get("judge_is_answer_model"):
        warnings = (f"The judge model ({manifest.get('judge_model') or '—'}) is also the "
                    "answer model: a model tends to favour its own answers, so read the judge "
                    "metrics and the pairwise results with care.",)  # fmt: skip
    table = Table("What was run", ("field", "value"), tuple(rows), align="ll")
    return Section("Run", warnings=warnings, tables=(table,))


def _stats_line(stats: Mapping[str, Any]) -> str:
    conf, resamples = stats.get("confidence"), stats.get("resamples")
    if not isinstance(conf, int | float):
        return "—"
    text = f"{conf:.0%} bootstrap intervals"
    if isinstance(resamples, int):
        text += f", {resamples:,} resamples"
    return text + (f", seed {stats['seed']}" if "seed" in stats else "")


def _warnings(comparison: Mapping[str, Any]) -> tuple[str, ...]:
    lines = [str(w) for w in as_list(comparison.get("warnings"))]
    for judge, n in as_map(comparison.get("judge_failures")).items():
        lines.append(f"judge {judge}: {fmt(n)} failed verdicts (counted, not dropped)")
    for a in arms(comparison):
        failed = a.get("failed")
        if isinstance(failed, int) and failed:
            errors = "; ".join(str(e) for e in as_list(a.get("errors")))
            lines.append(f"arm {a.get('arm')}: {failed} of {fmt(a.get('rows'))} rows failed "
                         f"(scored 0){': ' + errors if errors else ''}")  # fmt: skip
    return tuple(lines)
