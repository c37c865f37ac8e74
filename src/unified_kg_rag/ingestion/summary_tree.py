"""`SummaryTreeBuilder`: the RAPTOR summary tree of the `raptor` methodology (issue 20).

RAPTOR (Sarthi et al., ICLR 2024; seed 000 §6.5), built from what the stores hold:

1. *Leaves*: the text units of ``processed`` documents, with their stored vectors (embedded
   again only where none is stored) and token counts.
2. *Trigger*: the leaf digest (sorted unit ids) and the fingerprint (tree settings, summary
   mode and model, prompt, embedding model) against the stored tree; equal and complete:
   nothing to do.
3. *Removal, fail-closed*: every stored summary whose lineage holds a unit that is gone, and
   every node above it, is deleted before anything else (a summary paraphrases its children,
   so it goes even where other children remain).
4. *Levels*: cluster the level's nodes (`domain.tree.clustering.cluster_level`: PCA, k-means
   with a hash-ranked farthest-first start, token-bounded clusters), summarise each cluster
   of two or more (`ingestion.tree_summaries`; a cluster whose ``input_key`` equals a stored
   node's takes its summary without a call), embed the new summaries, and go on with the
   summaries and the promoted single nodes until a level is small (``min_nodes_to_cluster``),
   shrinks too little, or ``max_levels`` is reached.
5. *Write*: the new nodes into the ``summary_nodes`` search collection, then the tree record
   (`domain.tree.nodes.SummaryTree`, the authority on what the tree holds), then the nodes
   no longer in it are deleted. A tree is rebuilt, never patched, so an incremental run and
   a full build of the same corpus build the same tree.

A failed summary drops that node (its children are promoted) and marks the tree ``partial``:
the next run rebuilds, and reuse makes that cost only the failed clusters.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field

from unified_kg_rag.config.raptor import RaptorConfig
from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    RAPTOR_BUILD_KEY,
    RAPTOR_NAMESPACE,
    SUMMARY_TREE_KEY,
)
from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.domain.tree.clustering import ClusterSettings, cluster_level, level_should_stop
from unified_kg_rag.domain.tree.extractive import input_key
from unified_kg_rag.domain.tree.lineage import leaf_lineage, stale_nodes
from unified_kg_rag.domain.tree.nodes import SummaryNode, SummaryTree, summary_node_id
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ingestion.tree_summaries import ClusterSummarizer
from unified_kg_rag.ingestion.units import load_units, processed_unit_paths
from unified_kg_rag.ports import Embedder, IndexStores, ProgressReporter, TokenCounter
from unified_kg_rag.util.hashing import sha256_json, sha256_text

__all__ = ["SummaryTreeBuilder", "SummaryTreeReport", "load_summary_tree"]

_VERSION = 1


class SummaryTreeReport(BaseModel):
    """What the summary-tree build did.

    Attributes:
        skipped_reason: why nothing was built ("" when it was).
        text_units: leaves the tree was built from.
        levels: summary levels built.
        nodes_per_level: summary nodes at each level (1 = summaries of text units).
        summaries_written: summaries written now (LLM calls, or extractive).
        summaries_reused: summaries taken unchanged from the stored tree (no call).
        summaries_failed: summaries whose call failed (the tree is ``partial``).
        extractive: summaries were written without an LLM.
        nodes_removed: stored summaries deleted (stale lineage, or not in the new tree).
        partial: some summaries failed; the next run retries them.
        error: why the build stopped (the model refused access); "" when it did not. The
            stored tree keeps its nodes of live lineage.
        seconds: wall time of the build, seconds.
    """

    skipped_reason: str = ""
    text_units: int = 0
    levels: int = 0
    nodes_per_level: dict[int, int] = Field(default_factory=dict)
    summaries_written: int = 0
    summaries_reused: int = 0
    summaries_failed: int = 0
    extractive: bool = False
    nodes_removed: int = 0
    partial: bool = False
    error: str = ""
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        """1 if the build stopped, 3 if a summary failed (retried next run), else 0."""
        if self.error:
            return 1
        return 3 if self.summaries_failed else 0


@dataclass
class _Node:
    """A node of the level being clustered: a text unit (level 0) or a summary."""

    id: str
    text: str
    vector: NDArray[np.float32]
    n_tokens: int
    lineage: tuple[str, ...]


async def load_summary_tree(stores: IndexStores) -> SummaryTree | None:
    """Return the index's stored summary tree, or None when none was built.

    Raises:
        StoreError: a store failed.
        StoreSchemaError: the stored tree is of an unknown format.
    """
    raw = await stores.records.get(RAPTOR_NAMESPACE, SUMMARY_TREE_KEY)
    return SummaryTree.decode(raw) if raw else None


class SummaryTreeBuilder:
    """Builds and stores the summary tree of one index (see the module docstring).

    Args:
        stores: the index's stores (fenced by the run's lease).
        config: ``graph.raptor``.
        summarizer: writes the cluster summaries (LLM or extractive).
        embedder: the index's embedding model (summary vectors, missing leaf vectors).
        counter: the token counter of budgets (cluster and summary tokens).
        progress: receives progress events.
    """

    def __init__(
        self,
        stores: IndexStores,
        config: RaptorConfig,
        *,
        summarizer: ClusterSummarizer,
        embedder: Embedder,
        counter: TokenCounter,
        progress: ProgressReporter | None = None,
    ) -> None:
        self._stores = stores
        self._config = config
        self._summarizer = summarizer
        self._embedder = embedder
        self._counter = counter
        self._progress = progress or NULL_PROGRESS
        self._node_vectors: dict[str, NDArray[np.float32]] = {}
        self._settings_digest = sha256_json({
            "v": _VERSION, "max_summary_tokens": config.max_summary_tokens,
            "mode": summarizer.mode,
        })  # fmt: skip
        self.fingerprint = sha256_json({
            "v": _VERSION, "config": config.model_dump(mode="json"), "mode": summarizer.mode,
            "embedding": [embedder.model_id, embedder.dimension],
        })  # fmt: skip

    async def run(self, *, force: bool = False) -> SummaryTreeReport:
        """Build the tree unless the stored one has the same leaves and settings.

        Raises:
            StoreError: a store failed (the stored tree keeps its nodes of live lineage).
            EmbeddingModelError: the embedding model failed.
            ModelError: the LLM refused access (401/403).
        """
        started = time.perf_counter()
        stores = self._stores
        leaf_ids = sorted(await processed_unit_paths(stores))
        digest = sha256_text("leaves", *leaf_ids)
        report = SummaryTreeReport(text_units=len(leaf_ids), extractive=self._summarizer.extractive)
        old = await load_summary_tree(stores)
        if (not force and old is not None and old.leaf_digest == digest
                and old.fingerprint == self.fingerprint and not old.partial):  # fmt: skip
            report.skipped_reason = "unchanged since the last build"
            report.levels = old.levels
            return report
        old = await self._remove_stale(old, set(leaf_ids), report)
        if len(leaf_ids) < self._config.min_leaves:
            report.skipped_reason = (
                f"{len(leaf_ids)} text unit(s): a summary tree needs at least "
                f"{self._config.min_leaves} (graph.raptor.min_leaves)"
            )
            nodes: list[SummaryNode] = []
        else:
            nodes = await self._build(leaf_ids, old, report)
        tree = SummaryTree(nodes=tuple(sorted(nodes, key=lambda n: (n.level, n.id))),
                           leaf_digest=digest, fingerprint=self.fingerprint,
                           partial=report.partial)  # fmt: skip
        await self._write(tree, report)
        report.levels = tree.levels
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    async def _remove_stale(
        self, old: SummaryTree | None, leaves: set[str], report: SummaryTreeReport
    ) -> SummaryTree | None:
        """Delete the stored nodes whose lineage lost a unit, and their ancestors, first."""
        if old is None:
            return None
        gone = {u for n in old.nodes for u in n.text_unit_ids if u not in leaves}
        stale = stale_nodes(old, gone) if gone else set()
        if not stale:
            return old
        kept = SummaryTree(nodes=tuple(n for n in old.nodes if n.id not in stale),
                           leaf_digest="", fingerprint=old.fingerprint, partial=True)  # fmt: skip
        await self._stores.records.put(RAPTOR_NAMESPACE, SUMMARY_TREE_KEY, kept.encode())
        report.nodes_removed += await self._stores.search.delete(
            Collection.SUMMARY_NODES, sorted(stale)
        )
        return kept

    async def _leaves(self, leaf_ids: list[str]) -> list[_Node]:
        stores = self._stores
        units = {u.id: u for u in await load_units(stores, {i: "" for i in leaf_ids})}
        found, matrix = await stores.search.vectors(Collection.TEXT_UNITS, leaf_ids)
        vectors = dict(zip(found, matrix, strict=True))
        missing = [i for i in leaf_ids if i in units and i not in vectors]
        if missing:
            embedded = await self._embedder.embed_documents([units[i].text for i in missing])
            vectors.update(zip(missing, embedded, strict=True))
        return [
            _Node(i, units[i].text, np.asarray(vectors[i], dtype=np.float32),
                  self._counter.count(units[i].text), (i,))
            for i in leaf_ids if i in units
        ]  # fmt: skip

    async def _build(
        self, leaf_ids: list[str], old: SummaryTree | None, report: SummaryTreeReport
    ) -> list[SummaryNode]:
        cfg = self._config
        reuse = {n.input_key: n for n in old.nodes} if old is not None else {}
        stored_ids = set(await self._stores.search.ids(Collection.SUMMARY_NODES))
        settings = ClusterSettings(
            target_children=cfg.target_children, max_cluster_tokens=cfg.max_cluster_tokens,
            reduction_dims=cfg.reduction_dims, seed=cfg.seed,
        )  # fmt: skip
        level_nodes = await self._leaves(leaf_ids)
        built: list[SummaryNode] = []
        for level in range(1, cfg.max_levels + 1):
            if level > 1 and len(level_nodes) <= cfg.min_nodes_to_cluster:
                break
            by_id = {n.id: n for n in level_nodes}
            clusters = await asyncio.to_thread(
                cluster_level, [n.id for n in level_nodes],
                np.stack([n.vector for n in level_nodes]), [n.n_tokens for n in level_nodes],
                settings,
            )  # fmt: skip
            groups = [c for c in clusters if len(c) > 1]
            if not groups or (level > 1 and level_should_stop(
                len(level_nodes), len(clusters), min_nodes_to_cluster=cfg.min_nodes_to_cluster,
                min_level_shrink=cfg.min_level_shrink,
            )):  # fmt: skip
                break
            self._progress.start(f"summary tree level {level}", len(groups))
            made = await self._level(level, groups, by_id, reuse, stored_ids, report)
            self._progress.finish(f"summary tree level {level}")
            if not made:
                # every summary failed: the next level would cluster the same nodes into the
                # same clusters and ask the model for them again (each failure counted again)
                break
            built.extend(node for node, _ in made)
            report.nodes_per_level[level] = len(made)
            summarised = {c for g in groups for c in g}
            promoted = [n for n in level_nodes if n.id not in summarised]
            failed = {c for g in groups for c in g} - {
                c for node, _ in made for c in node.child_ids
            }
            promoted += [by_id[c] for c in sorted(failed)]
            level_nodes = [*promoted, *(n for _, n in made)]
            if len(level_nodes) <= 1:
                break
        return built

    async def _level(
        self,
        level: int,
        groups: list[tuple[str, ...]],
        by_id: dict[str, _Node],
        reuse: dict[str, SummaryNode],
        stored_ids: set[str],
        report: SummaryTreeReport,
    ) -> list[tuple[SummaryNode, _Node]]:
        """Summarise the clusters ``groups`` of one level; return each new node twice.

        As stored (`SummaryNode`) and as a node of the next level (`_Node`, with its vector).
        """
        keys = {g: input_key([(c, by_id[c].text) for c in g], self._settings_digest)
                for g in groups}  # fmt: skip

        async def one(group: tuple[str, ...]) -> tuple[str, str, bool] | None:
            children = [by_id[c] for c in group]
            key = keys[group]
            hit = reuse.get(key)
            if hit is not None:
                report.summaries_reused += 1
                text: str | None = hit.text
            else:
                text = await self._summarizer.summarize(
                    [c.text for c in children], np.stack([c.vector for c in children])
                )
                if text is None:
                    report.summaries_failed += 1
                    report.partial = True
                else:
                    report.summaries_written += 1
            self._progress.advance(f"summary tree level {level}", 1)
            return None if not text else (key, text, hit is not None)

        fresh = [g for g in groups if keys[g] not in reuse]
        await self._summarizer.prime([by_id[c].text for g in fresh for c in g])
        results = await asyncio.gather(*(one(g) for g in groups))
        nodes: list[SummaryNode] = []
        lineage_of = {n.id: n.lineage for n in by_id.values()}
        for group, result in zip(groups, results, strict=True):
            if result is None:
                continue
            key, text, _ = result
            nodes.append(SummaryNode(
                id=summary_node_id(level, group), level=level, text=text,
                child_ids=tuple(sorted(group)), text_unit_ids=leaf_lineage(group, lineage_of),
                n_tokens=self._counter.count(text), input_key=key,
                extractive=self._summarizer.extractive,
            ))  # fmt: skip
        vectors = await self._vectors(nodes, stored_ids)
        self._node_vectors.update(vectors)
        return [
            (n, _Node(n.id, n.text, vectors[n.id], n.n_tokens, n.text_unit_ids)) for n in nodes
        ]

    async def _vectors(
        self, nodes: list[SummaryNode], stored_ids: set[str]
    ) -> dict[str, NDArray[np.float32]]:
        """Return each node's vector: the stored one when its text is unchanged, else new."""
        search = self._stores.search
        candidates = [n.id for n in nodes if n.id in stored_ids]
        stored = {r.id: r.text for r in await search.get(Collection.SUMMARY_NODES, candidates)}
        same = [n.id for n in nodes if stored.get(n.id) == n.text]
        found, matrix = await search.vectors(Collection.SUMMARY_NODES, same)
        out = {i: np.asarray(v, dtype=np.float32) for i, v in zip(found, matrix, strict=True)}
        todo = [n for n in nodes if n.id not in out]
        if todo:
            embedded = await self._embedder.embed_documents([n.text for n in todo])
            out.update((n.id, np.asarray(v, dtype=np.float32))
                       for n, v in zip(todo, embedded, strict=True))  # fmt: skip
        return out

    async def _write(self, tree: SummaryTree, report: SummaryTreeReport) -> None:
        """Upsert the nodes, write the tree record, then delete nodes not in the tree."""
        search = self._stores.search
        nodes = list(tree.nodes)
        if nodes:
            vectors = self._node_vectors
            records = [
                IndexRecord(
                    id=n.id,
                    text=n.text,
                    fields={"level": n.level, "n_leaves": n.n_leaves, "n_tokens": n.n_tokens},
                )
                for n in nodes
            ]
            matrix = np.stack([vectors[n.id] for n in nodes]).astype(np.float32)
            await search.upsert(Collection.SUMMARY_NODES, records, matrix)
        await self._stores.records.put(RAPTOR_NAMESPACE, SUMMARY_TREE_KEY, tree.encode())
        await self._stores.records.put(INDEX_NAMESPACE, RAPTOR_BUILD_KEY, sha256_text(
            tree.leaf_digest, tree.fingerprint, str(tree.partial), str(len(nodes))
        ))  # fmt: skip
        keep = {n.id for n in nodes}
        extra = [i for i in await search.ids(Collection.SUMMARY_NODES) if i not in keep]
        if extra:
            report.nodes_removed += await search.delete(Collection.SUMMARY_NODES, extra)
