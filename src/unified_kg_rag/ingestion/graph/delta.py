"""Communities of a delta run: keep the previous partition, cluster only what it lacks.

Seed 000 §5.5. A delta run (a previous build recorded its partition, the run is neither
``--reset`` nor ``--force-rebuild``, and the community settings are unchanged) does not
cluster the whole graph again, which would move entities between communities and so re-ask
the report of nearly every community:

- every previous community keeps its id, level, parent and children, and its members minus
  the entities the graph no longer has; a community with no member left is dropped (its
  text units are all gone), and so are its sub-communities;
- the entities in no kept level-0 community (new ones, and those whose component was too
  small to cluster before) are clustered among themselves (`detect_communities` over them and
  the relationships between them), and those communities are appended with their
  content-derived ids;
- a report is asked again only for a community whose context changed: its context
  fingerprint (`context_fingerprints`: members' names, types, descriptions and lineage, the
  relationships inside it, its sub-communities' fingerprints) differs from the one recorded
  with the previous build, or it has no stored report. Every other report is kept as stored,
  its rank recomputed.

The partition and the fingerprints are recorded under `PARTITION_KEY` after the graph is
written; a run killed before that record reads the previous one again, whose communities
either still exist or are treated as dropped, so each entity stays in at most one community
per level.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from unified_kg_rag.config.graph import CommunitiesConfig
from unified_kg_rag.domain.graph.claims import Claim
from unified_kg_rag.domain.graph.communities import detect_communities
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE
from unified_kg_rag.domain.models import Community, Entity, Relationship
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.util.hashing import sha256_json

__all__ = [
    "PARTITION_KEY",
    "DeltaPartition",
    "PreviousPartition",
    "communities_fingerprint",
    "context_fingerprints",
    "delta_partition",
    "load_previous",
    "save_partition",
]

PARTITION_KEY = "graph_communities"
"""RecordStore ``index`` key: the last written partition's settings and context fingerprints."""


def communities_fingerprint(config: CommunitiesConfig, shaping: str = "") -> str:
    """Return the digest of the community settings (a change re-clusters from scratch).

    ``shaping`` (`inputs.shaping_key`: the grounding, threshold and extraction-schema
    settings; "" at their defaults, so older partitions keep their digest) enters too: a
    graph re-shaped by other settings is clustered afresh, so changing them back restores
    the earlier communities.
    """
    dump = config.model_dump(mode="json")
    return sha256_json(dump if not shaping else [dump, shaping])


@dataclass
class PreviousPartition:
    """The communities of the last written build and their report-context fingerprints.

    Attributes:
        communities: the stored communities the last build wrote.
        contexts: community id -> fingerprint of the context its stored report was written
            from (only communities whose report was written).
    """

    communities: list[Community]
    contexts: dict[str, str]


@dataclass
class DeltaPartition:
    """A delta run's communities: kept ones (members pruned) and appended ones.

    Attributes:
        communities: every community of the build, sorted by level then id.
        kept: ids of previous communities kept.
        dropped: ids of previous communities dropped (no member left).
        appended: ids of the communities clustered from the delta's entities.
        pruned: ids of kept communities that lost members.
    """

    communities: list[Community]
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    appended: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)


async def load_previous(
    stores: IndexStores, config: CommunitiesConfig, shaping: str = ""
) -> PreviousPartition | None:
    """Return the partition the last build recorded, or None when a delta run cannot use it.

    None when no partition is recorded (first build, or an index built before the record
    existed) or it was made with other community settings or other ``shaping``
    (`communities_fingerprint`).

    Raises:
        StoreError: a store failed.
    """
    raw = await stores.records.get(INDEX_NAMESPACE, PARTITION_KEY)
    if not raw:
        return None
    value = json.loads(raw)
    if value.get("config") != communities_fingerprint(config, shaping):
        return None
    ids = set(value.get("communities", []))
    stored = await stores.graph.get_communities()
    return PreviousPartition(
        [c for c in stored if c.id in ids], dict(value.get("contexts", {}))
    )


async def save_partition(
    stores: IndexStores,
    config: CommunitiesConfig,
    communities: Sequence[Community],
    contexts: Mapping[str, str],
    shaping: str = "",
) -> None:
    """Record the written partition: its community ids and their context fingerprints.

    Args:
        stores: the index's stores.
        config: ``graph.communities``.
        communities: the communities written.
        contexts: the fingerprints of the communities whose report was written (one whose
            report failed is left out, so the next run asks for it again).
        shaping: the graph's shaping key (`communities_fingerprint`).

    Raises:
        StoreError: a store failed.
    """
    await stores.records.put(
        INDEX_NAMESPACE,
        PARTITION_KEY,
        json.dumps({"config": communities_fingerprint(config, shaping),
                    "communities": sorted(c.id for c in communities),
                    "contexts": dict(contexts)}, sort_keys=True),
    )


