"""Vectors for one search collection of a graph build, embedding each new text once.

What belongs here: deciding, for the records a graph build wants in a collection, which
are already stored as they are (skipped), which can take a stored vector (their text is
stored already, under their own id or another), and which texts must go to the embedding
model; then embedding those unique texts in length order. Writing the records is the
caller's (`write.GraphWriter`).

Why: a MuSiQue graph build embedded ~38 K entity, relationship and report texts in batches
of 512 records each sorted on its own, and re-embedded a record whose fields changed while
its text did not (docs/guides/scale-embedspeed.md has the profile).

* **Fields-only change**: the stored vector is reused (the text, not the fields, is embedded).
* **Same text, another id**: the stored vector of any record of the collection with the
  same text is reused: a renamed or re-keyed item, or an item of the previous build that
  this one drops (``reuse_ids``). The index is bound to one embedding model
  (`SearchIndex.bind_embedding`), so a stored vector is always the current model's.
* **Identical texts in this build**: embedded once, the vector given to every record.
* **Length order**: the unique texts are sorted by length over the whole collection, longest
  first, and sent in chunks of ``chunk_texts``, so each model batch pads to nearly its own
  length (the embedder sorts again within a chunk).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ports import Embedder, ProgressReporter, SearchIndex

__all__ = ["CollectionVectors", "plan_collection_vectors"]

_LOOKUP = 2048
"""Ids read from the search index per call."""


@dataclass
class CollectionVectors:
    """The records of one collection to write, with their vectors.

    Attributes:
        records: the records to upsert (changed or new), in the order wanted.
        vectors: ``ndarray[len(records), d] float32``, L2-normalised, row ``i`` for
            ``records[i]``.
        unchanged: records skipped because they are stored with the same text and fields.
        reused: records given a stored vector (fields-only change or a text stored already).
        embedded: unique texts sent to the model.
        duplicates: records that shared a text embedded for another record of this build.
        embedding_s: seconds spent in the embedding model.
    """

    records: list[IndexRecord] = field(default_factory=list)
    vectors: NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.float32)
    )
    unchanged: int = 0
    reused: int = 0
    embedded: int = 0
    duplicates: int = 0
    embedding_s: float = 0.0


async def _stored(
    search: SearchIndex, collection: Collection, ids: Sequence[str]
) -> dict[str, IndexRecord]:
    """Return the stored records among ``ids`` that have a vector, by id."""
    out: dict[str, IndexRecord] = {}
    for i in range(0, len(ids), _LOOKUP):
        chunk = ids[i : i + _LOOKUP]
        with_vector = await search.existing_ids(collection, chunk)
        if with_vector:
            out.update((r.id, r) for r in await search.get(collection, sorted(with_vector)))
    return out


async def _stored_vectors(
    search: SearchIndex, collection: Collection, ids: Sequence[str], dimension: int
) -> dict[str, NDArray[np.float32]]:
    """Return the stored vectors of ``ids`` by id (ids without one are absent)."""
    out: dict[str, NDArray[np.float32]] = {}
    for i in range(0, len(ids), _LOOKUP):
        found, matrix = await search.vectors(collection, ids[i : i + _LOOKUP])
        out.update(zip(found, matrix.reshape(len(found), -1), strict=True))
    return {k: v for k, v in out.items() if v.shape[0] == dimension}


async def plan_collection_vectors(
    search: SearchIndex,
    embedder: Embedder,
    collection: Collection,
    wanted: Sequence[IndexRecord],
    *,
    reuse_ids: Sequence[str] = (),
    chunk_texts: int = 512,
    progress: ProgressReporter | None = None,
) -> CollectionVectors:
    """Return the records of ``wanted`` to write and their vectors (see the module docstring).

    Args:
        search: the index's search index (read only here).
        embedder: the index's embedding model (its vectors L2-normalised float32).
        collection: the collection written.
        wanted: the records this build wants in ``collection`` (unique ids).
        reuse_ids: further stored ids whose vectors may be reused by text (the previous
            build's items this one drops; they are deleted after the write).
        chunk_texts: unique texts per `Embedder.embed_documents` call (>= 1).
        progress: receives ``embed <collection>`` progress (unique texts embedded).

    Returns:
        The records to upsert with their vectors, and counts.

    Raises:
        EmbeddingModelError: the embedding model failed.
        StoreError: the search index failed.
    """
    out = CollectionVectors(vectors=np.zeros((0, embedder.dimension), dtype=np.float32))
    stored = await _stored(search, collection, [r.id for r in wanted])
    changed = [
        r for r in wanted
        if r.id not in stored or stored[r.id].text != r.text or stored[r.id].fields != r.fields
    ]  # fmt: skip
    out.unchanged = len(wanted) - len(changed)
    if not changed:
        return out
    wanted_ids = {r.id for r in wanted}
    extra = [i for i in reuse_ids if i not in wanted_ids]
    stored.update(await _stored(search, collection, extra))
    needed = {r.text for r in changed}
    by_text: dict[str, str] = {}
    for rec in stored.values():
        if rec.text in needed:
            by_text.setdefault(rec.text, rec.id)
    found = await _stored_vectors(
        search, collection, sorted(set(by_text.values())), embedder.dimension
    )
    vector_of: dict[str, NDArray[np.float32]] = {
        text: found[rid] for text, rid in by_text.items() if rid in found
    }
    out.reused = sum(1 for r in changed if r.text in vector_of)
    todo = sorted({r.text for r in changed if r.text not in vector_of}, key=len, reverse=True)
    out.embedded = len(todo)
    out.duplicates = len(changed) - out.reused - len(todo)
    reporter = progress or NULL_PROGRESS
    label = f"embed {collection.value}"
    if todo:
        reporter.start(label, len(todo))
    for i in range(0, len(todo), max(1, chunk_texts)):
        texts = todo[i : i + max(1, chunk_texts)]
        started = time.perf_counter()
        vectors = await embedder.embed_documents(texts)
        out.embedding_s += time.perf_counter() - started
        vector_of.update(zip(texts, vectors, strict=True))
        reporter.advance(label, len(texts))
    if todo:
        reporter.finish(label)
    out.records = changed
    out.vectors = np.stack([vector_of[r.text] for r in changed]).astype(np.float32, copy=False)
    return out
