"""Writing one batch of parsed documents and committing it, under the write-ahead rule.

Before any search write, each document is recorded ``pending`` with the union of its old and
new text units, so a run stopped anywhere below is repaired by the next one (a pending
document is always processed again, and its stale units are computed from that union). Then
the text units not already stored with a vector are embedded and stored (the others' fields
rewritten when they changed, e.g. a new modification time), the stale units of
changed documents removed, and the documents recorded ``processed``. Calling it again on a
batch a failed call began to write is safe (`ingestion.document_failures.write_isolating`
bisects batches that way).
"""

from __future__ import annotations

from collections.abc import Sequence

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import DocStatus, Document, TextUnit
from unified_kg_rag.ingestion.corpus import CorpusFile
from unified_kg_rag.ingestion.deletion import remove_stale_units
from unified_kg_rag.ingestion.embed_steps import UnitSteps
from unified_kg_rag.ingestion.prepare import registry_record
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ingestion.units import refresh_unit_fields, unit_union, units_to_embed
from unified_kg_rag.ports import Embedder, IndexStores

__all__ = ["Prepared", "commit_batch"]

Prepared = tuple[CorpusFile, Document, list[TextUnit]]
"""A corpus entry parsed and chunked: its file, document and text units."""


async def commit_batch(
    stores: IndexStores,
    config: UkrConfig,
    embedder: Embedder,
    batch: Sequence[Prepared],
    report: IndexReport,
    steps: UnitSteps | None = None,
) -> None:
    """Write and commit ``batch``; the report's counts change only once it all landed.

    Args:
        stores: the index's (fenced) stores.
        config: the fingerprint settings of the registry records (and
            ``indexing.embed_batch_units`` when ``steps`` is not given).
        embedder: embeds the text units not already stored with a vector.
        batch: the documents to commit.
        report: receives the text-unit counts and the embedding time.
        steps: embeds and stores the units step by step, reporting progress (default: steps
            of ``indexing.embed_batch_units`` units, no progress).

    Raises:
        StoreError: a store failed (the pending records make the next run finish the batch).
        Exception: whatever the embedder raises (the caller isolates a document's own).
    """
    search, registry = stores.search, stores.registry
    previous = await registry.get([doc.id for _, doc, _ in batch])
    await registry.put([
        registry_record(config, file, doc, DocStatus.PENDING,
                        unit_union(previous.get(doc.id), units), carry_from=previous.get(doc.id))
        for file, doc, units in batch
    ])
    units = [u for _, _, doc_units in batch for u in doc_units]
    fresh = await units_to_embed(search, units)
    if steps is None:
        steps = UnitSteps(embedder, step_units=config.indexing.embed_batch_units)
    paths = {doc.id: file.display_path for file, doc, _ in batch}
    embedding_s = await steps.store(search, units, fresh, paths)
    await refresh_unit_fields(search, units, fresh)
    stale: list[str] = []
    for _, doc, doc_units in batch:
        old = previous.get(doc.id)
        if old is not None:
            keep = {u.id for u in doc_units}
            stale.extend(t for t in old.text_unit_ids if t not in keep)
    removed = await remove_stale_units(stores, stale) if stale else 0
    await registry.put([
        registry_record(config, file, doc, DocStatus.PROCESSED, tuple(u.id for u in doc_units))
        for file, doc, doc_units in batch
    ])
    steps.committed([file.display_path for file, _, _ in batch])
    report.embedding_s = round(report.embedding_s + embedding_s, 3)
    report.text_units_embedded += len(fresh)
    report.text_units_reused += len(units) - len(fresh)
    report.text_units_written += len(fresh)
    report.text_units_removed += removed
