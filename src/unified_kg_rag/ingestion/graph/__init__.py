"""LLM knowledge-graph indexing: extract, glean, resolve, summarize, cluster, report, write.

`GraphIndexer` runs these stages over every stored text unit of an index after the text-unit
pipeline (`ingestion.pipeline`) has committed its documents. Each stage reads what the stores
hold, so a killed run resumes: extraction records are stored per text unit as they arrive,
summaries and reports come back from the LLM response cache, and the graph is written only
once every stage has finished. Source: seed 000 §4.1-§4.4, §4.6.
"""
