"""Keyphrase extractors of the `lazy` concept graph: ``yake`` (default) and ``spacy``."""

from __future__ import annotations

from unified_kg_rag.adapters.registry import KEYPHRASE_EXTRACTORS
from unified_kg_rag.config.lazy import LazyIndexConfig
from unified_kg_rag.ports import KeyphraseExtractor

__all__ = ["load_spacy", "load_yake"]


def load_yake(config: LazyIndexConfig) -> KeyphraseExtractor:
    """Build the YAKE extractor (language guessed per text; no model)."""
    from unified_kg_rag.adapters.keyphrases.yake import YakeKeyphrases

    return YakeKeyphrases()


def load_spacy(config: LazyIndexConfig) -> KeyphraseExtractor:
    """Build the spaCy noun-phrase extractor over ``config.spacy_model`` (loaded at first use)."""
    from unified_kg_rag.adapters.keyphrases.spacy import SpacyNounPhrases

    return SpacyNounPhrases(config.spacy_model)


KEYPHRASE_EXTRACTORS.register("yake", load_yake)
KEYPHRASE_EXTRACTORS.register("spacy", load_spacy)
