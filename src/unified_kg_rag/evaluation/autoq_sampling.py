"""AutoQ's corpus sampling: text units, seeded k-means and centroid-representative samples.

Seed 000 §9.3 steps 1-2, after the approach of Microsoft's BenchmarkQED (AutoQ; MIT,
Copyright (c) Microsoft Corporation), reimplemented here with numpy:

- `read_units`: each ``.txt``/``.md`` file cut into text units of about ``unit_tokens``
  tokens by the project's chunker (`domain.text.chunking.chunk_text`, no overlap), which ends
  a unit at a paragraph break where one falls in the unit's last 30 %, and measures by the
  script-aware estimate (`EstimateTokenCounter`), so text without spaces splits too;
- `kmeans`: Lloyd's algorithm from a k-means++ start (Arthur and Vassilvitskii, 2007), all
  randomness from one seeded generator;
- `representative_samples`: per cluster, largest first, the member nearest the centroid
  and then the members nearest that one by cosine distance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel

from unified_kg_rag.domain.text.chunking import chunk_text
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.util.errors import UsageError

__all__ = ["ClusterSample", "TextUnitRecord", "kmeans", "read_units", "representative_samples"]

SUFFIXES = (".md", ".txt")


class TextUnitRecord(BaseModel):
    """A text unit as written to ``text_units.jsonl``.

    Attributes:
        id: ``<file>#<n>`` (``n`` from 0 within the file).
        file: the file's path relative to the corpus folder (``/``-separated).
        start: offset of the unit's first character in the file's text (code points).
        end: offset one past its last character.
        text: ``file_text[start:end]``.
    """

    id: str
    file: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class ClusterSample:
    """The units shown for one cluster.

    Attributes:
        number: the cluster's number in the prompts (1 = largest).
        size: how many sampled units the cluster holds.
        units: indexes into the sampled units: the representative first.
    """

    number: int
    size: int
    units: list[int]


def read_units(corpus_dir: Path, unit_tokens: int) -> list[TextUnitRecord]:
    """Return the text units of every ``.txt``/``.md`` file under ``corpus_dir``, in path order.

    Hidden files and folders are skipped; a byte-order mark is dropped.

    Raises:
        UsageError: ``corpus_dir`` is not a folder, or a file cannot be read as UTF-8 text.
    """
    if not corpus_dir.is_dir():
        raise UsageError("is not a folder", field=str(corpus_dir))
    counter = EstimateTokenCounter()
    units: list[TextUnitRecord] = []
    files = sorted(
        p for p in corpus_dir.rglob("*")
        if p.is_file() and p.suffix.lower() in SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(corpus_dir).parts)
    )  # fmt: skip
    for path in files:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read as UTF-8 text ({exc})", field=str(path)) from exc
        rel = path.relative_to(corpus_dir).as_posix()
        spans = chunk_text(
            text, counter.token_spans(text), size_tokens=unit_tokens, overlap_tokens=0
        )
        for n, span in enumerate(spans):
            units.append(
                TextUnitRecord(
                    id=f"{rel}#{n}", file=rel, start=span.start_char, end=span.end_char,
                    text=text[span.start_char : span.end_char],
                )
            )  # fmt: skip
    return units


def kmeans(
    x: NDArray[np.float64], k: int, rng: np.random.Generator, *, iterations: int = 100
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Cluster the rows of ``x`` into ``k`` groups (k-means++ start, then Lloyd iterations).

    Args:
        x: ``[n, d]`` points (L2-normalised embeddings: squared Euclidean distance is then
            twice the cosine distance).
        k: clusters, ``1 <= k <= n``.
        rng: the only source of randomness (the seeded start).
        iterations: most Lloyd iterations; stops earlier when no assignment changes.

    Returns:
        ``(labels [n], centroids [k, d])``. A cluster that loses every member keeps its last
        centroid (and is empty).

    Source: Lloyd (1982); k-means++ seeding, Arthur and Vassilvitskii (SODA 2007).
    """
    n = x.shape[0]
    if not 1 <= k <= n:
        raise ValueError("k must be in [1, n]")
    first = int(rng.integers(n))
    chosen = [first]
    d2 = ((x - x[first]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = float(d2.sum())
        pick = int(rng.choice(n, p=d2 / total)) if total > 0 else int(rng.integers(n))
        chosen.append(pick)
        d2 = np.minimum(d2, ((x - x[pick]) ** 2).sum(axis=1))
    centroids = x[chosen].copy()
    labels = np.full(n, -1, dtype=np.intp)
    sq = (x**2).sum(axis=1)[:, None]
    for _ in range(iterations):
        dist = sq - 2.0 * x @ centroids.T + (centroids**2).sum(axis=1)[None, :]
        new = dist.argmin(axis=1).astype(np.intp)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = labels == j
            if members.any():
                centroids[j] = x[members].mean(axis=0)
    return labels, centroids


def representative_samples(
    x: NDArray[np.float64],
    labels: NDArray[np.intp],
    centroids: NDArray[np.float64],
    per_cluster: int,
) -> list[ClusterSample]:
    """Return each non-empty cluster's sample, largest cluster first (ties: lower label).

    A sample is the member nearest the centroid (Euclidean), then the ``per_cluster - 1``
    members nearest that representative by cosine distance (ties: lower index).

    Source: BenchmarkQED's centroid representative sampling (seed 000 §9.3 step 2).
    """
    sizes = np.bincount(labels, minlength=len(centroids))
    order = sorted((j for j in range(len(centroids)) if sizes[j]), key=lambda j: (-sizes[j], j))
    norms = np.linalg.norm(x, axis=1)
    unit = x / np.where(norms > 0, norms, 1.0)[:, None]
    samples: list[ClusterSample] = []
    for number, j in enumerate(order, start=1):
        members = np.flatnonzero(labels == j)
        to_centroid = ((x[members] - centroids[j]) ** 2).sum(axis=1)
        rep = int(members[int(np.argmin(to_centroid))])
        rest = [int(m) for m in members if m != rep]
        rest.sort(key=lambda m: (1.0 - float(unit[m] @ unit[rep]), m))
        samples.append(
            ClusterSample(number=number, size=int(sizes[j]), units=[rep, *rest[: per_cluster - 1]])
        )
    return samples
