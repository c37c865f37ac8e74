"""Text: lexical terms, sentence and paragraph boundaries, token estimates, chunking.

What a text reads as before any graph exists. Not here: concept keyphrases (`domain.concepts`).
"""
