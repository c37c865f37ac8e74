"""Schema conformance of the replayed GPT-3.5 MuSiQue extraction (issue 21, "Figures").

HippoRAG's recorded OpenIE output for MuSiQue's 1,890 passages
(``../shared/data/multihop/hipporag/openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json``)
is rendered the way the replay model serves it (`tests.support.replay_server.render_record`:
entity types ENTITY / DATE, relationship types the predicates in upper snake case), read back
with the extraction parser (`parse_extraction_reply`), and checked against
``benchmarks/musique_schema.yaml`` through the domain functions a graph build uses
(`conform_records` with `name_alignment`), in each mode. No model, embedding or store: it takes
a few seconds.

Prints, per kind: statements in schema, aligned by name (``align``), dropped (``strict``),
flagged (``open``); pattern violations; the most frequent off-schema predicates and what name
alignment mapped; and the entities/relationships left after resolution in each mode.

Usage:  python benchmarks/bench_schema.py [--schema PATH] [--threshold T] [--top N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.support.replay_server import (  # noqa: E402
    DEFAULT_DATA_PATH,
    load_passages,
    render_record,
    require_replay_data,
)

from unified_kg_rag.domain.extraction.format import parse_extraction_reply  # noqa: E402
from unified_kg_rag.domain.extraction.records import ExtractionRecord  # noqa: E402
from unified_kg_rag.domain.extraction.schema import SchemaDocument, schema_from_document  # noqa: E402
from unified_kg_rag.domain.extraction.schema_conformance import (  # noqa: E402
    KindCounts,
    conform_records,
    name_alignment,
)
from unified_kg_rag.domain.graph.resolution import resolve_graph  # noqa: E402


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "  n/a"


def _row(label: str, counts: KindCounts, total: int) -> str:
    return (f"  {label:<14} in schema {counts.conforming:>6} ({_pct(counts.conforming, total)})"
            f"  aligned {counts.aligned:>5} ({_pct(counts.aligned, total)})"
            f"  dropped {counts.dropped:>5} ({_pct(counts.dropped, total)})"
            f"  flagged {counts.flagged:>5} ({_pct(counts.flagged, total)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--schema", type=Path, default=ROOT / "benchmarks" / "musique_schema.yaml")
    parser.add_argument("--threshold", type=float, default=85.0)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    import yaml

    started = time.perf_counter()
    passages = load_passages(require_replay_data(DEFAULT_DATA_PATH))
    records: list[tuple[str, ExtractionRecord]] = []
    for i, passage in enumerate(passages):
        parsed = parse_extraction_reply(render_record(passage))
        records.append((f"u{i:04}", ExtractionRecord(
            fingerprint=f"p{i}", entities=parsed.entities, relationships=parsed.relationships)))
    schema = schema_from_document(SchemaDocument.model_validate(
        yaml.safe_load(args.schema.read_text(encoding="utf-8"))))
    n_ent = sum(len(r.entities) for _, r in records)
    n_rel = sum(len(r.relationships) for _, r in records)
    print(f"MuSiQue replay: {len(records)} passages, {n_ent} entity and {n_rel} relationship "
          f"statements; schema {args.schema.name}: {len(schema.entity_types)} entity types, "
          f"{len(schema.relationship_types)} relationship types, {len(schema.patterns)} "
          f"patterns; name threshold {args.threshold:g}")
    alignment = name_alignment(records, schema, args.threshold)
    for mode in ("open", "align", "strict"):
        out, report = conform_records(records, schema, mode,  # type: ignore[arg-type]
                                      alignment if mode == "align" else None)
        graph = resolve_graph(out)
        print(f"\nmode {mode}: graph {len(graph.entities)} entities, "
              f"{len(graph.relationships)} relationships; pattern violations "
              f"{report.pattern_violations} ({_pct(report.pattern_violations, n_rel)} of "
              "relationship statements)")
        print(_row("entities", report.entities, n_ent))
        print(_row("relationships", report.relationships, n_rel))
        if mode == "open":
            top = report.off_schema_relationship_types
            print("  top off-schema predicates (the report keeps 10): "
                  + ", ".join(f"{k} {v}" for k, v in list(top.items())[: args.top]))
    aligned = Counter()
    for _, record in records:
        for rel in record.relationships:
            key = rel.type.upper()
            if key in alignment.relationship_types:
                aligned[(key, alignment.relationship_types[key])] += 1
    print(f"\nname alignment mapped {len(alignment.relationship_types)} off-schema predicates; "
          "most frequent: " + ", ".join(f"{a}->{b} {n}" for (a, b), n in
                                        aligned.most_common(args.top)))
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
