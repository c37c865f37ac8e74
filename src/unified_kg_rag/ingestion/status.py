"""What an index holds and how far it drifted, for `ukr status` and `describe_index`.

Besides counts and drift: the quarantined documents and text units (seed 000 §5.3), and the
extraction records no text unit reads any more (issue #15: left by a killed run; the next
`ukr index` run sweeps them).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.domain.extraction.grounding import ShapingCounts
from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    RAPTOR_NAMESPACE,
    SUMMARY_TREE_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.index.methodologies import builds_artifact
from unified_kg_rag.domain.llm.roles import ROLES, RoleModels
from unified_kg_rag.domain.models import Collection, DocStatus, IndexInfo
from unified_kg_rag.domain.tree.nodes import SummaryTree
from unified_kg_rag.ports import ChatModel, IndexStores
from unified_kg_rag.util.errors import StoreSchemaError

if TYPE_CHECKING:  # the graph modules load only when an index is described
    from unified_kg_rag.ingestion.graph.extract import GraphExtractor

__all__ = [
    "DocumentFailure",
    "IndexDrift",
    "IndexStatus",
    "QuarantinedItem",
    "RoleModel",
    "StatusReport",
    "describe_index",
    "index_drift",
]

DEFAULT_RESET_DRIFT_SHARE = 0.1
"""``indexing.reset_drift_share``'s default."""


class IndexDrift(BaseModel):
    """What of an index a full rebuild (``ukr index PATH --reset``) would set right.

    The graph figures are of the LLM entity graph only (its stored communities, their
    reports and its entities); the LLM-free concept graph (``lazy``) is not measured.

    Attributes:
        graph: ``entities`` when the index holds the LLM entity graph (graphrag, lightrag or
            hipporag), whose communities and entities the figures count; None when it holds
            none, so no graph drift is measured (a ``lazy`` concept graph, with communities
            of its own, is never measured).
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

    graph: Literal["entities"] | None = None
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


class QuarantinedItem(BaseModel):
    """A document or text unit no longer retried after failing on consecutive runs.

    Attributes:
        kind: ``document`` (reading, parsing, chunking or embedding failed) or ``text unit``
            (its graph extraction failed).
        path: the document's path (a text unit's document).
        id: the document id, or the text unit id.
        failures: consecutive runs it failed on.
        error: the last failure's reason, one line.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["document", "text unit"]
    path: str
    id: str
    failures: int
    error: str


