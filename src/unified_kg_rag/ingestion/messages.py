"""Message archives in an index: parse, merge, render, diff against the manifest, plan writes.

The message corpus of an index is the guid-merge of every archive file it was built from
(``message_files`` record): a run that names archives reads them and the archives named
before that are still on disk, so two overlapping exports indexed in different runs never
duplicate a message, and a re-export of a grown ``chat.db`` adds only its new thread-days.
Each transcript (`domain.messages.TranscriptDoc`) is one document of scope `MESSAGE_SCOPE`
whose path is its ``doc_key``; its registry record is the manifest entry (content hash,
status, write-ahead), and a ``message_spans`` record keyed by document id keeps where each
message sits in its text (the provenance index queries read).

Diff (seed 001 ``WorkdirManifest.diff``): new and changed transcripts are processed (a
changed one's stale text units are deleted, units with unchanged text keep their ids and
extraction records); removed ones are deleted. A bounded build (``--since``,
``--message-limit``) renders part of the corpus by construction, so it deletes only its
re-span casualties: removed transcripts whose every message this render re-indexes under a
new key (seed 004, amendment of 2026-08-10). A run where an archive failed to read counts as
bounded too: its messages must not read as deleted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from unified_kg_rag.domain.identity import document_id
from unified_kg_rag.domain.messages import (
    MESSAGE_SCOPE,
    SPANS_NAMESPACE,
    ManifestEntry,
    MessageSourceOptions,
    SourceMessage,
    StoredTranscript,
    TranscriptDoc,
    bound_messages,
    diff_manifest,
    merge_messages,
    parse_spans_record,
    render_transcripts,
    respanned,
    spans_record,
    transcript_hash,
)
from unified_kg_rag.domain.models import DocRecord, DocStatus
from unified_kg_rag.ingestion.corpus import CorpusFile
from unified_kg_rag.ingestion.deletion import confirm_share, graph_needs_rebuild_reason
from unified_kg_rag.ingestion.report import FailedDocument, IndexReport, MessageReport
from unified_kg_rag.ports import IndexStores, MessageSource, RecordStore
from unified_kg_rag.util.errors import InputError, UsageError

__all__ = [
    "FILES_NAMESPACE",
    "MessagePlan",
    "MessageRun",
    "find_source",
    "load_transcripts",
    "plan_messages",
]

logger = logging.getLogger(__name__)

FILES_NAMESPACE = "message_files"
"""Record store namespace of the archive files an index was built from (key ``files``)."""

_FILES_KEY = "files"


@dataclass(frozen=True)
class MessageRun:
    """Options of one run's message archives.

    Attributes:
        options: handle names and owner label.
        source: the source every named archive is read with (``--source``); None: dispatch.
        since: first day of a bounded build (``--since``).
        limit: most recent messages of a bounded build (``--message-limit``).
        max_chars: transcript size target, characters.
        timezone: IANA time zone of rendered times and day boundaries.
    """

    options: MessageSourceOptions = field(default_factory=MessageSourceOptions)
    source: str | None = None
    since: date | None = None
    limit: int | None = None
    max_chars: int = 8000
    timezone: str = "UTC"

    @property
    def bounded(self) -> bool:
        """True for a bounded build (part of the corpus rendered on purpose)."""
        return self.since is not None or self.limit is not None


@dataclass
class MessagePlan:
    """The writes a run's message archives need (nothing written yet).

    Attributes:
        todo: transcripts to process, with their corpus entry and registry fingerprint.
        doomed: registry records of transcripts to delete.
        files: the archive record to save after the run (path → source name).
    """

    todo: list[tuple[CorpusFile, str, TranscriptDoc]] = field(default_factory=list)
    doomed: list[DocRecord] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    async def write_spans(self, records: RecordStore) -> None:
        """Store the message spans of the transcripts about to be processed."""
        items = {corpus.document_id: spans_record(doc) for corpus, _, doc in self.todo}
        if items:
            await records.put_many(SPANS_NAMESPACE, items)

    async def commit(self, records: RecordStore, removed_ids: Sequence[str]) -> None:
        """Forget the spans of removed transcripts and save the archive record."""
        if removed_ids:
            await records.delete(SPANS_NAMESPACE, list(removed_ids))
        await records.put(FILES_NAMESPACE, _FILES_KEY, json.dumps(self.files, sort_keys=True))


def find_source(
    path: Path, sources: Sequence[MessageSource], forced: str | None = None
) -> str | None:
    """Return the name of the source that reads ``path`` (structural dispatch), or None.

    With ``forced``, that source claims the file when its probe accepts it; a file named on
    the command line is claimed by the caller regardless (its parse then fails with a reason).
    """
    for source in sources:
        if forced is not None and source.name != forced:
            continue
        if source.matches(path):
            return source.name
    return None


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
    known = await _known_files(stores.records)
    wanted = {
        f.path.resolve().as_posix(): (f.display_path, f.message_source or "") for f in archives
    }
    earlier = {p: n for p, n in known.items() if p not in wanted}
    present = await asyncio.to_thread(lambda: {p for p in earlier if os.path.exists(p)})
    for path, name in earlier.items():
        if path in present:
            wanted[path] = (path, name)
        else:
            mr.archives_missing.append(path)
    parsed, failed = await _read_archives(wanted, by_name, run.options, report, mr)
    mr.archives = len(parsed)
    plan.files = {p: n for p, (_, n) in wanted.items() if p in parsed or p in known}
    merged = merge_messages(parsed.values())
    mr.messages = len(merged)
    mr.duplicates = sum(len(v) for v in parsed.values()) - len(merged)
    window = bound_messages(merged, since=run.since, limit=run.limit, tz=run.timezone)
    mr.messages_rendered = len(window)
    docs = render_transcripts(window, max_chars=run.max_chars, tz=run.timezone)
    mr.transcripts = len(docs)
    mr.bounded = run.bounded or failed
    manifest, removed = await _diff(
        stores, docs, plan, mr, report, fingerprint=fingerprint, reset=reset
    )
    if mr.bounded:
        keep = set(removed) - set(respanned(manifest, removed, docs))
        mr.kept_out_of_window = len(keep)
        plan.doomed = [r for r in plan.doomed if r.path not in keep]
    if plan.doomed:
        await _check_removal(stores, plan, report, of=len(manifest), rendered=len(docs),
                             rebuilds=rebuilds, share=share, confirm=confirm)
    return plan


async def _read_archives(
    wanted: dict[str, tuple[str, str]],
    by_name: dict[str, MessageSource],
    options: MessageSourceOptions,
    report: IndexReport,
    mr: MessageReport,
) -> tuple[dict[str, list[SourceMessage]], bool]:
    """Parse every archive (sorted by path, so the merge is stable); failures go to report."""
    parsed: dict[str, list[SourceMessage]] = {}
    failed = False
    for path in sorted(wanted):
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
            logger.warning("cannot read message archive %s: %s", shown, reason)
            continue
        parsed[path] = list(archive.messages)
        mr.skipped += archive.skipped
        mr.tapbacks_folded += archive.tapbacks_folded
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
    wanted = {*diff.new, *diff.changed, *(diff.unchanged if reset else ())}
    anchor = Path(MESSAGE_SCOPE)
    for doc in docs:
        if doc.doc_key not in wanted:
            continue
        doc_id = document_id(MESSAGE_SCOPE, doc.doc_key)
        corpus = CorpusFile(anchor, doc.title, MESSAGE_SCOPE, doc.doc_key, doc_id, True)
        plan.todo.append((corpus, fingerprint(transcript_hash(doc)), doc))
    plan.doomed = [live[k] for k in diff.removed]
    return manifest, list(diff.removed)


async def _check_removal(
    stores: IndexStores,
    plan: MessagePlan,
    report: IndexReport,
    *,
    of: int,
    rendered: int,
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
        confirm_share(stores.name, doomed=len(plan.doomed), of=of, found=rendered,
                      where="the message archives' transcripts", share=share)


async def _known_files(records: RecordStore) -> dict[str, str]:
    raw = await records.get(FILES_NAMESPACE, _FILES_KEY)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        logger.warning("the index's message archive record is unreadable; ignoring it")
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


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
        for key, raw in (await records.get_many(SPANS_NAMESPACE, ids[i : i + 500])).items():
            try:
                out[key] = parse_spans_record(raw)
            except ValueError:
                logger.warning("unreadable message spans of document %s; ignored", key)
    return out
