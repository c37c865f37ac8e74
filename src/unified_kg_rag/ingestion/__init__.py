"""Application layer for indexing: corpus discovery, the `IndexPipeline`, run reports.

Receives ports only; never imports adapters or the composition root.
"""
