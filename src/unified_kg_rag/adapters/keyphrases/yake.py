"""YAKE keyphrases (Campos et al., Information Sciences 2020): statistical, no model download."""

from __future__ import annotations

from unified_kg_rag.domain.concepts.graph import keyphrases

__all__ = ["YakeKeyphrases"]


class YakeKeyphrases:
    """`ports.KeyphraseExtractor` over `domain.concepts.graph.keyphrases` (YAKE, CJK fallback)."""

    @property
    def name(self) -> str:
        """``yake``."""
        return "yake"

    def keyphrases(self, text: str, *, top: int, max_ngram: int) -> list[str]:
        """Return YAKE's best ``top`` phrases as concept keys (never raises on odd text)."""
        return keyphrases(text, max_ngram=max_ngram, top=top)
