"""What every `SearchIndex` adapter does alike: argument checks, vector normalisation, hits.

The stores differ in how they find lexical and vector candidates; how a call's arguments are
checked, how vectors are normalised and how ranked ids become `SearchHit`s is one contract,
kept here so the backends cannot drift apart. So is the check of an `AccessLog` batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import IndexRecord, SearchHit, SearchMode
from unified_kg_rag.domain.ranking.fusion import weighted_rrf
from unified_kg_rag.util.errors import StoreError

__all__ = [
    "SearchPlan", "checked_counts", "checked_vectors", "fuse", "normalised", "plan_search",
    "ranked_hits", "stacked_vectors",
]

Ranked = list[tuple[str, float]]
"""``(id, score)`` pairs, best first."""


def normalised(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """Return ``vectors`` (``[..., d]`` float32) L2-normalised on the last axis (zero stays)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    out: NDArray[np.float32] = np.zeros_like(vectors)
    np.divide(vectors, norms, out=out, where=norms > 0)
    return out


def checked_vectors(
    n_records: int, vectors: NDArray[np.float32] | None
) -> NDArray[np.float32] | None:
    """Return the upsert's vectors as an L2-normalised ``ndarray[n, d] float32`` (None stays None).

    Raises:
        ValueError: not 2-D, a row count other than ``n_records``, or NaN/infinite values.
    """
    if vectors is None:
        return None
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != n_records:
        raise ValueError(f"expected vectors of shape [{n_records}, d], got {list(matrix.shape)}")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors contain NaN or infinite values")
    return normalised(matrix)


@dataclass(frozen=True)
class SearchPlan:
    """What one `SearchIndex.search` call runs.

    Attributes:
        mode: the search mode.
        use_text: the lexical list is needed.
        use_vector: the vector list is needed.
        limit: hits each list returns (``k``, or the candidates fused in hybrid mode).
    """

    mode: SearchMode
    use_text: bool
    use_vector: bool
    limit: int


def plan_search(
    mode: SearchMode | str,
    query_text: str | None,
    query_vector: NDArray[np.float32] | None,
    k: int,
    candidate_k: int | None,
) -> SearchPlan:
    """Check a search call's arguments (see `SearchIndex.search`) and return its plan.

    Raises:
        ValueError: the mode's query input is missing, or ``k`` < 1.
    """
    mode = SearchMode(mode)
    use_text = mode in (SearchMode.LEXICAL, SearchMode.HYBRID)
    use_vector = mode in (SearchMode.VECTOR, SearchMode.HYBRID)
    if use_text and query_text is None:
        raise ValueError(f"{mode.value} search needs query_text")
    if use_vector and query_vector is None:
        raise ValueError(f"{mode.value} search needs query_vector")
    if k < 1:
        raise ValueError("k must be at least 1")
    limit = k if mode is not SearchMode.HYBRID else (candidate_k or max(k, 50))
    return SearchPlan(mode=mode, use_text=use_text, use_vector=use_vector, limit=limit)


def fuse(
    lexical: Ranked, vector: Ranked, *, k: int, lexical_weight: float, vector_weight: float,
    rrf_k: int,
) -> Ranked:
    """Return the best ``k`` of both lists fused by weighted RRF (`ranking.fusion.weighted_rrf`)."""
    return weighted_rrf(
        [[i for i, _ in lexical], [i for i, _ in vector]], [lexical_weight, vector_weight], k=rrf_k
    )[:k]


def ranked_hits(
    ranked: Ranked, lexical: Ranked, vector: Ranked, records: Mapping[str, IndexRecord]
) -> list[SearchHit]:
    """Return ``ranked`` as hits with stored text, fields and 1-based rank in each list.

    Ids without a stored record (deleted meanwhile) are left out.
    """
    lex_rank = {id_: n for n, (id_, _) in enumerate(lexical, start=1)}
    vec_rank = {id_: n for n, (id_, _) in enumerate(vector, start=1)}
    return [
        SearchHit(id=id_, score=float(score), text=records[id_].text, fields=records[id_].fields,
                  lexical_rank=lex_rank.get(id_), vector_rank=vec_rank.get(id_))
        for id_, score in ranked if id_ in records
    ]


def stacked_vectors(
    ids: Sequence[str], found: Mapping[str, NDArray[np.float32]], dimension: int
) -> tuple[list[str], NDArray[np.float32]]:
    """Return what `SearchIndex.vectors` returns from the vectors a store read.

    Args:
        ids: the requested ids.
        found: ``id -> ndarray[d] float32``, the stored vectors among ``ids``.
        dimension: ``d``, the bound (or stored) dimension; 0 when there is none.

    Returns:
        The ids of ``ids`` in ``found``, in the order of ``ids`` (a repeated id repeats), and
        their vectors as ``ndarray[m, d] float32`` (``[0, d]`` when none is found).

    Raises:
        StoreError: a stored vector is not of dimension ``d``.
    """
    kept = [i for i in ids if i in found]
    matrix: NDArray[np.float32] = np.zeros((len(kept), dimension), dtype=np.float32)
    for row, id_ in enumerate(kept):
        if found[id_].shape != (dimension,):
            raise StoreError(
                f"record {id_!r} holds a vector of shape {list(found[id_].shape)}; the index's "
                f"dimension is {dimension}. Index into a new index (`ukr index PATH --index NAME`)"
            )
        matrix[row] = found[id_]
    return kept, matrix


def checked_counts(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """Return an `AccessLog.increment` batch as ``(id, n)`` pairs sorted by id.

    Sorted, so concurrent batches lock their rows in one order (no deadlock).

    Raises:
        ValueError: a count is below 1.
    """
    for item_id, n in counts.items():
        if n < 1:
            raise ValueError(f"access count increment of {item_id!r} must be >= 1, got {n}")
    return sorted(counts.items())
