"""Graph resolution: merge the per-unit extraction records into one graph (DESIGN.md §7).

Resolution is a pure function of the set of ``(text_unit_id, ExtractionRecord)`` pairs: the
same pairs in any order give the same graph, so a full build, a resumed build and a rebuild
after removing a document agree. It groups names by `entity_key`, then by `compact_name_key`
(legal-form designators and spaces next to Han/Hangul/Kana removed), then optionally by a
guarded fuzzy match (`domain.graph.name_matching`); merges their statements; maps relationship
endpoints through the same grouping; and computes rank (degree).

Statements are read into flat rows of strings and numbers, sorted and aggregated group by
group, so a corpus of 20k statements builds few long-lived containers (the garbage
collector's full passes were half the run time with one object per entity).

Descriptions are concatenated here; the LLM summary of long ones happens outside the domain
(`domain.graph.summaries`), from `ResolvedGraph.description_fragments`.

Not here: the LLM calls, storage, communities. Source: seed 000 §3 ("Display names and
identity keys") and §4.2 ("Graph identity and merging").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.graph.name_matching import compact_name_key, group_keys, majority
from unified_kg_rag.domain.graph.summaries import render_summary_messages, summary_batches
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.domain.models import Entity, Relationship
from unified_kg_rag.util.hashing import sha256_text

__all__ = [
    "MERGE_RULES",
    "ResolvedGraph",
    "apply_summaries",
    "compact_name_key",
    "render_summary_messages",
    "resolve_graph",
    "summary_batches",
]

logger = logging.getLogger(__name__)

MERGE_RULES = ("entity_key", "compact_name_key", "fuzzy", "stub_entities", "self_loops_dropped")
"""The keys of `ResolvedGraph.merges`, in report order."""


@dataclass(frozen=True)
class ResolvedGraph:
    r"""The graph the extraction records state, merged.

    Attributes:
        entities: sorted by id; ``rank`` is the degree (distinct neighbours, undirected).
        relationships: directed, sorted by id; ``weight`` is the sum of per-unit strengths.
        merges: counts per rule (`MERGE_RULES`): ``entity_key`` statements folded into a key
            already stated, ``compact_name_key`` key groups joined by that rule, ``fuzzy``
            groups joined by the fuzzy matcher, ``stub_entities`` entities created for
            endpoints no unit listed, ``self_loops_dropped`` relationship statements whose two
            endpoints fell into one entity.
        description_fragments: entity or relationship id → its distinct description
            fragments, in text-unit order (the parts ``description`` joins with ``"\n"``);
            items without any description are absent.
        key_to_entity_id: every `entity_key` seen (listed names and endpoints) → the id of the
            entity it resolved to.
    """

    entities: tuple[Entity, ...]
    relationships: tuple[Relationship, ...]
    merges: dict[str, int]
    description_fragments: dict[str, tuple[str, ...]] = field(default_factory=dict)
    key_to_entity_id: dict[str, str] = field(default_factory=dict)


# Rows are plain tuples, not NamedTuples: the garbage collector stops tracking a plain tuple of
# strings and numbers, so tens of thousands of rows cost it nothing on its later passes.
_Stated = tuple[str, str, str, str, float | None, str]
"""One entity statement: (key, unit, name, type, confidence, description)."""
_Related = tuple[str, str, str, str, str, float, str]
"""One relationship statement whose endpoint names are both non-blank:
(source key, target key, type key, unit, type, strength, description)."""
_Mention = tuple[str, str, str]
"""One relationship endpoint: (key, name as used, unit)."""


@dataclass
class _Rows:
    """The statements of all records, in order: text unit id, fingerprint, reply order."""

    stated: list[_Stated] = field(default_factory=list)
    related: list[_Related] = field(default_factory=list)
    mentions: list[_Mention] = field(default_factory=list)


def _clean(text: str) -> str:
    return " ".join(text.split())


class _Keys(dict[str, tuple[str, str]]):
    """A per-call memo: name as written → (name cleaned, its `entity_key`)."""

    def __missing__(self, raw: str) -> tuple[str, str]:
        name = _clean(raw)
        found = self[raw] = (name, entity_key(name) if name else "")
        return found


def _read_rows(records: Iterable[tuple[str, ExtractionRecord]], keys: _Keys) -> _Rows:
    """Read the records, sorted by (text unit id, fingerprint), into flat rows.

    A pair repeated with the same text unit id and fingerprint is read once.
    """
    unique = {(unit, rec.fingerprint): rec for unit, rec in records}
    rows = _Rows()
    for unit, fingerprint in sorted(unique):
        record = unique[unit, fingerprint]
        for ent in record.entities:
            name, key = keys[ent.name]
            if name:
                desc = ent.description.strip()
                kind = ent.type.strip()
                rows.stated.append((key, unit, name, kind, ent.confidence, desc))
        for rel in record.relationships:
            (source, source_key), (target, target_key) = keys[rel.source], keys[rel.target]
            if not source or not target:
                continue
            kind, type_key = keys[rel.type]
            desc = rel.description.strip()
            rows.related.append(
                (source_key, target_key, type_key, unit, kind, rel.strength, desc)
            )
            rows.mentions.append((source_key, source, unit))
            rows.mentions.append((target_key, target, unit))
    return rows


def _group_keys(
    rows: _Rows, fuzzy_threshold: float | None, merges: dict[str, int]
) -> dict[str, str]:
    """Return entity key → group root (`name_matching.group_keys`), counting the merges."""
    all_keys = {r[0] for r in rows.stated} | {m[0] for m in rows.mentions}
    types: dict[str, dict[str, int]] = {}
    if fuzzy_threshold is not None:
        for key, _, _, kind, _, _ in rows.stated:
            if kind:
                votes = types.setdefault(key, {})
                votes[kind] = votes.get(kind, 0) + 1
    grouping = group_keys(all_keys, types=types, fuzzy_threshold=fuzzy_threshold)
    merges["compact_name_key"] = grouping.compact_merges
    merges["fuzzy"] = grouping.fuzzy_merges
    return grouping.root_of


def _join_synonyms(root_of: dict[str, str], synonyms: Mapping[str, str]) -> int:
    """Join each alias's group into its canonical name's group, in place; return the joins.

    Order-free: groups are joined through a union-find whose root is the smallest group
    root, so the same statements give the same groups whatever the order.
    """
    parent: dict[str, str] = {}

    def find(root: str) -> str:
        while parent.get(root, root) != root:
            root = parent[root]
        return root

    joins = 0
    for alias, canonical in sorted(synonyms.items()):
        if alias not in root_of or canonical not in root_of:
            continue
        a, b = find(root_of[alias]), find(root_of[canonical])
        if a != b:
            parent[max(a, b)] = min(a, b)
            joins += 1
    if joins:
        for key, root in root_of.items():
            root_of[key] = find(root)
    return joins


def _entity_id(key: str) -> str:
    """`identity.entity_id` from the name's key, already computed (a test checks they agree)."""
    return sha256_text("entity:" + key)


