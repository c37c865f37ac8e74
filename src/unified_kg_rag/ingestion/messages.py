"""Message archives in an index: parse, merge, render, diff against the manifest, plan writes.

The message corpus of an index is the guid-merge of every archive file it was built from
(``message_files`` record): a run that names archives reads them and the archives named
before that are still on disk, so two overlapping exports indexed in different runs never
duplicate a message, and a re-export of a grown ``chat.db`` adds only its new thread-days.
Each transcript (`domain.messages.transcripts.TranscriptDoc`) is one document of scope
`MESSAGE_SCOPE` whose path is its ``doc_key``; its registry record is the manifest entry
(content hash, status, write-ahead), and a ``message_spans`` record keyed by document id keeps
where each message sits in its text (the provenance index queries read).

Diff (seed 001 ``WorkdirManifest.diff``): new and changed transcripts are processed (a
changed one's stale text units are deleted, units with unchanged text keep their ids and
extraction records); removed ones are deleted. A bounded build (``--since``,
``--message-limit``) renders part of the corpus by construction, so it deletes only its
re-span casualties: removed transcripts whose every message this render re-indexes under a
new key (seed 004, amendment of 2026-08-10), and keeps a changed transcript whose render would
lose messages. A run where an archive failed to read changes no transcript at all: the render
misses that archive's messages anywhere, so nothing it says can be trusted.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from unified_kg_rag.domain.identity import document_id
from unified_kg_rag.domain.messages.manifest import (
    SPANS_NAMESPACE,
    ManifestEntry,
    StoredTranscript,
    diff_manifest,
    parse_spans_records,
    respanned,
    spans_record,
)
from unified_kg_rag.domain.messages.transcripts import (
    MESSAGE_SCOPE,
    MessageSourceOptions,
    SourceMessage,
    TranscriptDoc,
    bound_messages,
    merge_messages,
    render_transcripts,
    transcript_hash,
)
from unified_kg_rag.domain.models import DocRecord, DocStatus
from unified_kg_rag.domain.text.decoding import escape_undecodable
from unified_kg_rag.ingestion.corpus import CorpusFile
from unified_kg_rag.ingestion.deletion import (
    Removal,
    confirm_share,
    graph_needs_rebuild_reason,
    remove_documents,
)
from unified_kg_rag.ingestion.message_archives import (
    FILES_KEY,
    FILES_NAMESPACE,
    ArchiveRecord,
    MessageRun,
    archive_claim,
    archive_targets,
    find_source,
    forget_run,
    load_archive_record,
    mtime,
)
from unified_kg_rag.ingestion.report import FailedDocument, IndexReport, MessageReport
from unified_kg_rag.ports import IndexStores, MessageSource, RecordStore
from unified_kg_rag.util.errors import InputError, UsageError

__all__ = [
    "FILES_NAMESPACE",
    "ArchiveRecord",
    "MessagePlan",
    "MessageRun",
    "archive_claim",
    "archive_targets",
    "find_source",
    "forget_run",
    "load_archive_record",
    "load_transcripts",
    "plan_messages",
    "preview_transcripts",
    "transcript_entry",
]

logger = logging.getLogger(__name__)

@dataclass
class MessagePlan:
    """The writes a run's message archives need (nothing written yet).

    Attributes:
        todo: transcripts to process, with their corpus entry and registry fingerprint.
        respans: unchanged transcripts (same text) whose stored spans are stale: the
            provenance of a message changed without changing its rendered line (a time zone
            change moves the UTC instant of a local time, not the local time shown; an
            edit's history grew). Only their spans record is written again.
        doomed: registry records of transcripts to delete.
        files: the archive record to save after the run.
        replaced: registry records of the archive files themselves, indexed before as
            ordinary documents (a JSON Lines file that was not recognised, a ``.db`` that
            failed): they go with the documents' removals, before any processing.
    """

    todo: list[tuple[CorpusFile, str, TranscriptDoc]] = field(default_factory=list)
    respans: list[tuple[CorpusFile, TranscriptDoc]] = field(default_factory=list)
    doomed: list[DocRecord] = field(default_factory=list)
    files: ArchiveRecord = field(default_factory=lambda: ArchiveRecord())
    replaced: list[DocRecord] = field(default_factory=list)

    async def write_spans(self, records: RecordStore) -> None:
        """Store the message spans of the transcripts about to be processed (and `respans`)."""
        items = {corpus.document_id: spans_record(doc) for corpus, _, doc in self.todo}
        items.update({corpus.document_id: spans_record(doc) for corpus, doc in self.respans})
        if items:
            await records.put_many(SPANS_NAMESPACE, items)

    async def finish(self, stores: IndexStores) -> Removal:
        """Delete the doomed transcripts and their spans, then save the archive record.

        Called after the new transcripts are processed, so a re-keyed transcript is replaced,
        never missing: queries during the run, or after an interrupted one, still find every
        message (at worst twice, until the next run finishes).

        Raises:
            StoreError: a store failed (the next run finishes the removal).
        """
        removal = await remove_documents(stores, self.doomed)
        if self.doomed:
            await stores.records.delete(SPANS_NAMESPACE, [r.document_id for r in self.doomed])
        await stores.records.put(FILES_NAMESPACE, FILES_KEY, self.files.to_json())
        return removal


async def plan_messages(
    stores: IndexStores,
    archives: Sequence[CorpusFile],
    sources: Sequence[MessageSource],
    run: MessageRun,
    report: IndexReport,
    *,
    fingerprint: Callable[[str], str],
    reset: bool,
    rebuilds: bool,
    share: float,
    confirm: bool,
) -> MessagePlan:
    """Read the archives, render the transcripts and diff them; write nothing.

    Args:
        stores: the index's stores.
        archives: the archive files this run names (``message_source`` picked by dispatch or
            ``--source``).
        sources: the registered message sources.
        run: this run's message options.
        report: the run's report (``messages`` and the document counts are filled in;
            archives that fail to read are added to ``failed``).
        fingerprint: transcript hash → registry content hash (folds in chunk settings).
        reset: process every rendered transcript again.
        rebuilds: the run can rebuild the index's LLM graph (else removals are kept).
        share: ``indexing.max_delete_share``.
        confirm: ``--yes``.

    Returns:
        The plan: transcripts to process, transcripts to delete, the archive record.

    Raises:
        UsageError: ``--source`` names no registered source.
        ConfirmationRequiredError: the run would delete all transcripts, or more than
            ``share`` of them (nothing written).
        StoreError: a store failed.
    """
    by_name = {s.name: s for s in sources}
    if run.source is not None and run.source not in by_name:
        raise UsageError(
            f"unknown message source {run.source!r}; registered: {', '.join(sorted(by_name))}",
            field="--source",
        )
    mr = MessageReport(bounded=run.bounded)
    report.messages = mr
    plan = MessagePlan()
    stale = await stores.registry.get([f.document_id for f in archives])
    plan.replaced = [r for r in stale.values() if r.source_scope != MESSAGE_SCOPE]
    record = await load_archive_record(stores.records)
    options = MessageSourceOptions(
        handle_names=run.options.handle_names if run.names_given else record.handle_names,
        owner_label=run.options.owner_label if run.owner_given else record.owner_label,
        timezone=run.timezone,
    )
    forget = set(run.forget)
    for path in sorted(forget - set(record.archives)):
        report.failed.append(FailedDocument(
            path=escape_undecodable(path), reason="not a message archive of this index"))
    known = {p: n for p, n in record.archives.items() if p not in forget}
    wanted = {
        f.path.resolve().as_posix(): (f.display_path, f.message_source or "") for f in archives
    }
    earlier = {p: n for p, n in known.items() if p not in wanted}
    present = await asyncio.to_thread(lambda: {p for p in earlier if os.path.exists(p)})
    for path, name in earlier.items():
        if path in present:
            wanted[path] = (escape_undecodable(path), name)
        else:
            mr.archives_missing.append(escape_undecodable(path))
    parsed, failed = await _read_archives(wanted, by_name, options, report, mr)
    mr.archives = len(parsed)
    plan.files = ArchiveRecord(
        archives={p: n for p, (_, n) in wanted.items() if p in parsed or p in known},
        handle_names=dict(options.handle_names), owner_label=options.owner_label,
    )
    merged = merge_messages(parsed.values())
    mr.tapbacks_folded = sum(len(m.tapbacks) for m in merged)
    mr.messages = len(merged)
    mr.duplicates = sum(len(v) for v in parsed.values()) - len(merged)
    window = bound_messages(merged, since=run.since, limit=run.limit, tz=run.timezone)
    mr.messages_rendered = len(window)
    docs = render_transcripts(window, max_chars=run.max_chars, tz=run.timezone)
    mr.transcripts = len(docs)
    manifest, removed = await _diff(
        stores, docs, plan, mr, report, fingerprint=fingerprint, reset=reset
    )
    if failed:
        # the render misses an archive's messages in ways no window describes: change nothing
        mr.held_reason = ("an archive failed to read: no transcript was changed or deleted; "
                          "fix that archive, or leave it out (`ukr delete` it if the index "
                          "was built from it), and run again")
        plan.todo, plan.respans, plan.doomed, plan.files = [], [], [], record
        mr.provenance_updated = 0
        return plan
    rekeyed = set(respanned(manifest, removed, docs))
    if mr.bounded:
        keep = set(removed) - rekeyed
        mr.kept_out_of_window = len(keep)
        plan.doomed = [r for r in plan.doomed if r.path not in keep]
    if plan.doomed:
        # a transcript whose every message this render indexes under another key (a thread
        # grew and its last transcript was packed again) is re-keyed, not lost: the guard
        # counts only transcripts whose messages are gone
        lost = sum(1 for r in plan.doomed if r.path not in rekeyed)
        where = "the message archives' transcripts"
        if mr.archives_missing:
            where += f" (archives gone from disk: {', '.join(mr.archives_missing)})"
        await _check_removal(stores, plan, report, of=len(manifest), lost=lost,
                             rendered=None if run.forget else len(docs), where=where,
                             rebuilds=rebuilds, share=share, confirm=confirm)
    return plan


async def _read_archives(
    wanted: dict[str, tuple[str, str]],
    by_name: dict[str, MessageSource],
    options: MessageSourceOptions,
    report: IndexReport,
    mr: MessageReport,
) -> tuple[dict[str, list[SourceMessage]], bool]:
    """Parse every archive, newest file first; failures go to the report.

    The order is the merge's precedence: when exports overlap, the most recently modified
    file's copy of a message wins (its reactions, an edited text, a renamed group), ties by
    path so the merge is stable.
    """
    parsed: dict[str, list[SourceMessage]] = {}
    failed = False
    mtimes = await asyncio.to_thread(lambda: {p: mtime(p) for p in wanted})
    for path in sorted(wanted, key=lambda p: (-mtimes[p], p)):
        shown, name = wanted[path]
        source = by_name.get(name)
        try:
            if source is None:
                raise InputError(shown, f"no message source named {name!r}")
            archive = await asyncio.to_thread(source.parse, Path(path), options)
        except InputError as exc:
            failed = True
            reason = " ".join(exc.reason.split())
            report.failed.append(FailedDocument(path=shown, reason=reason))
            logger.info("cannot read message archive %s: %s", shown, reason)
            continue
        parsed[path] = list(archive.messages)
        mr.skipped += archive.skipped
        for reason, count in archive.skipped_reasons.items():
            mr.skipped_reasons[reason] = mr.skipped_reasons.get(reason, 0) + count
        mr.problems.extend(f"{shown}: {p}" for p in archive.problems[: 20 - len(mr.problems)])
        logger.info("read %s (%s): %d messages, %d skipped", shown, name,
                    len(archive.messages), archive.skipped)
    return parsed, failed


async def _diff(
    stores: IndexStores,
    docs: Sequence[TranscriptDoc],
    plan: MessagePlan,
    mr: MessageReport,
    report: IndexReport,
    *,
    fingerprint: Callable[[str], str],
    reset: bool,
) -> tuple[dict[str, ManifestEntry], list[str]]:
    """Diff the render against the registry's transcripts; return the manifest and removed."""
    records = await stores.registry.list_records(MESSAGE_SCOPE)
    live = {r.path: r for r in records if r.status is not DocStatus.DELETING}
    stored = await load_transcripts(stores.records, [r.document_id for r in live.values()])
    manifest = {
        key: ManifestEntry(
            doc_key=key, document_id=r.document_id,
            content_hash=r.content_hash if r.status is DocStatus.PROCESSED else "",
            message_guids=tuple(
                m.guid for m in (stored[r.document_id].messages if r.document_id in stored else ())
            ),
        )
        for key, r in live.items()
    }
    diff = diff_manifest(manifest, docs, hash_of=lambda d: fingerprint(transcript_hash(d)))
    mr.new, mr.changed, mr.unchanged = len(diff.new), len(diff.changed), len(diff.unchanged)
    mr.removed = len(diff.removed)
    report.documents_found += len(docs)
    report.documents_new += len(diff.new)
    report.documents_changed += len(diff.changed)
    report.documents_unchanged += len(diff.unchanged)
    partial: set[str] = set()
    if mr.bounded:
        # a transcript that would lose messages in a partial render (a message gone from this
        # export inside the window) is kept as indexed until a full run renders it
        rendered = {d.doc_key: d for d in docs}
        partial = {k for k in diff.changed
                   if not set(rendered[k].message_guids).issuperset(manifest[k].message_guids)}
        mr.kept_partial = len(partial)
    wanted = {*diff.new, *diff.changed, *(diff.unchanged if reset else ())} - partial
    unchanged = set(diff.unchanged)
    for doc in docs:
        if doc.doc_key in wanted:
            plan.todo.append((transcript_entry(doc), fingerprint(transcript_hash(doc)), doc))
        elif doc.doc_key in unchanged:
            known = stored.get(live[doc.doc_key].document_id)
            if known is None or known.messages != doc.messages:
                plan.respans.append((transcript_entry(doc), doc))
    mr.provenance_updated = len(plan.respans)
    plan.doomed = [live[k] for k in diff.removed]
    return manifest, list(diff.removed)


