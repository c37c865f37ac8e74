"""Application layer for questions: strategies, context packing, answers, `RAGChain`.

Receives ports only; never imports adapters or the composition root.
"""
