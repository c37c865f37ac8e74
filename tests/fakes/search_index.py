"""An in-memory `SearchIndex`: naive BM25-like term scoring and exact cosine kNN."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import Collection, IndexRecord, SearchHit, SearchMode
from unified_kg_rag.domain.ranking.fusion import weighted_rrf
from unified_kg_rag.domain.text.analysis import lexical_terms
from unified_kg_rag.ports import Filters
from unified_kg_rag.util.errors import EmbeddingMismatchError


def matches(fields: Mapping[str, object], filters: Filters | None) -> bool:
    """Return True when ``fields`` satisfies every equality / any-of filter."""
    for key, want in (filters or {}).items():
        value = fields.get(key)
        if isinstance(want, str | int | float | bool) or want is None:
            if value != want:
                return False
        elif value not in list(want):
            return False
    return True


class FakeSearchIndex:
    def __init__(self) -> None:
        self.items: dict[Collection, dict[str, tuple[IndexRecord, NDArray[np.float32] | None]]] = {
            c: {} for c in Collection
        }
        self.model: tuple[str, int] | None = None
        self.deleted_listeners: list[Callable[[Collection, list[str]], None]] = []
        """Called with the ids each `delete` removed (the fake access log forgets them)."""

    def _dims(self) -> set[int]:
        return {len(v) for c in self.items.values() for _, v in c.values() if v is not None}

    async def bind_embedding(self, model_id: str, dimension: int) -> None:
        dims = self._dims()
        if (self.model not in (None, (model_id, dimension)) and dims) or dims - {dimension}:
            raise EmbeddingMismatchError(f"index was built with {self.model}; index into a new index (`ukr index PATH --index NAME`)")
        self.model = (model_id, dimension)

    async def embedding(self) -> tuple[str, int] | None:
        return self.model

    async def upsert(
        self,
        collection: Collection,
        records: Sequence[IndexRecord],
        vectors: NDArray[np.float32] | None = None,
    ) -> None:
        if vectors is not None:
            if vectors.ndim != 2 or len(vectors) != len(records):
                raise ValueError("one vector row per record is required")
            if not np.isfinite(vectors).all():
                raise ValueError("vectors contain NaN or infinite values")
            dim = self.model[1] if self.model else next(iter(self._dims()), vectors.shape[1])
            if records and vectors.shape[1] != dim:
                raise EmbeddingMismatchError(f"expected dimension {dim}")
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = (vectors / np.where(norms > 0, norms, 1)).astype(np.float32)
        for i, rec in enumerate(records):
            self.items[collection][rec.id] = (rec, None if vectors is None else vectors[i])

    async def delete(self, collection: Collection, ids: Sequence[str]) -> int:
        gone = [i for i in set(ids) if self.items[collection].pop(i, None) is not None]
        for listener in self.deleted_listeners:
            listener(collection, gone)
        return len(gone)

    async def get(self, collection: Collection, ids: Sequence[str]) -> list[IndexRecord]:
        return [self.items[collection][i][0] for i in ids if i in self.items[collection]]

    async def existing_ids(self, collection: Collection, ids: Sequence[str]) -> set[str]:
        stored = self.items[collection]
        return {i for i in ids if i in stored and stored[i][1] is not None}

    async def vectors(
        self, collection: Collection, ids: Sequence[str]
    ) -> tuple[list[str], NDArray[np.float32]]:
        stored = self.items[collection]
        found = [i for i in ids if i in stored and stored[i][1] is not None]
        if not found:
            dim = self.model[1] if self.model else next(iter(self._dims()), 0)
            return [], np.zeros((0, dim), dtype=np.float32)
        rows = [stored[i][1] for i in found]
        return found, np.stack([r for r in rows if r is not None]).astype(np.float32)

    async def ids(self, collection: Collection) -> list[str]:
        return sorted(self.items[collection])

    async def count(self, collection: Collection) -> int:
        return len(self.items[collection])

    async def search(
        self,
        collection: Collection,
        *,
        query_text: str | None = None,
        query_vector: NDArray[np.float32] | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        filters: Filters | None = None,
        k: int = 10,
        candidate_k: int | None = None,
        lexical_weight: float = 1.0,
        vector_weight: float = 1.0,
        rrf_k: int = 60,
    ) -> list[SearchHit]:
        mode = SearchMode(mode)
        if mode != SearchMode.VECTOR and query_text is None:
            raise ValueError("query_text is required")
        if mode != SearchMode.LEXICAL and query_vector is None:
            raise ValueError("query_vector is required")
        if k < 1:
            raise ValueError("k must be at least 1")
        docs = {i: rv for i, rv in self.items[collection].items() if matches(rv[0].fields, filters)}
        limit = k if mode != SearchMode.HYBRID else (candidate_k or max(k, 50))
        lexical: list[tuple[str, float]] = []
        vector: list[tuple[str, float]] = []
        if mode != SearchMode.VECTOR:
            terms = {i: set(lexical_terms(rv[0].text)) for i, rv in self.items[collection].items()}
            query = set(lexical_terms(query_text or ""))
            df = {t: sum(t in ts for ts in terms.values()) for t in query}
            idf = {t: math.log(1 + (len(terms) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
            scored = [(i, sum(idf[t] for t in query & terms[i])) for i in docs]
            lexical = sorted([s for s in scored if s[1] > 0], key=lambda s: (-s[1], s[0]))[:limit]
        if mode != SearchMode.LEXICAL and query_vector is not None:
            if self._dims() - {len(query_vector)}:
                raise EmbeddingMismatchError("the query vector has another dimension")
            q = query_vector / (np.linalg.norm(query_vector) or 1.0)
            cos = [(i, float(v @ q)) for i, (_, v) in docs.items() if v is not None]
            vector = sorted(cos, key=lambda s: (-s[1], s[0]))[:limit]
        if mode == SearchMode.HYBRID:
            lists = [[i for i, _ in lexical], [i for i, _ in vector]]
            ranked = weighted_rrf(lists, [lexical_weight, vector_weight], k=rrf_k)[:k]
        else:
            ranked = lexical or vector
        lex_rank = {i: n for n, (i, _) in enumerate(lexical, 1)}
        vec_rank = {i: n for n, (i, _) in enumerate(vector, 1)}
        return [
            SearchHit(id=i, score=s, text=docs[i][0].text, fields=docs[i][0].fields,
                      lexical_rank=lex_rank.get(i), vector_rank=vec_rank.get(i))
            for i, s in ranked
        ]
