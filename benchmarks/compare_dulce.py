"""Our resolution and communities over Microsoft GraphRAG's own graph of "Operation Dulce".

GraphRAG's index of the novella (``../shared/data/narrative/operation_dulce/``) holds 39
entities, 107 relationships and 10 communities (7 at level 0, 3 at level 1). Its entities and
relationships are turned back into per-text-unit extraction records (each entity and edge
stated by every text unit its lineage lists) and run through our `resolve_graph` and
`detect_communities`; the script prints both structures and how our level-0 communities
match theirs (for each of theirs, the best Jaccard overlap with one of ours).

Usage:  python benchmarks/compare_dulce.py [--data DIR] [--max-cluster-size N]
Needs pyarrow (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.graph.communities import detect_communities
from unified_kg_rag.domain.graph.resolution import resolve_graph
from unified_kg_rag.domain.identity import entity_id

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "narrative" / "operation_dulce"


def _records(out: Path) -> list[tuple[str, ExtractionRecord]]:
    entities = pq.read_table(out / "entities.parquet").to_pylist()
    relationships = pq.read_table(out / "relationships.parquet").to_pylist()
    ents: dict[str, list[ExtractedEntity]] = defaultdict(list)
    rels: dict[str, list[ExtractedRelationship]] = defaultdict(list)
    for e in entities:
        for unit in e["text_unit_ids"]:
            ents[unit].append(ExtractedEntity(name=e["title"], type=e["type"] or "",
                                              description=e["description"] or ""))
    for r in relationships:
        units = list(r["text_unit_ids"])
        for unit in units:
            rels[unit].append(ExtractedRelationship(
                source=r["source"], target=r["target"], description=r["description"] or "",
                strength=float(r["weight"]) / max(1, len(units)),
            ))  # fmt: skip
    return [
        (unit, ExtractionRecord(fingerprint=unit, entities=tuple(ents[unit]),
                                relationships=tuple(rels[unit])))
        for unit in sorted(set(ents) | set(rels))
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--max-cluster-size", type=int, default=20)
    args = parser.parse_args()
    out = args.data / "graphrag_index_output"
    if not out.is_dir():
        sys.exit(f"not found: {out}")
    theirs = pq.read_table(out / "communities.parquet").to_pylist()
    their_entities = {e["id"]: e["title"] for e in pq.read_table(out / "entities.parquet")
                      .to_pylist()}  # fmt: skip

    graph = resolve_graph(_records(out))
    ours = detect_communities(
        [e.id for e in graph.entities],
        [(r.source_id, r.target_id, r.weight) for r in graph.relationships],
        max_cluster_size=args.max_cluster_size,
    )
    names = {e.id: e.name for e in graph.entities}
    print(f"GraphRAG: {len(their_entities)} entities, 107 relationships, {len(theirs)} "
          "communities")
    per_level: dict[int, int] = defaultdict(int)
    for c in theirs:
        per_level[c["level"]] += 1
    print(f"  communities per level {dict(per_level)}; sizes "
          f"{[len(c['entity_ids']) for c in theirs]}")
    print(f"ours:     {len(graph.entities)} entities, {len(graph.relationships)} relationships,"
          f" {len(ours)} communities (max_cluster_size {args.max_cluster_size})")
    ours_level: dict[int, int] = defaultdict(int)
    for oc in ours:
        ours_level[oc.level] += 1
    print(f"  communities per level {dict(ours_level)}; sizes "
          f"{[len(c.member_ids) for c in ours]}")
    print(f"  merges {graph.merges}")
    merged = [e.name for e in graph.entities
              if sum(1 for t in their_entities.values() if entity_id(t) == e.id) != 1]
    print(f"  entities not one-to-one with theirs: {merged or 'none'}")
    our_sets = [set(c.member_ids) for c in ours if c.level == 0]
    print("their level-0 community → best Jaccard with one of our level-0 communities:")
    for c in sorted(theirs, key=lambda c: (c["level"], c["community"])):
        if c["level"] != 0:
            continue
        members = {entity_id(their_entities[i]) for i in c["entity_ids"]}
        best = max(our_sets, key=lambda s: len(s & members) / len(s | members), default=set())
        score = len(best & members) / len(best | members) if best else 0.0
        label = ", ".join(sorted(names.get(m, m[:8]) for m in members)[:4])
        print(f"  #{c['community']} ({len(members)} members: {label}, ...)  Jaccard {score:.2f}")


if __name__ == "__main__":
    main()
