"""``python -m unified_kg_rag.cli``: the same as the ``ukr`` console script."""

from unified_kg_rag.cli.app import main

main()
