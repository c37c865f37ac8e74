"""The entity graph: resolution, name matching, description summaries, communities, reports.

Not here: the LLM-free concept graph (`domain.concepts`) or graph retrieval (`domain.ranking.ppr`).
"""
