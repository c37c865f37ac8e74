"""Strategy ``tree``: RAPTOR's collapsed tree, searched hybrid, with a graph signal.

RAPTOR (Sarthi et al., ICLR 2024, arXiv 2401.18059) answers from every level of a tree of
summaries at once (the "collapsed tree"). Here (seed 000 §6.5, "Retrieval: `tree`"), with no
query-side model call, four ranked lists are fused by weighted RRF (``query.tree.*_weight``):

- ``tree_text_units``: `naive`'s hybrid search of the text units (``text_top_k`` of them);
- ``tree_summaries``: the same search over the summary nodes of every level;
- where the index holds an entity graph (``graphrag``, ``lightrag`` or ``hipporag``) and
  ``graph_signal`` is ``auto``: the ``graph_seed_entities`` entities a search of the entities
  (the query's mode, hybrid by default) finds for the raw question (LightRAG's raw-query
  fallback) are seeds, the one at rank ``r`` weighing ``1 / (query.rrf_k + r)``;
  ``tree_graph_summaries`` ranks the summaries
  whose lineage holds a text unit of a seed by the weight of the seeds they cover over
  ``sqrt(n_leaves)`` (a root does not win by size), ``tree_graph_text_units`` ranks those
  text units by the weight of the seeds citing them. Text-unit ids are the join key: merges
  and renames in the graph never touch the tree.

The chain then reranks (when configured), applies MMR and the quotas (``text_top_k``
passages; summaries are cut by `tree_select.finish_selection`), and the strategy's last step
keeps at most ``max_nodes_per_level`` summaries of one level, ``summary_top_k`` in all, and
expands each to ``expand_children`` passages of its own lineage, seated just after its rank
among the passages (metadata ``expanded_from``).

**Filters** name text-unit fields, which summaries do not hold. A summary passes only when
every text unit of its lineage passes (fail-closed: a summary may restate an excluded
document): the lineages of the candidate summaries are read once and checked
(`filtering.passing_units`); ``metadata["summaries_filtered_out"]`` counts the summaries
dropped. The graph bucket's passages are the best-weighted that pass; expanded passages are
searched under the filters.

**No tree stored** (the index records ``raptor`` but holds no tree record): the answer comes
from the text units, with ``metadata["summary_tree"] = "missing"`` and a warning; a stored
tree without a summary (fewer text units than ``graph.raptor.min_leaves``, or every summary
failed) reads ``"empty"``.
``metadata["graph_signal"]`` is ``used``, ``unavailable`` (no entity graph) or ``off``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    RAPTOR_BUILD_KEY,
    RAPTOR_NAMESPACE,
    SUMMARY_TREE_KEY,
)
from unified_kg_rag.domain.index.methodologies import builds_artifact
from unified_kg_rag.domain.models import Collection, MetadataValue, SearchHit
from unified_kg_rag.domain.tree.nodes import SummaryNode, SummaryTree
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    BuildCache,
    Candidate,
    QueryContext,
    StrategyResult,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.filtering import passing_units
from unified_kg_rag.retrieval.strategies.lightrag import fetch_units, question_search
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate

__all__ = [
    "LoadedTree",
    "TreeStrategy",
    "load_summary_tree",
    "summary_candidate",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedTree:
    """A summary tree ready for queries.

    Attributes:
        tree: the stored tree.
        nodes: node id -> node.
        unit_nodes: text-unit id -> the ids of the nodes whose lineage holds it.
    """

    tree: SummaryTree
    nodes: dict[str, SummaryNode]
    unit_nodes: dict[str, tuple[str, ...]]


def _prepare(raw: str) -> LoadedTree:
    tree = SummaryTree.decode(raw)
    unit_nodes: dict[str, list[str]] = defaultdict(list)
    for node in tree.nodes:
        for unit in node.text_unit_ids:
            unit_nodes[unit].append(node.id)
    return LoadedTree(tree, tree.by_id(), {u: tuple(n) for u, n in unit_nodes.items()})


async def load_summary_tree(
    stores: IndexStores, cache: BuildCache[LoadedTree]
) -> LoadedTree | None:
    """Return the index's summary tree, or None when it holds none.

    Kept in ``cache`` by index and build digest (``INDEX_NAMESPACE``/``RAPTOR_BUILD_KEY``);
    a tree stored without a digest is read on every call.

    Raises:
        StoreError: a store failed.
        StoreSchemaError: the stored tree has an unknown format version or is malformed.
    """
    digest = await stores.records.get(INDEX_NAMESPACE, RAPTOR_BUILD_KEY)
    if digest is not None:
        cached = cache.get(stores.name, digest)
        if cached is not None:
            return cached
    raw = await stores.records.get(RAPTOR_NAMESPACE, SUMMARY_TREE_KEY)
    if raw is None:
        return None
    loaded = await asyncio.to_thread(_prepare, raw)
    if digest is not None:
        cache.put(stores.name, digest, loaded)
    return loaded


def summary_candidate(node: SummaryNode, score: float, found_by: str) -> Candidate:
    """Return the context candidate of a summary node.

    Its ``text_unit_ids`` are the node's lineage; its metadata the ``level``, ``n_leaves``,
    the number of ``children`` and ``found_by`` (``search`` or ``graph``). Its
    ``document_ids`` are filled for the summaries kept (`tree_select.finish_selection`).
    """
    meta: dict[str, MetadataValue] = {
        "level": node.level, "n_leaves": node.n_leaves, "children": len(node.child_ids),
        "found_by": found_by,
    }  # fmt: skip
    return Candidate(kind="summary", id=node.id, text=node.text, score=score,
                     text_unit_ids=node.text_unit_ids, metadata=meta)  # fmt: skip


@register_strategy(
    "tree",
    methodology="raptor",
    description="RAPTOR's collapsed tree: hybrid search over passages and every level of the "
    "summary tree (plus an entity-graph signal where the index has one), each summary "
    "expanded to its passages.",
)
class TreeStrategy:
    """Collapsed-tree retrieval over the `raptor` summary tree (see the module docstring)."""

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return the fusion buckets, the tree's quotas and its last selection step.

        Raises:
            StoreError: a store failed.
            StoreSchemaError: the stored tree cannot be read.
            EmbeddingModelError: the question could not be embedded.
        """
        from unified_kg_rag.retrieval.strategies.tree_select import finish_selection

        cfg = ctx.config.tree
        loaded = await load_summary_tree(ctx.stores, ctx.summary_trees)
        text_k = cfg.text_top_k
        none: list[Candidate] = []
        text = ctx.section("tree_text_units", lambda: _text_units(ctx, text_k), none)
        if loaded is None:
            logger.warning("index %r records the raptor methodology but holds no summary tree; "
                           "`tree` answers from the text units", ctx.stores.name)  # fmt: skip
            ctx.metadata["summary_tree"] = "missing"
            return StrategyResult(buckets=[Bucket("tree_text_units", await text, cfg.text_weight)],
                                  quotas={"text_unit": text_k})  # fmt: skip
        # an empty tree: too few text units (`graph.raptor.min_leaves`), or every summary failed
        ctx.metadata["summary_tree"] = "present" if loaded.tree.nodes else "empty"
        ctx.metadata["summary_levels"] = loaded.tree.levels
        signal = _graph_signal(ctx)
        ctx.metadata["graph_signal"] = signal
        summaries = ctx.section("tree_summaries", lambda: _summaries(ctx, loaded), none)
        graph = (ctx.section("tree_graph", lambda: _graph(ctx, loaded), (none, none))
                 if signal == "used" else _no_graph())  # fmt: skip
        units, found, (graph_nodes, graph_units) = await asyncio.gather(text, summaries, graph)
        found, graph_nodes = await _filter_summaries(ctx, loaded, found, graph_nodes)
        buckets = [
            Bucket("tree_text_units", units, cfg.text_weight),
            Bucket("tree_summaries", found, cfg.summary_weight),
        ]
        if signal == "used":
            buckets += [Bucket("tree_graph_summaries", graph_nodes, cfg.graph_weight),
                        Bucket("tree_graph_text_units", graph_units, cfg.graph_weight)]
        n_summaries = len({c.id for c in found} | {c.id for c in graph_nodes})
        return StrategyResult(
            buckets=buckets,
            quotas={"text_unit": text_k, "summary": n_summaries},  # cut in finish_selection
            finish=lambda groups: finish_selection(ctx, groups),
        )