class DocumentFailure(BaseModel):
    """A document recorded ``failed``: the next ``ukr index`` run retries it.

    Attributes:
        path: the document's path, relative to the folder it was indexed from.
        id: the document id.
        failures: consecutive runs it failed on at this content.
        error: the last failure's reason, one line.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    id: str
    failures: int
    error: str


class IndexStatus(IndexInfo):
    """`IndexInfo` plus the index's drift, quarantined items and orphan extraction records.

    Attributes:
        drift: what a full rebuild would set right (`IndexDrift`).
        summary_tree: the `raptor` tree in words (levels and summaries, ``partial`` when
            some summaries failed and wait for the next run); None when none is stored.
        failed: the documents recorded ``failed``, by path, with their reasons.
        quarantined: documents and text units quarantined (``ukr index PATH
            --retry-quarantined`` or a change of their content releases them).
        extraction_records_orphaned: stored extraction records no text unit of the index
            reads under the current model, prompts and settings (the next ``ukr index`` run
            deletes them); None when not counted (no LLM configured, or no graph
            methodology: the record keys cannot be computed).
        graph_shaping: what grounding and the confidence rules removed or down-weighted in
            the last LLM graph build; None when no build recorded it.
        access_counts: retrievals recorded per collection (``query.access.record``; the
            `AccessLog` totals); empty when none were.
    """

    drift: IndexDrift = IndexDrift()
    summary_tree: str | None = None
    failed: list[DocumentFailure] = Field(default_factory=list)
    quarantined: list[QuarantinedItem] = Field(default_factory=list)
    extraction_records_orphaned: int | None = None
    graph_shaping: ShapingCounts | None = None
    access_counts: dict[str, int] = Field(default_factory=dict)


class RoleModel(BaseModel):
    """Which model serves one role (`domain.llm.roles`), for ``ukr status``.

    Attributes:
        role: the role (``extraction``, ``summaries``, ``reports``, ``query``, ``answer``,
            ``judge``).
        model: the serving model's id (``openai:gpt-4o-mini@http://…``); None: no model
            (``llm.kind: none``: extractive answers, no LLM graph).
        source: what the configuration chose: ``default`` (the top-level ``llm``), ``fast``,
            ``strong`` (a tier), ``inline`` (the role's own model) or ``evaluation.judge``.
    """

    role: str
    model: str | None
    source: str


class StatusReport(BaseModel):
    """A project's store location and its indexes (`App.status`; ``ukr status --json``).

    Attributes:
        project_dir: the project directory.
        store: where the store backend keeps the indexes (a file, a database URL without
            its password).
        indexes: every index of the project, described.
        models: the model serving each role, in `domain.llm.roles.ROLES` order.
    """

    project_dir: str
    store: str
    indexes: list[IndexStatus] = Field(default_factory=list)
    models: list[RoleModel] = Field(default_factory=list)


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
    if builds_artifact(methodologies, "community_reports"):
        clustered = {m for c in communities for m in c.member_ids}
        unclustered = max(entities - len(clustered), 0)
    failed = documents.get(DocStatus.FAILED.value, 0)
    pending = documents.get(DocStatus.PENDING.value, 0)
    deleting = documents.get(DocStatus.DELETING.value, 0)
    n_docs = sum(documents.values())
    # documents failed/pending/deleting are repaired by running `ukr index` again (or fixing
    # the file), not by a reset: they are shown but do not count toward the reset share
    share = without / len(ids) if ids else 0.0
    entity_graph = builds_artifact(methodologies, "entity_graph")
    return IndexDrift(
        graph="entities" if entity_graph else None,
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
    stores: IndexStores,
    *,
    reset_drift_share: float = DEFAULT_RESET_DRIFT_SHARE,
    quarantine_after: int = 3,
    extractor: GraphExtractor | None = None,
) -> IndexStatus:
    """Return the documents per status, item counts, embedding model and drift of one index.

    Args:
        stores: the index's stores (only read).
        reset_drift_share: ``indexing.reset_drift_share`` (when to recommend a reset).
        quarantine_after: ``indexing.quarantine_after`` (which text units are quarantined).
        extractor: the configuration's graph extractor, when an LLM and a graph methodology
            are configured: then orphan extraction records are counted (this reads every
            text unit's text) and only quarantined units the index still holds are listed.

    Raises:
        StoreError: a store failed.
    """
    from unified_kg_rag.ingestion.graph.build import BUILD_KEY
    from unified_kg_rag.ingestion.graph.record_sweep import current_keys, orphan_records

    counts = {c.value: await stores.search.count(c) for c in Collection}
    counts.update(await stores.graph.counts())
    embedding = await stores.search.embedding()
    raw = await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)
    methodologies = parse_methodologies(raw)
    documents = await stores.registry.status_counts()
    keep = await current_keys(stores, extractor) if extractor is not None else None
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
        summary_tree=_tree_state(await stores.records.get(RAPTOR_NAMESPACE, SUMMARY_TREE_KEY)),
        failed=await _failed(stores, documents),
        quarantined=await _quarantined(stores, documents, quarantine_after, keep),
        extraction_records_orphaned=(
            None if keep is None else len(await orphan_records(stores, keep))
        ),
        graph_shaping=_shaping(await stores.records.get(INDEX_NAMESPACE, BUILD_KEY)),
    )


def _shaping(raw: str | None) -> ShapingCounts | None:
    """What the last graph build's grounding did, from its build record (None: not recorded)."""
    try:
        shaping = json.loads(raw)["shaping"] if raw else None
        return None if shaping is None else ShapingCounts.model_validate(shaping)
    except (ValueError, KeyError, TypeError):  # a record of an older version, or unreadable
        return None


def _tree_state(raw: str | None) -> str | None:
    """The stored summary tree in words (None when none is stored)."""
    if not raw:
        return None
    try:
        tree = SummaryTree.decode(raw)
    except StoreSchemaError as exc:
        return f"unreadable ({exc})"
    per = Counter(n.level for n in tree.nodes)
    levels = ", ".join(f"L{k}: {v}" for k, v in sorted(per.items()))
    if not levels:
        return ("no summary (too few text units, graph.raptor.min_leaves, or every summary "
                "failed: see the last `ukr index`)")
    state = ("; partial: failed summaries are retried by the next `ukr index`"
             if tree.partial else "")  # fmt: skip
    leaves = len({u for n in tree.nodes for u in n.text_unit_ids})
    return f"{levels} over {leaves} text units{state}"


async def _failed(stores: IndexStores, documents: dict[str, int]) -> list[DocumentFailure]:
    """The documents recorded ``failed``, by path (the registry is read only when some are)."""
    if not documents.get(DocStatus.FAILED.value):
        return []
    return sorted(
        (DocumentFailure(path=r.path, id=r.document_id, failures=r.failure_count,
                         error=r.error or "")
         for r in await stores.registry.list_records() if r.status is DocStatus.FAILED),
        key=lambda f: f.path,
    )  # fmt: skip


async def _quarantined(
    stores: IndexStores, documents: dict[str, int], limit: int, keep: set[str] | None
) -> list[QuarantinedItem]:
    """The quarantined documents (by path), then the quarantined text units (by path)."""
    items: list[QuarantinedItem] = []
    if documents.get(DocStatus.QUARANTINED.value):
        items += [
            QuarantinedItem(kind="document", path=r.path, id=r.document_id,
                            failures=r.failure_count, error=r.error or "")
            for r in await stores.registry.list_records()
            if r.status is DocStatus.QUARANTINED
        ]
    from unified_kg_rag.ingestion.graph.unit_attempts import UnitLedger

    units = await UnitLedger(stores.records, limit).quarantined()
    items += sorted(
        (QuarantinedItem(kind="text unit", path=a.path, id=a.text_unit_id,
                         failures=a.failures, error=a.error)
         for key, a in units.items() if keep is None or key in keep),
        key=lambda i: (i.path, i.id),
    )
    return items


def roles_in_use(
    models: RoleModels[ChatModel], judge: tuple[ChatModel | None, str] | None = None
) -> list[RoleModel]:
    """Return which model serves each role (``ukr status``), in `ROLES` order.

    Args:
        models: the project's models per role.
        judge: the judge model of ``evaluation.judge`` and its source, when that section
            names a provider (it wins over ``llm.roles.judge``).

    Summaries and reports without a model of their own name the extraction model a graph
    build falls back to (`GraphIndexer`).
    """
    out = []
    for role in ROLES:
        model, source = models.for_role(role), models.source(role)
        if role == "judge" and judge is not None:
            model, source = judge
        elif (model is None and role in ("summaries", "reports")
              and (model := models.for_role("extraction")) is not None):
            source = f"extraction ({models.source('extraction')})"
        out.append(RoleModel(role=role, model=model.model_id if model else None,
                             source=source))  # fmt: skip
    return out
