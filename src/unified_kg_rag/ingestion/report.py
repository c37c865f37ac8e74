"""The summary of an indexing run, as `ukr index` prints it (and ``--json`` dumps it)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.ingestion.graph.report import GraphBuildReport
from unified_kg_rag.ingestion.lazy import LazyBuildReport
from unified_kg_rag.ingestion.summary_tree import SummaryTreeReport

__all__ = ["DeleteReport", "DeletedDocument", "FailedDocument", "IndexReport", "MessageReport"]


class FailedDocument(BaseModel):
    """A document that could not be indexed in this run, and why (one line).

    Attributes:
        path: the file as shown to the user.
        reason: why, in one line.
        failures: consecutive runs it failed on at this content, this one included (0 when
            not counted: a file that could not be read, a skipped file).
        quarantined: it reached ``indexing.quarantine_after`` this run: later runs skip it
            until its content changes or ``--retry-quarantined``.
    """

    path: str
    reason: str
    failures: int = 0
    quarantined: bool = False


class MessageReport(BaseModel):
    """What a run did with message archives (part of `IndexReport`).

    Attributes:
        archives: archive files read (named now or before).
        archives_missing: archives named before that are gone from disk (their messages left).
        messages: distinct messages after the guid merge.
        messages_rendered: of which in this run's window (all of them unless bounded).
        duplicates: messages found in more than one archive (merged by guid).
        skipped: rows not indexed as messages (no text, attachment only, unsent, a bad
            line ...); reactions folded onto their message are not counted.
        skipped_reasons: ``skipped`` by reason, as the sources name them (``no text``,
            ``attachment only``, ``unsent``, ``bad line`` ...), summed over the archives.
        tapbacks_folded: reactions folded onto their messages.
        transcripts: transcripts rendered.
        new, changed, unchanged, removed: the manifest diff, in transcripts.
        provenance_updated: unchanged transcripts whose per-message provenance was stored
            again (a message's UTC time or edit history changed, its rendered line did not).
        kept_out_of_window: removed transcripts a bounded build kept (out of its window).
        kept_partial: changed transcripts a bounded build kept as indexed because its render
            would drop some of their messages; the next full run renders them.
        held_reason: why the run changed no transcript ("" when it did its work): an
            archive failed to read.
        bounded: the run was bounded (``--since``/``--message-limit``, or an archive failed).
        problems: notes of the sources on skipped rows (first few).
    """

    archives: int = 0
    archives_missing: list[str] = Field(default_factory=list)
    messages: int = 0
    messages_rendered: int = 0
    duplicates: int = 0
    skipped: int = 0
    skipped_reasons: dict[str, int] = Field(default_factory=dict)
    tapbacks_folded: int = 0
    transcripts: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    provenance_updated: int = 0
    kept_out_of_window: int = 0
    kept_partial: int = 0
    held_reason: str = ""
    bounded: bool = False
    problems: list[str] = Field(default_factory=list)


class IndexReport(BaseModel):
    """What one indexing run did.

    Attributes:
        index: the index written.
        documents_found: files found that a parser handles (plus files named explicitly).
        documents_new: documents indexed for the first time.
        documents_changed: documents re-indexed because their bytes changed.
        documents_retried: documents that had failed before and were tried again.
        documents_unchanged: documents whose bytes are unchanged: skipped (processed again by
            a reset).
        documents_quarantined: documents quarantined by an earlier run and unchanged since:
            skipped (not a failure of this run; ``ukr status`` lists them).
        documents_released: quarantined documents tried again (``--retry-quarantined``).
        documents_deleted: documents removed from the index: not found in a walked folder,
            or left ``deleting`` by a run that was killed while removing them.
        documents_missing: documents of a walked folder that this run did not find but kept
            (``deletion_note`` says why: the index's LLM graph cannot be rebuilt now).
        documents_kept_on_disk: documents not found by the walk whose files are still on
            disk (excluded, unsupported extension): kept; `ukr delete` removes them.
        deletion_note: why documents not found were kept ("" when none was).
        text_units_written: text units stored by this run.
        text_units_embedded: text units the embedding model was run on.
        text_units_reused: text units already stored with a vector (not embedded again).
        text_units_removed: stale text units of changed documents removed.
        text_units_deleted: text units of deleted documents removed.
        records_removed: extraction records of removed text deleted from the record store
            (identical text still in the index keeps its record).
        reset: the run was a ``--reset`` (every document found was processed again, its
            unchanged ones included, and the graphs were derived again).
        text_units_orphaned: text units no document of the index named, removed by a reset.
        graph_items_orphaned: graph items no graph build listed, removed by a reset.
        failed: documents that failed, with their reasons.
        skipped: files left out of folder walks (unsupported extension, excluded), with reasons.
        elapsed_s: wall time, seconds.
        embedding_s: of which the embedding model took embedding text units, seconds.
        usage: model usage of the run.
        graph: the LLM knowledge-graph build (None when no graph methodology was selected).
        lazy: the concept-graph build (None when ``lazy`` was not selected).
        summary_tree: the summary-tree build (None when ``raptor`` was not selected).
        messages: what the run did with message archives (None when it named none).
    """

    index: str
    documents_found: int = 0
    documents_new: int = 0
    documents_changed: int = 0
    documents_retried: int = 0
    documents_unchanged: int = 0
    documents_quarantined: int = 0
    documents_released: int = 0
    documents_deleted: int = 0
    documents_missing: int = 0
    documents_kept_on_disk: int = 0
    deletion_note: str = ""
    text_units_written: int = 0
    text_units_embedded: int = 0
    text_units_reused: int = 0
    text_units_removed: int = 0
    text_units_deleted: int = 0
    records_removed: int = 0
    reset: bool = False
    text_units_orphaned: int = 0
    graph_items_orphaned: int = 0
    failed: list[FailedDocument] = Field(default_factory=list)
    skipped: list[FailedDocument] = Field(default_factory=list)
    elapsed_s: float = 0.0
    embedding_s: float = 0.0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    graph: GraphBuildReport | None = None
    lazy: LazyBuildReport | None = None
    summary_tree: SummaryTreeReport | None = None
    messages: MessageReport | None = None

    @property
    def exit_code(self) -> int:
        """0 if all was indexed, 1 if the graph or summary-tree build stopped, 3 if an item failed.

        An item: a document, a text unit's extraction, a community report or a tree summary
        (quarantined this run included). Items quarantined by earlier runs and skipped do not
        count.

        The next run retries what failed or resumes what stopped.
        """
        tree = self.summary_tree.exit_code if self.summary_tree is not None else 0
        if (self.graph is not None and self.graph.error) or tree == 1:
            return 1
        graph_failed = self.graph is not None and not self.graph.succeeded
        return 3 if self.failed or graph_failed or tree else 0


class DeletedDocument(BaseModel):
    """A document removed from the index."""

    document_id: str
    path: str
    source_scope: str


class DeleteReport(BaseModel):
    """What one `IndexPipeline.delete` (``ukr delete``) did.

    Attributes:
        index: the index written.
        deleted: the documents removed (those a killed run had left ``deleting`` included).
        unknown: the ids or paths that named no document (or several), with the reason.
        text_units_removed: text units removed from the search index.
        records_removed: extraction records of the removed text deleted.
        elapsed_s: wall time, seconds.
        usage: model usage of the run (summaries and reports derived again).
        graph: the LLM graph build after the removal (None when none was needed).
        lazy: the concept-graph build after the removal (None when not selected).
        summary_tree: the summary-tree build after the removal (None when not selected).
        archives: the run that dropped message archives from the index's message corpus and
            rendered the rest again (None when no target was an archive).
    """

    index: str
    deleted: list[DeletedDocument] = Field(default_factory=list)
    unknown: list[FailedDocument] = Field(default_factory=list)
    text_units_removed: int = 0
    records_removed: int = 0
    elapsed_s: float = 0.0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    graph: GraphBuildReport | None = None
    lazy: LazyBuildReport | None = None
    summary_tree: SummaryTreeReport | None = None
    archives: IndexReport | None = None

    @property
    def exit_code(self) -> int:
        """0 if done, 1 if a graph or tree build stopped, 3 if a target was unknown or failed."""
        if self.archives is not None and self.archives.exit_code:
            return self.archives.exit_code
        tree = self.summary_tree.exit_code if self.summary_tree is not None else 0
        if (self.graph is not None and self.graph.error) or tree == 1:
            return 1
        graph_failed = self.graph is not None and not self.graph.succeeded
        return 3 if self.unknown or graph_failed or tree else 0
