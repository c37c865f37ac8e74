"""``ukr index PATH...``: index files and folders into an index of the project."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    QuietOpt,
    StoresOpt,
    VerboseOpt,
    counted,
    err_console,
    load,
    out_console,
    run,
)
from unified_kg_rag.cli.delete import YesOpt
from unified_kg_rag.cli.messages import (
    HandlesOpt,
    LimitOpt,
    OwnerOpt,
    SinceOpt,
    SourceOpt,
)
from unified_kg_rag.cli.progress import RichProgress

if TYPE_CHECKING:  # the application modules load when a command runs, not for `ukr --help`
    from unified_kg_rag.ingestion.graph.estimate import CostEstimate
    from unified_kg_rag.ingestion.graph.report import GraphBuildReport
    from unified_kg_rag.ingestion.report import IndexReport

if TYPE_CHECKING:
    from unified_kg_rag.ingestion.embed_steps import KeptWork

__all__ = [
    "index_command", "interrupted_message", "render_estimate", "render_graph", "render_report"
]


def render_graph(graph: GraphBuildReport) -> None:
    """Print the graph part of a run: counts, merges and model spend per stage."""
    if graph.skipped_reason:
        out_console.print(f"graph: {escape(graph.skipped_reason)}", soft_wrap=True)
        return
    if graph.error:
        out_console.print(
            f"[red]graph build stopped[/]: {escape(graph.error)}. The text units above are "
            "stored, and so are the extraction records of finished units: run the same "
            "command again to resume.", soft_wrap=True,
        )
        return
    table = Table(title="Knowledge graph", show_header=False, box=None)
    table.add_row("methodologies", ", ".join(graph.methodologies))
    table.add_row(
        "text units", f"{graph.text_units} ({graph.units_extracted} extracted, "
        f"{graph.records_reused} from stored records)"
    )
    if graph.units_truncated:
        table.add_row("  replies cut (items before the cut kept)", str(graph.units_truncated))
    if graph.units_quarantined:
        table.add_row("  quarantined (skipped)", str(graph.units_quarantined))
    if graph.records_swept:
        table.add_row("  extraction records swept", str(graph.records_swept))
    table.add_row("entities / relationships", f"{graph.entities} / {graph.relationships}")
    merges = ", ".join(f"{k} {v}" for k, v in sorted(graph.merges.items()) if v)
    if merges:
        table.add_row("  merges", merges)
    if graph.descriptions_summarized or graph.summaries_failed:
        table.add_row("  descriptions summarized", f"{graph.descriptions_summarized} "
                      f"({graph.summaries_failed} failed, concatenation kept)")
    if graph.communities_per_level:
        per_level = ", ".join(f"L{k}: {v}" for k, v in sorted(graph.communities_per_level.items()))
        table.add_row("communities", per_level)
        table.add_row("reports", f"{graph.reports} ({graph.reports_failed} failed)")
    if graph.items_removed:
        table.add_row("items of the previous build removed", str(graph.items_removed))
    out_console.print(table)
    stages = Table(title="Model spend per stage", box=None)
    for col in ("stage", "items", "calls", "cache hits", "tokens in", "tokens out", "time s"):
        stages.add_column(col, justify="left" if col == "stage" else "right")
    for name, st in graph.stages.items():
        u = st.usage
        stages.add_row(name, str(st.items), str(u.calls), str(u.cache_hits),
                       f"{u.input_tokens:,}", f"{u.output_tokens:,}", f"{st.seconds:.1f}")
    out_console.print(stages)
    for f in graph.units_failed:
        out_console.print(
            f"[red]extraction failed[/]: {escape(f.path)} (unit {f.text_unit_id[:12]}): "
            f"{escape(f.reason)}{_quarantine_note(f.failures, f.quarantined)}", soft_wrap=True,
        )


def _quarantine_note(failures: int, quarantined: bool) -> str:
    """The note after a failure line: quarantined now, or how many runs it failed in a row."""
    if quarantined:
        return (f" ({failures} failed runs in a row: [red]quarantined[/], not retried until "
                "it changes or `--retry-quarantined`)")
    return f" ({failures} failed runs in a row)" if failures > 1 else ""


def render_estimate(est: CostEstimate) -> None:
    """Print a cost estimate."""
    table = Table(title="Estimated model spend (no call made)", show_header=False, box=None)
    table.add_row("text units", f"{est.units} ({est.units_to_extract} without a stored record)")
    table.add_row("calls", f"{est.calls_min:,} - {est.calls_max:,}")
    table.add_row("prompt tokens", f"{est.input_tokens_min:,} - {est.input_tokens_max:,}")
    table.add_row("reply tokens (estimate)", f"{est.output_tokens:,}")
    if est.reports:
        table.add_row("community reports (rough)", f"{est.reports:,}")
    if est.cost_min is not None and est.cost_max is not None:
        table.add_row("cost", f"{est.cost_min:,.2f} - {est.cost_max:,.2f}")
    else:
        table.add_row("cost", "set llm.input_price_per_1m and llm.output_price_per_1m")
    out_console.print(table)


def render_report(report: IndexReport) -> None:
    """Print an indexing summary table (and the failed documents) on stdout."""
    table = Table(title=f"Index '{report.index}'", show_header=False, box=None)
    table.add_row("documents found", str(report.documents_found))
    table.add_row(
        "  new / changed / retried",
        f"{report.documents_new} / {report.documents_changed} / {report.documents_retried}",
    )
    unchanged = "  unchanged (processed again)" if report.reset else "  unchanged (skipped)"
    table.add_row(unchanged, str(report.documents_unchanged))
    if report.documents_quarantined:
        table.add_row("  quarantined (skipped)", str(report.documents_quarantined))
    if report.documents_released:
        table.add_row("  quarantined, tried again", str(report.documents_released))
    table.add_row("  failed", str(len(report.failed)))
    table.add_row("text units written", str(report.text_units_written))
    table.add_row(
        "  embedded / reused", f"{report.text_units_embedded} / {report.text_units_reused}"
    )
    if report.text_units_removed:
        table.add_row("  stale removed", str(report.text_units_removed))
    if report.usage.calls or report.usage.cache_hits:
        u = report.usage
        table.add_row(
            "model calls", f"{u.calls} ({u.cache_hits} cached), {u.input_tokens:,} tokens in, "
            f"{u.output_tokens:,} out, {u.latency_s:.1f} s waiting"
        )
    if report.skipped:
        table.add_row("files skipped", str(len(report.skipped)))
    if report.documents_deleted:
        table.add_row("documents deleted", f"{report.documents_deleted} "
                      f"({report.text_units_deleted} text units)")
    if report.records_removed:
        table.add_row("  extraction records removed", str(report.records_removed))
    if report.reset:
        table.add_row("orphans removed (reset)", f"{report.text_units_orphaned} text units, "
                      f"{report.graph_items_orphaned} graph items")
    if report.documents_kept_on_disk:
        table.add_row("not found, file skipped (kept)", str(report.documents_kept_on_disk))
    if report.documents_missing:
        table.add_row("documents not found (kept)", str(report.documents_missing))
    if report.messages is not None:
        _message_rows(table, report)
    table.add_row("time", f"{report.elapsed_s:.1f} s")
    out_console.print(table)
    if report.deletion_note:
        out_console.print(f"[yellow]not deleted[/]: {escape(report.deletion_note)}",
                          soft_wrap=True)
    for f in report.failed:
        out_console.print(f"[red]failed[/]: {escape(f.path)}: {escape(f.reason)}"
                          f"{_quarantine_note(f.failures, f.quarantined)}", soft_wrap=True)
    for problem in report.messages.problems if report.messages is not None else ():
        out_console.print(f"[yellow]archive problem[/]: {escape(problem)}", soft_wrap=True)
    if report.lazy is not None:
        lazy = report.lazy
        if lazy.skipped_reason:
            out_console.print(f"concept graph (lazy): {escape(lazy.skipped_reason)}")
        else:
            levels = ", ".join(f"L{k}: {v}" for k, v in sorted(lazy.communities_per_level.items()))
            out_console.print(
                f"concept graph (lazy): {counted(lazy.concepts, 'concept')}, "
                f"{counted(lazy.links, 'link')} over {counted(lazy.text_units, 'text unit')}, "
                f"communities {levels or 'none'}, "
                f"{lazy.seconds:.1f} s"
            )
    if report.graph is not None:
        render_graph(report.graph)
    _quarantine_notice(report)


def _quarantine_notice(report: IndexReport) -> None:
    """One line when quarantined items were skipped (they do not fail the run)."""
    units = report.graph.units_quarantined if report.graph is not None else 0
    parts = [f"{n} {what}" for n, what in ((report.documents_quarantined, "document(s)"),
                                           (units, "text unit extraction(s)")) if n]
    if parts:
        out_console.print(
            f"[yellow]quarantined[/]: {' and '.join(parts)} skipped (they failed on "
            "consecutive runs): `ukr status` lists them, `ukr index PATH --retry-quarantined` "
            "tries them again.", soft_wrap=True,
        )


def _message_rows(table: Table, report: IndexReport) -> None:
    m = report.messages
    assert m is not None
    table.add_row("message archives", f"{m.archives} read, {m.messages} messages "
                  f"({m.duplicates} in several archives, {m.skipped} rows skipped, "
                  f"{m.tapbacks_folded} reactions folded)")
    if m.skipped_reasons:
        reasons = ", ".join(f"{n} {escape(r)}" for r, n in sorted(
            m.skipped_reasons.items(), key=lambda item: (-item[1], item[0])))
        table.add_row("  rows skipped", reasons)
    window = " (bounded: out-of-window transcripts kept)" if m.bounded else ""
    table.add_row("  transcripts", f"{m.transcripts} rendered{window}: {m.new} new, "
                  f"{m.changed} changed, {m.unchanged} unchanged, {m.removed} no longer "
                  f"rendered ({m.kept_out_of_window} kept)")
    if m.provenance_updated:
        table.add_row("  provenance updated (same text)", str(m.provenance_updated))
    if m.kept_partial:
        table.add_row("  kept as indexed (would lose messages)", str(m.kept_partial))
    for path in m.archives_missing:
        table.add_row("  archive gone from disk (no longer read)", escape(path))
    if m.held_reason:
        table.add_row("  [yellow]held[/]", escape(m.held_reason))


def index_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Files and folders to index.", show_default=False)
    ],
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to write. [default: query.index]")
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Print the model calls, tokens (and cost, with prices configured) the graph "
            "build would spend, then stop: no model call, nothing written.",
        ),
    ] = False,
    force_rebuild: Annotated[
        bool,
        typer.Option(
            "--force-rebuild",
            help="Ask the LLM again for every text unit's extraction (stored records are "
            "replaced) and rebuild the graph.",
        ),
    ] = False,
    reset: Annotated[
        bool,
        typer.Option(
            "--reset",
            help="Rebuild the whole index in place: process every document again, delete text "
            "units no document names, derive the graphs again. Queries keep working; stored "
            "vectors, extraction records and cached replies are reused (an unchanged corpus "
            "costs no model call). With --force-rebuild, every extraction is asked again.",
        ),
    ] = False,
    yes: YesOpt = False,
    retry_quarantined: Annotated[
        bool,
        typer.Option(
            "--retry-quarantined",
            help="Try again the documents and text units quarantined after failing on "
            "`indexing.quarantine_after` consecutive runs (otherwise skipped until their "
            "content changes).",
        ),
    ] = False,
    source: SourceOpt = None,
    handles: HandlesOpt = None,
    owner: OwnerOpt = None,
    since: SinceOpt = None,
    message_limit: LimitOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Index files and folders: parse, chunk, embed and store them (only what changed).

    With an LLM configured, also builds the knowledge graph the selected methodologies need
    (`indexing.methodologies`): extraction, gleaning, entity resolution, communities and
    reports. Folders are walked recursively; hidden files and unsupported extensions are
    skipped. Documents of a folder whose files are gone are deleted from the index; a folder
    that is suddenly empty, or lost more than `indexing.max_delete_share` of its documents,
    stops the run before anything is written unless `--yes` is given. `--reset` rebuilds the
    whole index without taking it offline (see the incremental guide). Exit status 3 when any
    document, extraction or report failed (the others are indexed; the next run retries what
    failed). A document or text unit that failed on `indexing.quarantine_after` consecutive
    runs is quarantined: skipped by later runs (a notice, not a failure) until its content
    changes or `--retry-quarantined`.

    Message archives (an iMessage `chat.db`/`sms.db`, a JSON Lines export) are recognised by
    their content, or read with `--source`: their messages become thread-day transcripts, and
    every answer over them names the exact messages it rests on (see the message archives
    guide).
    """
    if estimate:
        options = {"source": source, "handles": handles, "owner": owner, "since": since,
                   "limit": message_limit}
        _estimate(paths, index, project, stores, config_file, json_out, verbose, options)
        return

    kept: list[KeptWork] = []

    async def main() -> IndexReport:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.ingestion.message_plan import plan_message_run

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores,
                                   create=True)
        messages = plan_message_run(config, project_dir, source=source, handles=handles,
                               owner=owner, since=since, limit=message_limit)
        async with build_app(config, project_dir) as app:
            with RichProgress(err_console, enabled=not (quiet or json_out)) as progress:
                pipeline = app.index_pipeline(index, progress=progress,
                                              force_rebuild=force_rebuild)
                kept.append(pipeline.kept)
                return await pipeline.run(
                    paths, confirm_deletions=yes, reset=reset, messages=messages,
                    retry_quarantined=retry_quarantined,
                )

    report = run(main, verbose=verbose, interrupted=lambda: interrupted_message(kept))
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
    else:
        render_report(report)
    raise typer.Exit(report.exit_code)


def interrupted_message(kept: list[KeptWork]) -> str:
    """Say what an interrupted `ukr index` kept, and that the next run resumes.

    For example ``Interrupted: kept 1,024 of 4,000 text units of big.txt embedded; run the same
    command again to resume ...``.
    """
    what = kept[0].describe() if kept else "nothing new was stored"
    return (f"Interrupted: {what}; run the same command again to resume (stored vectors are "
            "reused, nothing is embedded twice).")


def _estimate(
    paths: list[Path],
    index: str | None,
    project: Path | None,
    stores: str | None,
    config_file: Path | None,
    json_out: bool,
    verbose: bool,
    options: dict[str, Any],
) -> None:
    async def main() -> CostEstimate:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.ingestion.message_plan import plan_message_run

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores,
                                   create=True)
        messages = plan_message_run(config, project_dir, **options)
        async with build_app(config, project_dir) as app:
            pipeline = app.index_pipeline(index)
            return await pipeline.estimate(paths, messages=messages)

    est = run(main, verbose=verbose, interrupted="Interrupted.")
    if json_out:
        typer.echo(est.model_dump_json(indent=2))
    else:
        render_estimate(est)