def _keep(previous: Sequence[Community], entity_ids: set[str]) -> dict[str, Community]:
    """Prune members to ``entity_ids``; drop empty communities and orphaned subtrees."""
    pruned = {
        c.id: c.model_copy(update={"member_ids": tuple(m for m in c.member_ids if m in entity_ids)})
        for c in previous
    }
    kept = {cid: c for cid, c in pruned.items() if c.member_ids}
    for community in sorted(kept.values(), key=lambda c: c.level):
        if community.parent_id is not None and community.parent_id not in kept:
            del kept[community.id]
    return {
        cid: c.model_copy(update={"children_ids": tuple(x for x in c.children_ids if x in kept)})
        for cid, c in kept.items()
    }


def delta_partition(
    previous: Sequence[Community],
    entity_ids: Sequence[str],
    relationships: Sequence[Relationship],
    config: CommunitiesConfig,
) -> DeltaPartition:
    """Keep the previous communities (members pruned) and cluster the unclustered entities.

    Args:
        previous: the last build's communities.
        entity_ids: the entities of this build.
        relationships: the relationships of this build.
        config: ``graph.communities``.

    Returns:
        The partition (see `DeltaPartition`). Each entity is in at most one community per
        level; appended communities whose id a kept one has are left out.

    Raises:
        UkrError: the Leiden implementation failed.
    """
    known = set(entity_ids)
    kept = _keep(previous, known)
    clustered = {m for c in kept.values() if c.level == 0 for m in c.member_ids}
    loose = sorted(known - clustered)
    loose_set = set(loose)
    appended = [
        c
        for c in detect_communities(
            loose,
            [(r.source_id, r.target_id, r.weight) for r in relationships
             if r.source_id in loose_set and r.target_id in loose_set],
            max_cluster_size=config.max_cluster_size,
            min_community_size=config.min_community_size,
            seed=config.seed,
            max_levels=config.max_levels,
        )
        if c.id not in kept
    ]
    before = {c.id: c for c in previous}
    communities = sorted([*kept.values(), *appended], key=lambda c: (c.level, c.id))
    return DeltaPartition(
        communities=communities,
        kept=sorted(kept),
        dropped=sorted(set(before) - set(kept)),
        appended=sorted(c.id for c in appended),
        pruned=sorted(cid for cid, c in kept.items() if c.member_ids != before[cid].member_ids),
    )


def context_fingerprints(
    communities: Sequence[Community],
    entities: Mapping[str, Entity],
    relationships: Sequence[Relationship],
    claims: Mapping[str, Sequence[Claim]] | None = None,
) -> dict[str, str]:
    """Return each community's report-context fingerprint (what its report is written from).

    The digest of its level, its members' ids, names, types, descriptions and text units, the
    relationships between its members (ids, types, descriptions, weights, text units) and its
    sub-communities' fingerprints (a parent's report rolls its children's up). Ranks are left
    out: a degree that changed elsewhere does not make a report stale. With ``claims``
    (subject entity id → claims), the members' claim ids enter too, only when some member
    has one (claims off, or none about the community: the fingerprint is unchanged).
    """
    by_member: dict[str, list[Relationship]] = {}
    for rel in relationships:
        by_member.setdefault(rel.source_id, []).append(rel)
        by_member.setdefault(rel.target_id, []).append(rel)
    out: dict[str, str] = {}
    for community in sorted(communities, key=lambda c: -c.level):
        members = set(community.member_ids)
        inside = sorted(
            {r.id: r for m in community.member_ids for r in by_member.get(m, ())
             if r.source_id in members and r.target_id in members}.values(),
            key=lambda r: r.id,
        )
        value: dict[str, object] = {
                "level": community.level,
                "members": [
                    [m, e.name, e.type, e.description, sorted(e.text_unit_ids)]
                    if (e := entities.get(m)) is not None else [m]
                    for m in sorted(members)
                ],
                "relationships": [
                    [r.id, r.source_id, r.target_id, r.type, r.description, r.weight,
                     sorted(r.text_unit_ids)]
                    for r in inside
                ],
                "children": [out.get(c, c) for c in community.children_ids],
        }
        stated = sorted(c.id for m in members for c in (claims or {}).get(m, ()))
        if stated:
            value["claims"] = stated
        out[community.id] = sha256_json(value)
    return out