def _graph_signal(ctx: QueryContext) -> str:
    if ctx.config.tree.graph_signal == "off":
        return "off"
    return "used" if builds_artifact(ctx.held, "entity_graph") else "unavailable"


async def _no_graph() -> tuple[list[Candidate], list[Candidate]]:
    return [], []


async def _text_units(ctx: QueryContext, k: int) -> list[Candidate]:
    hits = await question_search(ctx, Collection.TEXT_UNITS, k, filters=ctx.filters)
    return [text_unit_candidate(h) for h in hits]


async def _summaries(ctx: QueryContext, loaded: LoadedTree) -> list[Candidate]:
    """The summary index searched for the question (no filter: summaries hold no fields)."""
    cfg = ctx.config
    if cfg.tree.summary_top_k == 0:
        return []
    hits = await question_search(ctx, Collection.SUMMARY_NODES,
                                 max(cfg.candidate_k, cfg.tree.summary_top_k))  # fmt: skip
    return [summary_candidate(loaded.nodes[h.id], h.score, "search")
            for h in hits if h.id in loaded.nodes]  # fmt: skip


async def _graph(
    ctx: QueryContext, loaded: LoadedTree
) -> tuple[list[Candidate], list[Candidate]]:
    """The graph signal's two lists: summaries and passages citing the seed entities' units."""
    cfg = ctx.config
    hits = await question_search(ctx, Collection.ENTITIES, cfg.tree.graph_seed_entities)
    weight = {h.id: 1.0 / (cfg.rrf_k + rank) for rank, h in enumerate(hits, start=1)}
    unit_weight: dict[str, float] = defaultdict(float)
    node_seeds: dict[str, set[str]] = defaultdict(set)
    for entity in await ctx.stores.graph.get_entities(list(weight)):
        for unit in dict.fromkeys(entity.text_unit_ids):
            unit_weight[unit] += weight[entity.id]
            for node_id in loaded.unit_nodes.get(unit, ()):
                node_seeds[node_id].add(entity.id)
    nodes: list[Candidate] = []
    if cfg.tree.summary_top_k > 0:
        for node_id, seeds in node_seeds.items():
            node = loaded.nodes[node_id]
            score = sum(weight[e] for e in seeds) / math.sqrt(max(node.n_leaves, 1))
            nodes.append(summary_candidate(node, score, "graph"))
        nodes.sort(key=lambda c: (-c.score, c.id))
        nodes = nodes[: max(cfg.candidate_k, cfg.tree.summary_top_k)]
    ranked = sorted(unit_weight, key=lambda u: (-unit_weight[u], u))
    units = await _passing_ranked_units(ctx, ranked, unit_weight, cfg.tree.text_top_k)
    return nodes, units


