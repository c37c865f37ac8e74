"""Retrieval math: rank fusion, MMR, personalized PageRank and token-budget packing."""
