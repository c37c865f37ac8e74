"""unified-kg-rag: knowledge-graph and hybrid-search RAG, offline by default."""

__version__ = "0.1.0"
