"""Converters from public QA data layouts into a `ukr eval` dataset (and a corpus folder).

One module per source: `graphrag_bench` (GraphRAG-Bench novel or medical), `multihop_rag`
(MultiHop-RAG news articles) and `jsonl` (your own JSON Lines, fields renamed by a map).
HippoRAG's layout is `unified_kg_rag.evaluation.prepare`. What they share (reading JSON,
the ``--force`` rule, file names, the report) is `common`.
"""

from __future__ import annotations

from unified_kg_rag.evaluation.datasets.common import DatasetReport
from unified_kg_rag.evaluation.datasets.graphrag_bench import prepare_graphrag_bench
from unified_kg_rag.evaluation.datasets.jsonl import parse_field_map, prepare_jsonl
from unified_kg_rag.evaluation.datasets.multihop_rag import prepare_multihop_rag

__all__ = [
    "DatasetReport",
    "parse_field_map",
    "prepare_graphrag_bench",
    "prepare_jsonl",
    "prepare_multihop_rag",
]
