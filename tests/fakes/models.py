"""A deterministic hashing `Embedder` and a whitespace `TokenCounter`."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.text.analysis import lexical_terms


class FakeEmbedder:
    """Hashing-trick bag of `lexical_terms` in 64 dimensions, L2-normalised (zero for no terms).

    Texts sharing terms get a positive cosine; ``embedded_texts`` counts texts embedded.
    """

    def __init__(self, dimension: int = 64) -> None:
        self._dimension = dimension
        self.embedded_texts = 0

    @property
    def model_id(self) -> str:
        return f"fake:hash-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _vector(self, text: str) -> NDArray[np.float32]:
        vec = np.zeros(self._dimension, dtype=np.float32)
        for term in lexical_terms(text):
            digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
            vec[int.from_bytes(digest[:4], "little") % self._dimension] += (
                1.0 if digest[4] & 1 else -1.0
            )
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.embedded_texts += len(texts)
        rows = [self._vector(t) for t in texts]
        return np.stack(rows) if rows else np.zeros((0, self._dimension), dtype=np.float32)

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        self.embedded_texts += 1
        return self._vector(text)


class FakeTokenCounter:
    """Tokens are runs of non-whitespace; spans are exact character offsets."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\S+", text)]

    def count(self, text: str) -> int:
        return len(self.token_spans(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        spans = self.token_spans(text)
        if len(spans) <= max_tokens:
            return text
        return text[: spans[max_tokens - 1][1]] if max_tokens > 0 else ""
