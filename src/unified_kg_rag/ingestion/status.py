"""What an index holds and how far it drifted, for `ukr status` and `describe_index`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.models import Collection, DocStatus, IndexInfo
from unified_kg_rag.ports import IndexStores

__all__ = ["IndexDrift", "IndexStatus", "describe_index", "index_drift"]

DEFAULT_RESET_DRIFT_SHARE = 0.1
"""``indexing.reset_drift_share``'s default."""


class IndexDrift(BaseModel):
    """What of an index a full rebuild (``ukr index PATH --reset``) would set right.

    Attributes:
        communities: communities stored (every level).
        communities_without_report: communities whose report is missing from the search
            index or the graph store (a report that failed, or was lost).
        entities: entities stored.
        entities_unclustered: entities in no community (GraphRAG indexes only). Components
            smaller than ``graph.communities.min_community_size`` are never clustered, by a
            full build either, so these are shown but do not count toward ``share``.
        documents: documents recorded in the registry.
        documents_failed: documents recorded ``failed``.
        documents_pending: documents recorded ``pending`` (a run stopped while writing).
        documents_deleting: documents recorded ``deleting`` (a run stopped while removing).
        share: the share of communities without a report. Documents failed, pending or
            deleting are shown but do not count: the next plain `ukr index` run repairs
            pending and deleting ones, and a failed one needs its file fixed, not a reset.
        threshold: ``indexing.reset_drift_share``.
        reset_recommended: ``share`` passed ``threshold``.
    """

    model_config = ConfigDict(frozen=True)

    communities: int = 0
    communities_without_report: int = 0
    entities: int = 0
    entities_unclustered: int = 0
    documents: int = 0
    documents_failed: int = 0
    documents_pending: int = 0
    documents_deleting: int = 0
    share: float = 0.0
    threshold: float = DEFAULT_RESET_DRIFT_SHARE
    reset_recommended: bool = False


class IndexStatus(IndexInfo):
    """`IndexInfo` plus the index's drift (`IndexDrift`)."""

    drift: IndexDrift = IndexDrift()


async def index_drift(
    stores: IndexStores,
    *,
    methodologies: tuple[str, ...],
    documents: dict[str, int],
    threshold: float = DEFAULT_RESET_DRIFT_SHARE,
) -> IndexDrift:
    """Measure an index's drift from what a full rebuild would make.

    One read of the communities (their member ids) and one id lookup of their reports: on a
    20,000-entity index a few thousand rows, no report text and no entity read. Extraction
    records orphaned by a run killed before its record collection are not counted (finding
    them means hashing every text unit).

    Args:
        stores: the index's stores (only read).
        methodologies: the methodologies the index holds.
        documents: documents per status (`DocRegistry.status_counts`).
        threshold: ``indexing.reset_drift_share``.

    Raises:
        StoreError: a store failed.
    """
    counts = await stores.graph.counts()
    communities = await stores.graph.get_communities() if counts.get("communities") else []
    ids = [c.id for c in communities]
    with_report = await stores.search.existing_ids(Collection.REPORTS, ids) if ids else set()
    without = max(
        len(ids) - len(with_report & set(ids)),
        counts.get("communities", 0) - counts.get("reports", 0),
        0,
    )
    entities = counts.get("entities", 0)
    unclustered = 0
    if "graphrag" in methodologies:
        clustered = {m for c in communities for m in c.member_ids}
        unclustered = max(entities - len(clustered), 0)
    failed = documents.get(DocStatus.FAILED.value, 0)
    pending = documents.get(DocStatus.PENDING.value, 0)
    deleting = documents.get(DocStatus.DELETING.value, 0)
    n_docs = sum(documents.values())
    # documents failed/pending/deleting are repaired by running `ukr index` again (or fixing
    # the file), not by a reset: they are shown but do not count toward the reset share
    share = without / len(ids) if ids else 0.0
    return IndexDrift(
        communities=len(ids),
        communities_without_report=without,
        entities=entities,
        entities_unclustered=unclustered,
        documents=n_docs,
        documents_failed=failed,
        documents_pending=pending,
        documents_deleting=deleting,
        share=round(share, 4),
        threshold=threshold,
        reset_recommended=share > threshold,
    )


async def describe_index(
    stores: IndexStores, *, reset_drift_share: float = DEFAULT_RESET_DRIFT_SHARE
) -> IndexStatus:
    """Return the documents per status, item counts, embedding model and drift of one index.

    Args:
        stores: the index's stores (only read).
        reset_drift_share: ``indexing.reset_drift_share`` (when to recommend a reset).

    Raises:
        StoreError: a store failed.
    """
    counts = {c.value: await stores.search.count(c) for c in Collection}
    counts.update(await stores.graph.counts())
    embedding = await stores.search.embedding()
    raw = await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)
    methodologies = parse_methodologies(raw)
    documents = await stores.registry.status_counts()
    return IndexStatus(
        name=stores.name,
        methodologies=methodologies,
        embedding_model=embedding[0] if embedding else None,
        embedding_dimension=embedding[1] if embedding else None,
        counts={k: v for k, v in counts.items() if v},
        documents=documents,
        writer=await stores.registry.get_lease(),
        drift=await index_drift(
            stores, methodologies=methodologies, documents=documents,
            threshold=reset_drift_share,
        ),
    )