def transcript_entry(doc: TranscriptDoc) -> CorpusFile:
    """Return the corpus entry of a transcript (scope `MESSAGE_SCOPE`, path its ``doc_key``)."""
    doc_id = document_id(MESSAGE_SCOPE, doc.doc_key)
    return CorpusFile(Path(MESSAGE_SCOPE), doc.title, MESSAGE_SCOPE, doc.doc_key, doc_id, True)


async def preview_transcripts(
    archives: Sequence[CorpusFile], sources: Sequence[MessageSource], run: MessageRun
) -> list[TranscriptDoc]:
    """Render the named archives alone (for a cost estimate); unreadable ones are left out.

    Raises:
        UsageError: ``--source`` names no registered source.
    """
    by_name = {s.name: s for s in sources}
    if run.source is not None and run.source not in by_name:
        raise UsageError(f"unknown message source {run.source!r}", field="--source")
    wanted = {f.path.resolve().as_posix(): (f.display_path, f.message_source or "")
              for f in archives}
    options = run.options.model_copy(update={"timezone": run.timezone})
    parsed, _ = await _read_archives(wanted, by_name, options, IndexReport(index=""),
                                     MessageReport())
    window = bound_messages(merge_messages(parsed.values()), since=run.since, limit=run.limit,
                            tz=run.timezone)
    return render_transcripts(window, max_chars=run.max_chars, tz=run.timezone)