def _relationship_id(source_key: str, target_key: str, type_key: str) -> str:
    """`identity.relationship_id` from the keys, already computed (a test checks they agree)."""
    return sha256_text("relationship", source_key, target_key, type_key)


def _distinct(texts: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for t in texts if t))


def _lineage(rows: _Rows, root_of: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """Group root → the sorted text units that state it or one of its relationships."""
    pairs = sorted(
        {(root_of[r[0]], r[1]) for r in rows.stated}
        | {(root_of[key], unit) for key, _, unit in rows.mentions}
    )
    return {
        root: tuple(unit for _, unit in group) for root, group in groupby(pairs, itemgetter(0))
    }


def _degrees(rows: _Rows, root_of: dict[str, str]) -> dict[str, int]:
    """Group root → distinct neighbours over the relationships (undirected, loops excluded)."""
    pairs = {(root_of[r[0]], root_of[r[1]]) for r in rows.related}
    undirected = {(a, b) if a < b else (b, a) for a, b in pairs if a != b}
    degree: dict[str, int] = {}
    for a, b in undirected:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    return degree


class _Named(NamedTuple):
    name: str
    key: str
    id: str


def _display_names(
    rows: _Rows, root_of: dict[str, str], keys: _Keys, preferred: frozenset[str] = frozenset()
) -> dict[str, _Named]:
    """Group root → display name (cited by the most text units, ties: smallest), key and id.

    A group no unit lists (a stub) is named from the endpoint names its relationships use.
    Names whose key is in ``preferred`` (canonical names of synonyms) win over the others.
    """
    cited = {(root_of[key], name, unit) for key, unit, name, _, _, _ in rows.stated}
    stated = {root for root, _, _ in cited}
    for key, name, unit in rows.mentions:
        if (root := root_of[key]) not in stated:
            cited.add((root, name, unit))
    named: dict[str, _Named] = {}
    for root, group in groupby(sorted(cited), itemgetter(0)):
        votes: dict[str, int] = {}
        for _, name, _ in group:
            votes[name] = votes.get(name, 0) + 1
        canonical = {n: v for n, v in votes.items() if keys[n][1] in preferred}
        name = majority(canonical or votes)
        key = keys[name][1]
        named[root] = _Named(name, key, _entity_id(key))
    return named


def resolve_graph(
    records: Sequence[tuple[str, ExtractionRecord]],
    *,
    fuzzy_threshold: float | None = None,
    synonyms: Mapping[str, str] | None = None,
) -> ResolvedGraph:
    r"""Merge the extraction records of every text unit into one graph.

    Entities: statements are grouped by `entity_key`, groups with one `compact_name_key` are
    joined, and with ``fuzzy_threshold`` set, groups whose compact keys score at least the
    threshold on rapidfuzz ``token_sort_ratio`` are joined unless their discriminator tokens
    (a digit, a single letter, a Roman numeral I-XX) or the final Han/Hangul/Kana characters
    differ (`name_matching.fuzzy_links`), or the join would put two different types in one
    group. A group is named by the name cited by the most text units (ties: the smallest
    string), typed by its most frequent non-empty type (ties: the smallest), and keeps the
    highest confidence. Its description joins its distinct descriptions (text unit id order,
    then reply order) with ``"\n"``. It cites the units that state it and the units of every
    relationship it is an endpoint of; an endpoint no unit lists becomes a stub entity (type
    and description empty).

    Relationships: endpoints map through the entity grouping; statements with the same
    (source, target, `entity_key` of type) merge; ``weight`` sums one strength per text unit
    (the unit's last statement counts); a statement whose endpoints fall into one entity is
    dropped (a self-loop). Edges are directed. Entity ``rank`` = distinct neighbours.

    Args:
        records: ``(text_unit_id, record)`` pairs, in any order; a pair repeated with the same
            text unit id and fingerprint is read once.
        fuzzy_threshold: None (off), or a 0-100 similarity threshold.
        synonyms: alias `entity_key` → canonical `entity_key` (an extraction schema's SKOS
            ``altLabel`` → ``prefLabel``): the group of a name stated as an alias joins the
            group of its canonical name when that name is stated too, and the canonical name
            names the group (counted as merge rule ``synonym``, present only when synonyms
            are given). Default: none.

    Returns:
        The `ResolvedGraph`, entities and relationships sorted by id.

    Raises:
        ValueError: ``fuzzy_threshold`` is outside 0-100.
        ConfigurationError: fuzzy matching is on and rapidfuzz is not installed.

    Source: seed 000 §3 and §4.2; issue #4 ("Resolution").
    """
    if fuzzy_threshold is not None and not 0 <= fuzzy_threshold <= 100:
        raise ValueError(f"fuzzy_threshold must be within 0-100, got {fuzzy_threshold}")
    merges = dict.fromkeys(MERGE_RULES, 0)
    keys = _Keys()
    rows = _read_rows(records, keys)
    stated_keys = {r[0] for r in rows.stated}
    merges["entity_key"] = len(rows.stated) - len(stated_keys)
    root_of = _group_keys(rows, fuzzy_threshold, merges)
    if synonyms:
        merges["synonym"] = _join_synonyms(root_of, synonyms)
    named = _display_names(rows, root_of, keys, frozenset((synonyms or {}).values()))
    fragments: dict[str, tuple[str, ...]] = {}
    entities = _build_entities(rows, root_of, named, fragments)
    relationships = _build_relationships(rows, root_of, named, fragments, merges)
    merges["stub_entities"] = len(named) - len({root_of[key] for key in stated_keys})
    logger.debug(
        "resolved %d statements into %d entities, %d relationships; merges %s",
        len(rows.stated) + len(rows.related), len(entities), len(relationships), merges,
    )  # fmt: skip
    return ResolvedGraph(
        entities=entities,
        relationships=relationships,
        merges=merges,
        description_fragments=dict(sorted(fragments.items())),
        key_to_entity_id={key: named[root].id for key, root in root_of.items()},
    )


def _build_entities(
    rows: _Rows,
    root_of: dict[str, str],
    named: dict[str, _Named],
    fragments: dict[str, tuple[str, ...]],
) -> tuple[Entity, ...]:
    """One entity per group, sorted by id; records its description fragments."""
    lineage = _lineage(rows, root_of)
    degree = _degrees(rows, root_of)
    def group_of(row: _Stated) -> str:
        return root_of[row[0]]

    # A stable sort keeps each group's statements in text order; stubs have none.
    stated = groupby(sorted(rows.stated, key=group_of), key=group_of)
    current = next(stated, None)
    entities = []
    for root, display in sorted(named.items()):
        statements: list[_Stated] = []
        if current is not None and current[0] == root:
            statements = list(current[1])
            current = next(stated, None)
        types: dict[str, int] = {}
        confidence: float | None = None
        for _, _, _, kind, value, _ in statements:
            if kind:
                types[kind] = types.get(kind, 0) + 1
            if value is not None and (confidence is None or value > confidence):
                confidence = value
        if parts := _distinct(r[5] for r in statements):
            fragments[display.id] = parts
        entities.append(
            Entity(
                id=display.id,
                name=display.name,
                type=majority(types),
                description="\n".join(parts),
                text_unit_ids=lineage[root],
                rank=degree.get(root, 0),
                confidence=confidence,
            )
        )
    entities.sort(key=lambda e: e.id)
    return tuple(entities)


def _build_relationships(
    rows: _Rows,
    root_of: dict[str, str],
    named: dict[str, _Named],
    fragments: dict[str, tuple[str, ...]],
    merges: dict[str, int],
) -> tuple[Relationship, ...]:
    """One relationship per (source group, target group, type key), sorted by id."""
    def edge_of(row: _Related) -> tuple[str, str, str]:
        return root_of[row[0]], root_of[row[1]], row[2]

    kept = [r for r in rows.related if root_of[r[0]] != root_of[r[1]]]
    merges["self_loops_dropped"] = len(rows.related) - len(kept)
    relationships = []
    # A stable sort keeps each edge's statements in text order.
    for (src, dst, type_key), group in groupby(sorted(kept, key=edge_of), key=edge_of):
        statements = list(group)
        types: dict[str, int] = {}
        strengths: dict[str, float] = {}
        for _, _, _, unit, kind, strength, _ in statements:
            if kind:
                types[kind] = types.get(kind, 0) + 1
            strengths[unit] = strength  # one strength per unit: its last statement
        rid = _relationship_id(named[src].key, named[dst].key, type_key)
        if parts := _distinct(r[6] for r in statements):
            fragments[rid] = parts
        relationships.append(
            Relationship(
                id=rid,
                source_id=named[src].id,
                target_id=named[dst].id,
                type=majority(types),
                description="\n".join(parts),
                weight=sum(strengths.values()),
                text_unit_ids=tuple(strengths),  # units in order, so sorted
            )
        )
    relationships.sort(key=lambda e: e.id)
    return tuple(relationships)


def apply_summaries(graph: ResolvedGraph, summaries: Mapping[str, str]) -> ResolvedGraph:
    """Return ``graph`` with the descriptions of the items in ``summaries`` replaced.

    Args:
        graph: a resolved graph.
        summaries: entity or relationship id → its summarized description; ids not in the
            graph are ignored, items not in ``summaries`` keep their concatenation.

    Returns:
        A new `ResolvedGraph`; ``description_fragments`` still lists what was merged.
    """
    if not summaries:
        return graph
    entities = tuple(
        e.model_copy(update={"description": summaries[e.id]}) if e.id in summaries else e
        for e in graph.entities
    )
    relationships = tuple(
        r.model_copy(update={"description": summaries[r.id]}) if r.id in summaries else r
        for r in graph.relationships
    )
    return replace(graph, entities=entities, relationships=relationships)
