"""The document delta: a corpus compared with the doc registry by content hash.

Pure: takes the registry's records and the documents found now, returns which are new,
changed, unchanged, failed before (retried) or missing (in the registry, not found now), and
which unchanged ones are quarantined (seed 000 §5.3: not retried until their content changes).
Backends implement `DocRegistry.diff` with this function so every backend partitions alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from unified_kg_rag.domain.models import DocRecord, DocStatus, DocumentDelta

__all__ = ["diff_documents"]


def diff_documents(records: Iterable[DocRecord], current: Mapping[str, str]) -> DocumentDelta:
    """Partition documents by comparing content hashes with the registry.

    Args:
        records: the registry's records of one source scope.
        current: ``document_id -> content_hash`` of the documents found now.

    Returns:
        A `DocumentDelta` whose sets partition ``current`` (new, changed, unchanged,
        failed_before) plus ``missing``: recorded ids not found now. A document whose record is
        failed or pending is in ``failed_before`` whatever its hash, so it is tried again. A
        quarantined one reads unchanged at the content it failed on (and is listed in
        ``quarantined`` too), changed at any other content. Every tuple is sorted.
    """
    stored = {r.document_id: r for r in records}
    new: list[str] = []
    changed: list[str] = []
    unchanged: list[str] = []
    failed: list[str] = []
    quarantined: list[str] = []
    for doc_id, content_hash in current.items():
        record = stored.get(doc_id)
        if record is None:
            new.append(doc_id)
        elif record.status is DocStatus.QUARANTINED:
            same = record.content_hash == content_hash
            (unchanged if same else changed).append(doc_id)
            if same:
                quarantined.append(doc_id)
        elif record.status is not DocStatus.PROCESSED:
            failed.append(doc_id)
        elif record.content_hash != content_hash:
            changed.append(doc_id)
        else:
            unchanged.append(doc_id)
    missing = [d for d in stored if d not in current]
    return DocumentDelta(
        new=tuple(sorted(new)),
        changed=tuple(sorted(changed)),
        unchanged=tuple(sorted(unchanged)),
        failed_before=tuple(sorted(failed)),
        missing=tuple(sorted(missing)),
        quarantined=tuple(sorted(quarantined)),
    )
