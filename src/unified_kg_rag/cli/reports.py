"""How ``ukr index`` and ``ukr delete`` print their reports (tables on stdout, failures after).

Shared by both commands, so neither imports the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from unified_kg_rag.cli.common import counted, err_console, out_console, printable

if TYPE_CHECKING:  # the application modules load when a command runs, not for `ukr --help`
    from unified_kg_rag.domain.extraction.schema_conformance import ConformanceReport
    from unified_kg_rag.ingestion.graph.estimate import CostEstimate
    from unified_kg_rag.ingestion.graph.report import GraphBuildReport
    from unified_kg_rag.ingestion.report import DeleteReport, IndexReport
    from unified_kg_rag.ingestion.summary_tree import SummaryTreeReport

__all__ = ["render_delete", "render_estimate", "render_graph", "render_report"]


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
    _shaping_rows(table, graph)
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
    if (c := graph.claims) is not None:
        table.add_row("claims", f"{c.claims} ({c.units_asked} asked, {c.records_reused} "
                      f"reused, {c.units_failed} failed)")
        if c.units_quarantined:
            table.add_row("  claims quarantined (not asked)", str(c.units_quarantined))
        if c.dropped_subject:
            # the subject is not one of the claim's text unit's entities
            table.add_row("  claims dropped (unlisted subject)", str(c.dropped_subject))
        if c.claims_capped:
            # graph.claims.max_per_unit reached: the reply's later claims are not kept
            table.add_row("  claims over max_per_unit (dropped)", str(c.claims_capped))
    if graph.items_removed:
        table.add_row("items of the previous build removed", str(graph.items_removed))
    if graph.schema_conformance is not None:
        _schema_rows(table, graph.schema_conformance)
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


def _shaping_rows(table: Table, graph: GraphBuildReport) -> None:
    """Add what grounding and the confidence thresholds removed or down-weighted (if any)."""
    c = graph.shaping
    rows = {
        "  ungrounded, dropped": (c.ungrounded_entities_dropped,
                                  c.ungrounded_relationships_dropped),
        "  ungrounded, down-weighted": (c.ungrounded_entities_weighted,
                                        c.ungrounded_relationships_weighted),
        "  under min_confidence/strength": (c.low_confidence_entities_dropped,
                                            c.low_strength_relationships_dropped),
    }
    for label, (ents, rels) in rows.items():
        if ents or rels:
            table.add_row(label, f"{ents} entities, {rels} relationships")
    if c.endpoint_relationships_dropped:
        table.add_row("  naming a dropped entity",
                      f"{c.endpoint_relationships_dropped} relationships")


def _schema_rows(table: Table, conf: ConformanceReport) -> None:
    """Rows of the schema conformance: per kind, then the most frequent off-schema types."""
    by = f", aligned by {conf.aligned_by}" if conf.aligned_by else ""
    table.add_row("extraction schema", f"mode {conf.mode}{by}")
    for kind, c in (("entities", conf.entities), ("relationships", conf.relationships)):
        table.add_row(f"  {kind}", f"{c.conforming} conforming, {c.aligned} aligned, "
                      f"{c.dropped} dropped, {c.flagged} flagged")  # fmt: skip
    if conf.pattern_violations:
        table.add_row("  outside every pattern", str(conf.pattern_violations))
    for kind, top in (("entity", conf.off_schema_entity_types),
                      ("relationship", conf.off_schema_relationship_types)):
        if top:
            listed = ", ".join(f"{escape(k)} {v}" for k, v in list(top.items())[:5])
            table.add_row(f"  off-schema {kind} types", listed)


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
    if est.tree_summaries:
        table.add_row("summary-tree calls (rough)", f"{est.tree_summaries:,}")
    if est.claim_calls is not None:
        table.add_row("claim calls", f"{est.claim_calls:,}")
    if est.cost_min is not None and est.cost_max is not None:
        table.add_row("cost", f"{est.cost_min:,.2f} - {est.cost_max:,.2f}")
    else:
        unpriced = [r for r, f in est.roles.items() if f.cost_min is None] or ["extraction"]
        table.add_row("cost", "set input_price_per_1m and output_price_per_1m of the model of "
                      + ", ".join(unpriced) + " (llm, its tier, or its own)")
    out_console.print(table)
    if est.roles:
        out_console.print(_role_table(est))


def _role_table(est: CostEstimate) -> Table:
    """The per-role figures of an estimate: the role's model, then its calls, tokens, cost."""
    table = Table(title="Per role", show_header=False, box=None)
    for role, fig in est.roles.items():
        cost = (f"{fig.cost_min:,.2f} - {fig.cost_max:,.2f}"
                if fig.cost_min is not None and fig.cost_max is not None else "no prices")
        table.add_row(role, fig.model)
        table.add_row("  calls", f"{fig.calls_min:,} - {fig.calls_max:,}")
        table.add_row("  prompt tokens", f"{fig.input_tokens_min:,} - {fig.input_tokens_max:,}")
        table.add_row("  reply tokens", f"{fig.output_tokens:,}")
        table.add_row("  cost", cost)
    return table


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
    if report.summary_tree is not None:
        render_summary_tree(report.summary_tree)
    if report.graph is not None:
        render_graph(report.graph)
    _quarantine_notice(report)


