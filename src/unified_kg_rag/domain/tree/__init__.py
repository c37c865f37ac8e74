"""The RAPTOR summary tree (Sarthi et al., ICLR 2024; seed 000 §6.5), pure.

- `nodes` — `SummaryNode` (one summary: level, children, text-unit lineage) and
  `SummaryTree` (every node of one build, with the digest of its leaves and settings).
"""