async def _check_removal(
    stores: IndexStores,
    plan: MessagePlan,
    report: IndexReport,
    *,
    of: int,
    lost: int,
    rendered: int | None,
    where: str,
    rebuilds: bool,
    share: float,
    confirm: bool,
) -> None:
    """Keep the removals when the graph cannot be rebuilt; refuse a mass deletion."""
    reason = await graph_needs_rebuild_reason(stores, rebuilds=rebuilds)
    if reason:
        report.documents_missing += len(plan.doomed)
        report.deletion_note = reason
        logger.warning("%d transcript(s) no longer rendered were kept: %s",
                       len(plan.doomed), reason)
        plan.doomed = []
        return
    if not confirm:
        confirm_share(stores.name, doomed=lost, of=of, found=rendered, where=where, share=share)


async def load_transcripts(
    records: RecordStore, document_ids: Sequence[str]
) -> dict[str, StoredTranscript]:
    """Return document id → its stored transcript spans (absent: not a transcript).

    Raises:
        StoreError: the record store failed.
    """
    out: dict[str, StoredTranscript] = {}
    ids = list(dict.fromkeys(document_ids))
    for i in range(0, len(ids), 500):
        out.update(parse_spans_records(
            await records.get_many(SPANS_NAMESPACE, ids[i : i + 500])))
    return out
