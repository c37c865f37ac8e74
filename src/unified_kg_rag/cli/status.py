"""``ukr status``: what each index of the project holds."""

from __future__ import annotations

import time

import typer
from rich.markup import escape
from rich.table import Table

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    StoresOpt,
    VerboseOpt,
    load,
    out_console,
    printable,
    run,
)
from unified_kg_rag.domain.extraction.grounding import ShapingCounts
from unified_kg_rag.ingestion.status import IndexStatus, StatusReport

__all__ = ["status_command"]


def _model_lines(report: StatusReport) -> None:
    """Print which model serves each role (one line when one model serves them all)."""
    served = {(m.model, m.source) for m in report.models}
    if len(served) <= 1:
        model = next(iter(served))[0] if served else None
        out_console.print(f"models:  {escape(model or 'none (llm.kind: none)')} (every role)")
        return
    table = Table(title="models per role", show_header=False, box=None)
    for m in report.models:
        where = "" if m.source == "default" else f" ({m.source})"
        table.add_row(m.role, escape((m.model or "none") + where))
    out_console.print(table)


def status_command(
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Show each index: documents by status, stored items, embedding model, drift.

    Drift: communities without a report, entities in no community, documents failed, pending
    or deleting. When the share of those (`indexing.reset_drift_share`) is passed, a line
    recommends `ukr index PATH --reset`. Also lists the documents and text units quarantined
    after failing on consecutive runs (with their last error), and counts the extraction
    records no text unit reads any more (with an LLM configured).
    """

    async def main() -> StatusReport:
        from unified_kg_rag.bootstrap import build_app

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            return await app.status()

    report = run(main, verbose=verbose)
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
        return
    out_console.print(f"project: {report.project_dir}\nstore:   {report.store}")
    _model_lines(report)
    if not report.indexes:
        out_console.print("No index yet. Run `ukr index PATH` to create one.")
        return
    for info in report.indexes:
        table = Table(title=f"index '{info.name}'", show_header=False, box=None)
        docs = ", ".join(f"{k} {v}" for k, v in sorted(info.documents.items())) or "none"
        table.add_row("documents", docs)
        for kind, n in sorted(info.counts.items()):
            if n:
                table.add_row(kind.replace("_", " "), str(n))
        if info.embedding_model:
            table.add_row("embeddings", f"{info.embedding_model} (d={info.embedding_dimension})")
        table.add_row("methodologies", ", ".join(info.methodologies) or "text units only")
        if info.writer is not None:
            left = info.writer.expires_at - time.time()
            state = f"lease lapses in {left:.0f} s" if left > 0 else "lease lapsed"
            table.add_row("writer", f"{printable(info.writer.holder)} ({state})")
        _drift_rows(table, info)
        if info.summary_tree is not None:
            table.add_row("summary tree", escape(info.summary_tree))
        if (shaped := info.graph_shaping) is not None and (shaped.removed or shaped.weighted):
            table.add_row("grounding (last build)", _shaping_text(shaped))
        if info.access_counts:
            table.add_row("access counts", ", ".join(
                f"{kind.replace('_', ' ')} {n}" for kind, n in info.access_counts.items()))
        if info.extraction_records_orphaned:
            table.add_row("extraction records orphaned", f"{info.extraction_records_orphaned} "
                          "(the next `ukr index` run deletes them)")
        out_console.print(table)
        _failure_lines(info)
        _quarantine_lines(info)
        if info.drift.reset_recommended:
            out_console.print(
                f"[yellow]drift {info.drift.share:.0%} > {info.drift.threshold:.0%}[/] "
                f"(indexing.reset_drift_share): run `ukr index PATH --reset --index "
                f"{printable(info.name)}` to rebuild index '{printable(info.name)}' in place",
                soft_wrap=True,
            )


def _failure_lines(info: IndexStatus) -> None:
    """One line per failed document, ``failed: PATH: reason``, then what to do."""
    for item in info.failed:
        out_console.print(f"failed: {escape(printable(item.path))}: "
                          f"{escape(printable(item.error))}", soft_wrap=True)  # fmt: skip
    if info.failed:
        out_console.print("Fix or remove these files, then run `ukr index PATH` again (it "
                          "retries failed documents).", soft_wrap=True)  # fmt: skip


def _quarantine_lines(info: IndexStatus) -> None:
    """One line per quarantined document or text unit, then how to release them."""
    for item in info.quarantined:
        out_console.print(
            f"[yellow]quarantined {item.kind}[/]: {escape(printable(item.path))}"
            + (f" (unit {item.id[:12]})" if item.kind == "text unit" else "")
            + f", {item.failures} failed runs in a row: {escape(printable(item.error))}",
            soft_wrap=True,
        )
    if info.quarantined:
        out_console.print(
            "Quarantined items are skipped by `ukr index` until their content changes; "
            "`ukr index PATH --retry-quarantined` tries them again.", soft_wrap=True
        )


def _shaping_text(c: ShapingCounts) -> str:
    """What the last graph build's grounding and thresholds did, in one line."""
    return f"{c.removed} items removed, {c.weighted} down-weighted (per rule: --json)"


def _drift_rows(table: Table, info: IndexStatus) -> None:
    """Add the graph's drift rows that are not zero (documents per status are shown above)."""
    d = info.drift
    if d.communities_without_report:
        table.add_row("communities without report",
                      f"{d.communities_without_report} of {d.communities}")
    if d.entities_unclustered:
        table.add_row("entities in no community", f"{d.entities_unclustered} of {d.entities}")