async def _passing_ranked_units(
    ctx: QueryContext, ranked: Sequence[str], weight: dict[str, float], k: int
) -> list[Candidate]:
    """The best ``k`` of ``ranked`` that pass the filters (checked before the cut)."""
    records = await fetch_units(ctx, ranked)
    allowed = await passing_units(ctx, [u for u in ranked if u in records])
    out: list[Candidate] = []
    for unit in ranked:
        if unit in allowed and unit in records:
            rec = records[unit]
            out.append(text_unit_candidate(
                SearchHit(id=rec.id, score=weight[unit], text=rec.text, fields=rec.fields)))
            if len(out) == k:
                break
    return out


async def _filter_summaries(
    ctx: QueryContext, loaded: LoadedTree, *lists: list[Candidate]
) -> list[list[Candidate]]:
    """Drop, under filters, the summaries with any lineage unit that does not pass them."""
    if not ctx.filters:
        return list(lists)
    ids = {c.id for cands in lists for c in cands}
    lineage = [u for node_id in sorted(ids) for u in loaded.nodes[node_id].text_unit_ids]
    allowed = await passing_units(ctx, lineage)
    keep = {i for i in ids if all(u in allowed for u in loaded.nodes[i].text_unit_ids)}
    ctx.metadata["summaries_filtered_out"] = len(ids - keep)
    return [[c for c in cands if c.id in keep] for cands in lists]
