"""Removing documents from an index: what to delete, the mass-deletion guard, the write-ahead.

Two ways in: `ukr index PATH` deletes the documents of a walked folder that the walk no longer
finds (`walk_deletions`), and `ukr delete` names documents by id or path
(`match_documents`). Both go through `remove_documents`, whose order makes any interruption
repairable (seed 000 §5.3: the registry lists whatever the stores may hold):

1. each document is recorded ``deleting`` (its text unit ids kept), in one registry write;
2. the texts of its text units are read (for the extraction-record garbage collection);
3. its text units are deleted from the search index;
4. its registry record is deleted.

A run killed between 1 and 4 leaves ``deleting`` records; every later run finishes them
(`unfinished`) unless the document's file is found again by a walk, in which case it is
processed like a failed one (its old text units are covered by the write-ahead union). The
graph stages read only ``processed`` documents, so a ``deleting`` one is out of every build
from step 1 on; the stored graph and concept graph hold its items until they are derived again
from the surviving units (their input digest changed) at the end of the same run or, after a
crash, of the next one.

What is never deleted: a file the walk found (even one that failed to read or parse: it is
``failed``), and a file still on disk that the walk skipped (excluded, unsupported extension,
not a regular file): an optional parser that went missing must not read as the deletion of
every file of its type. `ukr delete` removes those explicitly.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path

from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.index.paths import full_location_of
from unified_kg_rag.domain.models import Collection, DocRecord, DocStatus
from unified_kg_rag.domain.text.decoding import escape_undecodable, unescape_undecodable
from unified_kg_rag.ingestion.corpus import CorpusFile
from unified_kg_rag.ingestion.derived import DerivedStages
from unified_kg_rag.ingestion.report import (
    DeletedDocument,
    DeleteReport,
    FailedDocument,
    IndexReport,
)
from unified_kg_rag.ingestion.stages import selected_stages
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.util.errors import ConfigurationError, ConfirmationRequiredError

__all__ = [
    "Removal",
    "confirm_share",
    "delete_documents",
    "explicit_deletions",
    "graph_needs_rebuild_reason",
    "match_documents",
    "remove_documents",
    "remove_stale_units",
    "unfinished",
    "walk_deletions",
    "walked_scopes",
]

logger = logging.getLogger(__name__)

_BATCH = 2000
"""Text unit ids read or deleted per store call."""


@dataclass
class Removal:
    """What `remove_documents` did.

    Attributes:
        documents: the registry records removed (as they were before the removal).
        text_units_removed: text units deleted from the search index.
    """

    documents: list[DocRecord] = field(default_factory=list)
    text_units_removed: int = 0

    def add(self, other: Removal) -> None:
        """Count ``other`` (a later removal of the same run) in this one."""
        self.documents += other.documents
        self.text_units_removed += other.text_units_removed


def walked_scopes(paths: Sequence[Path], parsing: ParsingConfig) -> dict[str, list[Path]]:
    """Return source scope → folders walked, for the folders among ``paths``.

    The scope rule is `ingestion.corpus.discover`'s: ``parsing.source_scope`` when set, else
    the resolved folder. Files named one by one walk nothing: the rest of their folder was not
    looked at, so nothing of it is deleted.
    """
    out: dict[str, list[Path]] = {}
    for given in paths:
        if given.is_dir():
            root = given.resolve()
            out.setdefault(parsing.source_scope or root.as_posix(), []).append(root)
    return out


def _still_on_disk(records: Sequence[DocRecord], folders: Sequence[Path]) -> set[str]:
    return {
        r.document_id for r in records
        if any(os.path.lexists(folder / name) for folder in folders
               for name in {r.path, unescape_undecodable(r.path)})
    }


def confirm_share(
    index: str, *, doomed: int, of: int, found: int | None, where: str, share: float
) -> None:
    """Refuse a mass deletion: an emptied folder, or more than ``share`` of the documents.

    Args:
        index: the index name (for the message).
        doomed: documents the run would delete.
        of: documents the judged scope holds (a walked folder, or the whole index).
        found: files the walk found in the folder (None for an explicit deletion).
        where: the scope, for the message (``folder /data/docs``, ``the index``).
        share: ``indexing.max_delete_share``.

    Raises:
        ConfirmationRequiredError: the deletion needs ``--yes``; nothing was written yet.
    """
    if doomed == 0:
        return
    if found == 0:
        why = f"{where} is empty now (unmounted or moved?)"
    elif doomed > share * of:
        why = f"more than indexing.max_delete_share ({share:g}) of {where}"
    else:
        return
    raise ConfirmationRequiredError(
        f"index {index!r}: this run would delete {doomed} of {of} documents: {why}. Nothing "
        "was written; pass --yes to delete them",
        index=index, would_delete=doomed, of=of,
    )


async def graph_needs_rebuild_reason(stores: IndexStores, *, rebuilds: bool) -> str:
    """Return why documents cannot be removed now ("" when they can).

    Removing a document changes the knowledge graph built from it (entities, relationships,
    communities, reports), which only the graph build derives again, with the LLM. When the
    index holds such a graph and this run will not rebuild it (no LLM configured, or no graph
    methodology selected), removing the text units alone would leave the deleted document's
    facts in the graph.

    Args:
        stores: the index's stores (only read).
        rebuilds: whether this run builds the LLM graph after removing.
    """
    if rebuilds:
        return ""
    counts = await stores.graph.counts()
    if not any(counts.values()):
        return ""
    return (
        f"index {stores.name!r} holds a knowledge graph ({counts.get('entities', 0)} entities) "
        "built by an LLM, and removing documents re-derives it from the surviving extraction "
        "records, which this configuration cannot do (llm.kind is none or "
        "indexing.methodologies selects no graph methodology). Configure the LLM that built "
        "the graph (its stored extraction records are reused), or index into a fresh index"
    )


async def unfinished(stores: IndexStores, *, except_ids: set[str]) -> list[DocRecord]:
    """Return the ``deleting`` records a killed run left, except ``except_ids`` (found again)."""
    return [r for r in await stores.registry.list_records()
            if r.status is DocStatus.DELETING and r.document_id not in except_ids]


def match_documents(
    records: Sequence[DocRecord], targets: Sequence[str]
) -> tuple[list[DocRecord], list[FailedDocument]]:
    r"""Return the records ``targets`` name, and the targets naming none (with why).

    A target is a document id (or a unique prefix of at least 8 hex digits, as printed), a
    file's full location (scope + relative path; a relative path on the command line is taken
    from the current directory), or a path relative to its source scope when only one
    document has it. A name that is not valid UTF-8 matches as given by the shell or as shown
    (its odd bytes escaped, ``caf\xe9.txt``): paths are recorded in the shown form.

    Returns:
        ``(matched, unknown)``: matched records without repeats, in target order; unknown
        targets with a one-line reason.
    """
    by_id = {r.document_id: r for r in records}
    by_location: dict[str, list[DocRecord]] = {}
    by_path: dict[str, list[DocRecord]] = {}
    for r in records:
        by_location.setdefault(full_location_of(r.source_scope, r.path), []).append(r)
        by_path.setdefault(r.path, []).append(r)
    matched: dict[str, DocRecord] = {}
    unknown: list[FailedDocument] = []
    for target in targets:
        hits = _match(target, by_id, by_location, by_path)
        if len(hits) == 1:
            matched.setdefault(hits[0].document_id, hits[0])
        elif hits:
            where = ", ".join(sorted(f"{r.source_scope}/{r.path}" for r in hits))
            unknown.append(FailedDocument(
                path=target, reason=f"matches {len(hits)} documents ({where}); give the full "
                "path or the document id"))
        elif _looks_like_short_id(target):
            unknown.append(FailedDocument(
                path=target, reason=f"no document has this path, and a document-id prefix "
                f"needs at least {_MIN_ID_PREFIX} characters (`ukr status` and `ukr delete` "
                "print 12)"))
        else:
            unknown.append(FailedDocument(
                path=target, reason="no document of the index has this id or path"))
    return list(matched.values()), unknown


def _looks_like_short_id(target: str) -> bool:
    """True for hex digits too few to be taken as a document-id prefix."""
    return 0 < len(target) < _MIN_ID_PREFIX and all(c in "0123456789abcdef" for c in target)


_MIN_ID_PREFIX = 8
"""Shortest document-id prefix accepted as a target."""


def _match(
    target: str,
    by_id: Mapping[str, DocRecord],
    by_location: Mapping[str, list[DocRecord]],
    by_path: Mapping[str, list[DocRecord]],
) -> list[DocRecord]:
    if target in by_id:
        return [by_id[target]]
    absolute = Path(os.path.abspath(target))
    for location in (target, absolute.as_posix(), (absolute.parent.resolve() / absolute.name)
                     .as_posix()):
        location = escape_undecodable(location)
        if location in by_location:
            return by_location[location]
    relative = escape_undecodable(target.removeprefix("./"))
    if relative in by_path:
        return list(by_path[relative])
    if len(target) >= _MIN_ID_PREFIX and all(c in "0123456789abcdef" for c in target):
        # the short id `ukr delete` and `ukr status` print: accepted when it is unique
        return [r for i, r in by_id.items() if i.startswith(target)]
    return []


async def remove_documents(
    stores: IndexStores, records: Sequence[DocRecord], *, found: Set[str] = frozenset()
) -> Removal:
    """Remove documents and their text units, finishing what a killed run left ``deleting``.

    The order is the module docstring's: ``deleting`` records first, then the text units,
    then the records. Extraction records and graph items are left to the stages after it.

    Args:
        stores: the index's (fenced) stores.
        records: the registry records to remove.
        found: ids of documents this run processes again (their ``deleting`` record from a
            killed run is left to that processing).

    Raises:
        StoreError: a store failed; the ``deleting`` records stay, and the next run finishes
            them.
    """
    ids = {r.document_id for r in records}
    records = [*records, *(r for r in await unfinished(stores, except_ids=set(found) | ids))]
    removal = Removal(documents=records)
    if not records:
        return removal
    now = time.time()
    await stores.registry.put([
        r.model_copy(update={"status": DocStatus.DELETING, "error": None, "updated_at": now})
        for r in records
    ])
    unit_ids = [t for r in records for t in r.text_unit_ids]
    for i in range(0, len(unit_ids), _BATCH):
        batch = unit_ids[i : i + _BATCH]
        removal.text_units_removed += await stores.search.delete(Collection.TEXT_UNITS, batch)
    await stores.registry.delete([r.document_id for r in records])
    logger.info("removed %d document(s) and %d text unit(s) from index %s",
                len(records), removal.text_units_removed, stores.name)
    return removal


async def walk_deletions(
    stores: IndexStores,
    files: Sequence[CorpusFile],
    roots: Mapping[str, Sequence[Path]],
    report: IndexReport,
    *,
    rebuilds: bool,
    share: float,
    confirm: bool,
) -> list[DocRecord]:
    """Return the documents of the walked folders that the walk no longer finds (reads only).

    A file discovery found is never deleted (read or not: an unreadable one is ``failed``),
    nor one still on disk under the folder that the walk skipped (counted in ``report``).

    Args:
        stores: the index's stores.
        files: every file discovery found.
        roots: walked scope → its folders (`walked_scopes`).
        report: the run's report (``documents_kept_on_disk``, ``documents_missing`` and
            ``deletion_note`` are set).
        rebuilds: whether the run rebuilds the LLM graph (`graph_needs_rebuild_reason`).
        share: ``indexing.max_delete_share``.
        confirm: ``--yes``: delete whatever the share.

    Raises:
        ConfirmationRequiredError: a mass deletion without ``confirm`` (nothing written).
        StoreError: a store failed.
    """
    found: dict[str, set[str]] = {}
    for f in files:
        found.setdefault(f.source_scope, set()).add(f.document_id)
    doomed: list[DocRecord] = []
    scopes: list[tuple[str, int, int, int]] = []  # scope, doomed, documents, files found
    for scope, folders in roots.items():
        live = [r for r in await stores.registry.list_records(scope)
                if r.status is not DocStatus.DELETING]
        here = found.get(scope, set())
        missing = [r for r in live if r.document_id not in here]
        on_disk = await asyncio.to_thread(_still_on_disk, missing, folders)
        report.documents_kept_on_disk += len(on_disk)
        gone = [r for r in missing if r.document_id not in on_disk]
        doomed += gone
        scopes.append((scope, len(gone), len(live), len(here)))
    if not doomed:
        return []
    reason = await graph_needs_rebuild_reason(stores, rebuilds=rebuilds)
    if reason:
        report.documents_missing = len(doomed)
        report.deletion_note = reason
        logger.warning("%d document(s) not found were kept: %s", len(doomed), reason)
        return []
    if not confirm:
        for scope, n, of, n_found in scopes:
            confirm_share(stores.name, doomed=n, of=of, found=n_found,
                          where=f"folder {scope}", share=share)
    return doomed


async def explicit_deletions(
    stores: IndexStores,
    targets: Sequence[str],
    report: DeleteReport,
    *,
    rebuilds: bool,
    share: float,
    confirm: bool,
) -> list[DocRecord]:
    """Return the documents ``targets`` name (reads only; the guard refuses before writes).

    Args:
        stores: the index's stores.
        targets: document ids or paths (`match_documents`).
        report: the run's report (``unknown`` is set).
        rebuilds: whether the run rebuilds the LLM graph.
        share: ``indexing.max_delete_share`` (of the index's documents).
        confirm: ``--yes``: delete whatever the share.

    Raises:
        ConfirmationRequiredError: more than ``share`` of the index without ``confirm``.
        ConfigurationError: the index holds an LLM graph this configuration cannot rebuild
            (nothing written).
        StoreError: a store failed.
    """
    records = await stores.registry.list_records()
    matched, report.unknown = await asyncio.to_thread(match_documents, records, targets)
    fresh = [r for r in matched if r.status is not DocStatus.DELETING]
    live = sum(r.status is not DocStatus.DELETING for r in records)
    if fresh:
        reason = await graph_needs_rebuild_reason(stores, rebuilds=rebuilds)
        if reason:
            raise ConfigurationError(reason + "; nothing was deleted", field="llm.kind")
        if not confirm:
            confirm_share(stores.name, doomed=len(fresh), of=live, found=None,
                          where="the index", share=share)
    return matched


async def delete_documents(
    stores: IndexStores,
    targets: Sequence[str],
    derived: DerivedStages,
    *,
    share: float,
    confirm: bool,
) -> DeleteReport:
    """Remove the documents ``targets`` name, then derive the graphs without them.

    A target is a document id, a file's full path (relative paths are taken from the
    current directory), or a path relative to its source folder when only one document has
    it (`match_documents`). Removal writes ahead (`remove_documents`) and finishes what a
    killed run left ``deleting``; then the LLM graph and concept graph are built again from
    the surviving text units (`DerivedStages.run`; each skips itself when current, so a
    repeated delete repairs a killed one's graphs) and the extraction records only removed
    text had are deleted.

    Args:
        stores: the index's (fenced) stores, under the run's lease.
        targets: document ids or paths.
        derived: the pipeline's derived stages.
        share: ``indexing.max_delete_share`` (of the index's documents).
        confirm: delete whatever the share (``--yes``).

    Raises:
        ConfirmationRequiredError: more than ``share`` without ``confirm`` (nothing written).
        ConfigurationError: the index's LLM graph cannot be rebuilt by this configuration
            (nothing written).
        StoreError: a store failed (the next run finishes the removal).
    """
    report = DeleteReport(index=stores.name)
    doomed = await explicit_deletions(
        stores, targets, report, rebuilds=derived.rebuilds_graph, share=share, confirm=confirm
    )
    removal = await remove_documents(stores, doomed)
    report.deleted = [
        DeletedDocument(document_id=r.document_id, path=r.path, source_scope=r.source_scope)
        for r in removal.documents
    ]
    report.text_units_removed = removal.text_units_removed
    # Derived even when nothing was removed now: a delete killed after its registry records
    # went but before the graphs were derived left them stale, and repeating it must repair
    # them (each build skips itself when its inputs match its last complete build).
    derived_report = IndexReport(index=report.index)
    await derived.run(stores, derived_report)
    for stage in selected_stages(derived.context.methodologies):
        if field := stage.report_field:
            setattr(report, field, getattr(derived_report, field))
    report.records_removed = derived_report.records_removed
    return report


async def remove_stale_units(stores: IndexStores, unit_ids: Sequence[str]) -> int:
    """Delete the stale text units of changed documents; return how many existed.

    Their extraction records go with the graph build's sweep (`ingestion.graph.record_sweep`).

    Args:
        stores: the index's (fenced) stores.
        unit_ids: the stale text unit ids.

    Raises:
        StoreError: the search index failed.
    """
    return await stores.search.delete(Collection.TEXT_UNITS, unit_ids)
