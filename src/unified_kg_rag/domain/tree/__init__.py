"""The RAPTOR summary tree (Sarthi et al., ICLR 2024; seed 000 §6.5), pure.

- `nodes` — `SummaryNode` (one summary: level, children, text-unit lineage) and
  `SummaryTree` (every node of one build, with the digest of its leaves and settings).
- `clustering` — one level's clusters: PCA reduction, seeded k-means, the token bound, the stop.
- `extractive` — sentence splitting, the LLM-free centroid summary, a cluster's `input_key`.
- `lineage` — a node's text-unit lineage, and the nodes a removal makes stale (fail-closed).
"""
