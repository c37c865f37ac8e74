"""Evaluation: datasets, LLM-free metrics and the runner that drives `RAGChain` over them.

Imports the application API only (the chain), never an adapter.
"""
