"""Which communities a set of selected entities belongs to, ranked as local search reads them.

GraphRAG's local search gives the answer model the reports of the communities its selected
entities belong to, most matched first. This module ranks those communities; fetching and
packing the reports is the strategy's job (``retrieval/strategies/local_reports.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from unified_kg_rag.domain.models import Community

__all__ = ["member_communities"]


def member_communities(
    communities: Sequence[Community],
    selected: Sequence[str],
    report_rank: Mapping[str, float],
) -> list[str]:
    """Return the ids of the reported communities the selected entities belong to, best first.

    Each selected entity belongs to a chain of communities, from its deepest (the highest
    level holding it; level 0 is the top, DESIGN.md §4) up to level 0. Only communities with a
    report count. Ordered by:

    1. tier: 0 for the deepest reported community of some selected entity, 1 for the one
       above it, and so on (a community takes the lowest tier any selected entity gives it),
       so every entity's own community comes before the parents;
    2. how many selected entities the community holds, most first;
    3. report rank, highest first; then id (a stable order).

    Args:
        communities: every community of the index (any order).
        selected: entity ids (duplicates are ignored).
        report_rank: community id -> its report's rank, for the communities with a report.

    Returns:
        Community ids, each once; empty when no selected entity is in a reported community.

    Source: GraphRAG's local search community context (rank by matched selected entities,
    then report rank), seed 000 §6.1; deepest first, then parents (issue 15, item 8).
    """
    wanted = set(selected)
    chains: dict[str, list[Community]] = {}
    for community in communities:
        if community.id not in report_rank:
            continue
        for member in wanted.intersection(community.member_ids):
            chains.setdefault(member, []).append(community)
    tier: dict[str, int] = {}
    matched: dict[str, int] = {}
    for chain in chains.values():
        chain.sort(key=lambda c: (-c.level, c.id))  # deepest first
        for depth, community in enumerate(chain):
            tier[community.id] = min(tier.get(community.id, depth), depth)
    for community in communities:
        if community.id in tier:
            matched[community.id] = len(wanted.intersection(community.member_ids))
    return sorted(tier, key=lambda c: (tier[c], -matched[c], -report_rank[c], c))
