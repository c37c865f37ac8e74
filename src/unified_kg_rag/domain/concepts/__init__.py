"""The LLM-free concept graph of methodology ``lazy``: keyphrases, unit links, co-occurrence."""
