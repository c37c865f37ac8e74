"""Extraction: per-unit extraction records, the prompt's messages and the XML reply reader.

Not here: merging records into one graph (`domain.graph.resolution`).
"""