def render_summary_tree(tree: SummaryTreeReport) -> None:
    """Print one line on the RAPTOR summary-tree build."""
    if tree.skipped_reason and not tree.nodes_per_level:
        out_console.print(f"summary tree (raptor): {escape(tree.skipped_reason)}",
                          soft_wrap=True)  # fmt: skip
        return
    levels = ", ".join(f"L{k}: {v}" for k, v in sorted(tree.nodes_per_level.items()))
    how = "extractive" if tree.extractive else "LLM"
    out_console.print(
        f"summary tree (raptor): {levels or 'no summary'} over "
        f"{counted(tree.text_units, 'text unit')}; {tree.summaries_written} {how} "
        f"summaries written, {tree.summaries_reused} reused, {tree.nodes_removed} removed"
        + (f", [yellow]{tree.summaries_failed} failed (retried next run)[/]"
           if tree.summaries_failed else "")
        + f", {tree.seconds:.1f} s", soft_wrap=True,
    )


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




def render_delete(report: DeleteReport) -> None:
    """Print what a deletion did on stdout, and the unknown targets on stderr."""
    if report.archives is not None:
        out_console.print("Message archives dropped; the others rendered again:")
        render_report(report.archives)
        if not report.deleted and not report.unknown:
            return
    table = Table(title=f"Index '{report.index}'", show_header=False, box=None)
    table.add_row("documents deleted", str(len(report.deleted)))
    table.add_row("  text units removed", str(report.text_units_removed))
    if report.records_removed:
        table.add_row("  extraction records removed", str(report.records_removed))
    if report.usage.calls or report.usage.cache_hits:
        u = report.usage
        table.add_row("model calls", f"{u.calls} ({u.cache_hits} cached), {u.input_tokens:,} "
                      f"tokens in, {u.output_tokens:,} out")
    table.add_row("time", f"{report.elapsed_s:.1f} s")
    out_console.print(table)
    for doc in report.deleted:
        out_console.print(f"deleted: {escape(printable(doc.path))} ({doc.document_id[:12]})",
                          soft_wrap=True)
    if report.lazy is not None and not report.lazy.skipped_reason:
        out_console.print(f"concept graph (lazy): rebuilt over {report.lazy.text_units} text "
                          f"units, {counted(report.lazy.concepts, 'concept')}")
    if report.summary_tree is not None and not report.summary_tree.skipped_reason:
        render_summary_tree(report.summary_tree)
    if report.graph is not None:
        render_graph(report.graph)
    if report.unknown:
        named = "; ".join(f"{printable(u.path)}: {u.reason}" for u in report.unknown)
        err_console.print(f"[bold red]not deleted[/]: {escape(named)}", soft_wrap=True)
