"""spaCy noun phrases as concepts, for users who installed a spaCy pipeline themselves.

spaCy and its pipeline are not dependencies of this project and nothing is downloaded: the
pipeline named by ``graph.lazy.spacy_model`` (a package such as ``en_core_web_sm``, or a path)
must already be installed. Noun chunks are ranked by frequency in the text, then first
occurrence, and normalised with `domain.concepts.graph.concept_key`.
"""

from __future__ import annotations

import threading
from typing import Any

from unified_kg_rag.domain.concepts.graph import concept_key
from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["SpacyNounPhrases"]

_MAX_CHARS = 1_000_000  # spaCy's default max_length


class SpacyNounPhrases:
    """`ports.KeyphraseExtractor` returning a spaCy pipeline's noun chunks.

    Args:
        model: the installed pipeline's package name or path.
    """

    def __init__(self, model: str) -> None:
        self._model = model
        self._nlp: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``spacy:<model>``."""
        return f"spacy:{self._model}"

    def _pipeline(self) -> Any:
        with self._lock:
            if self._nlp is None:
                try:
                    import spacy
                except ImportError as exc:
                    raise ConfigurationError(
                        "spaCy is not installed; `pip install spacy` and a pipeline such as "
                        f"{self._model}, or use graph.lazy.extractor: yake",
                        field="graph.lazy.extractor",
                    ) from exc
                try:
                    self._nlp = spacy.load(self._model, disable=["ner", "lemmatizer"])
                except (OSError, ImportError, ValueError) as exc:
                    raise ConfigurationError(
                        f"cannot load the spaCy pipeline {self._model!r} ({exc}); install it "
                        "first (nothing is downloaded at run time)",
                        field="graph.lazy.spacy_model",
                    ) from exc
            return self._nlp

    def keyphrases(self, text: str, *, top: int, max_ngram: int) -> list[str]:
        """Return the ``top`` most frequent noun phrases of at most ``max_ngram`` words.

        Raises:
            ConfigurationError: spaCy or the pipeline is not installed.
        """
        doc = self._pipeline()(text[:_MAX_CHARS])
        counts: dict[str, int] = {}
        for chunk in doc.noun_chunks:
            words = [t.text for t in chunk if not (t.is_stop or t.is_punct)]
            if not words or len(words) > max_ngram:
                continue
            key = concept_key(" ".join(words))
            if key:
                counts[key] = counts.get(key, 0) + 1
        first = {key: i for i, key in enumerate(counts)}  # dicts keep first-seen order
        return sorted(counts, key=lambda k: (-counts[k], first[k]))[:top]
