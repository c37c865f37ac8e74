"""Pure models and algorithms of unified-kg-rag.

Identity keys, chunking, lexical analysis, fusion, token budgets, extractive answers and
prompts. No I/O library, model SDK or database driver is imported here.
"""
