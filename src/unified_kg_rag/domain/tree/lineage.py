"""Lineage of summary nodes: the text units under a node, and the nodes a removal makes stale.

A summary node's lineage is the sorted set of text units (leaves) under it, the union of its
children's lineages (a text unit is its own). When text units are removed, every summary
citing one is stale, and so is every node above it: a summary paraphrases its children, so it
goes even where other children remain (fail-closed, seed 000 §6.5 "Removal").

Not here: deleting the nodes (the stores), rebuilding the tree (the ingestion stage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from unified_kg_rag.domain.tree.nodes import SummaryTree

__all__ = ["leaf_lineage", "stale_nodes"]


def leaf_lineage(
    child_ids: Sequence[str], lineage_of: Mapping[str, Sequence[str]]
) -> tuple[str, ...]:
    """Return the sorted union of the children's lineages.

    Args:
        child_ids: a node's children (summary ids or text-unit ids).
        lineage_of: the lineage (text-unit ids) of each summary node known so far; a child
            not in it is a text unit, its own lineage.

    Returns:
        The distinct text-unit ids under the children, sorted.

    Source: seed 000 §6.5 ("lineage is a union").
    """
    units: set[str] = set()
    for child in child_ids:
        units.update(lineage_of.get(child, (child,)))
    return tuple(sorted(units))


def stale_nodes(tree: SummaryTree, removed_text_unit_ids: Iterable[str]) -> set[str]:
    """Return the ids of the nodes a removal of text units makes stale.

    A node is stale when its lineage or its children hold a removed text unit, or when one of
    its children is stale (found by walking ``child_ids`` upward, so a node is found even
    where its lineage misses the unit).

    Args:
        tree: the stored tree.
        removed_text_unit_ids: ids of the removed text units.

    Returns:
        The stale node ids (empty when nothing is removed or nothing cites a removed unit).

    Source: seed 000 §6.5 "Incremental runs": removal is fail-closed.
    """
    removed = set(removed_text_unit_ids)
    if not removed:
        return set()
    parents: dict[str, list[str]] = {}
    for node in tree.nodes:
        for child in node.child_ids:
            parents.setdefault(child, []).append(node.id)
    stale = {
        n.id
        for n in tree.nodes
        if not removed.isdisjoint(n.text_unit_ids) or not removed.isdisjoint(n.child_ids)
    }
    frontier = list(stale)
    while frontier:
        for parent in parents.get(frontier.pop(), ()):
            if parent not in stale:
                stale.add(parent)
                frontier.append(parent)
    return stale
