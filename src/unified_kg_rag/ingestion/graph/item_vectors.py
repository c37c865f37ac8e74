"""Vectors for one search collection of a graph build, embedding each new text once.

What belongs here: deciding, for the records a graph build wants in a collection, which
are already stored as they are (skipped), which can take a stored vector (their text is
stored already, under their own id or another), and which texts must go to the embedding
model; then embedding those unique texts in length order and upserting the records with
their vectors. The order of the whole graph write is `write.GraphWriter`'s.

Why: a MuSiQue graph build embedded ~38 K entity, relationship and report texts in batches
of 512 records each sorted on its own, and re-embedded a record whose fields changed while
its text did not (docs/guides/scale.md has the profile).

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
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ports import Embedder, ProgressReporter, SearchIndex

__all__ = ["CollectionVectors", "write_collection_vectors"]

_LOOKUP = 2048
"""Ids read from the search index per call."""


@dataclass
class CollectionVectors:
    """What writing one collection's records did.

    Attributes:
        reused: records given a stored vector (fields-only change or a text stored already).
        embedded: unique texts sent to the model.
        duplicates: records that shared a text embedded for another record of this build.
        embedding_s: seconds spent in the embedding model.
    """

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


async def write_collection_vectors(
    search: SearchIndex,
    embedder: Embedder,
    collection: Collection,
    wanted: Sequence[IndexRecord],
    *,
    reuse_ids: Sequence[str] = (),
    chunk_texts: int = 512,
    progress: ProgressReporter | None = None,
) -> CollectionVectors:
    """Upsert the records of ``wanted`` that changed, with vectors (see the module docstring).

    Records that take a stored or shared vector are written first; the others are written
    chunk by chunk as their texts are embedded, so a killed run keeps what it embedded.

    Args:
        search: the index's search index.
        embedder: the index's embedding model (its vectors L2-normalised float32).
        collection: the collection written.
        wanted: the records this build wants in ``collection`` (unique ids).
        reuse_ids: further stored ids whose vectors may be reused by text (the previous
            build's items this one drops; they are deleted after the write).
        chunk_texts: unique texts per `Embedder.embed_documents` call (>= 1).
        progress: receives ``embed <collection>`` progress (unique texts embedded).

    Returns:
        The counts of what was written, reused and embedded.

    Raises:
        EmbeddingModelError: the embedding model failed.
        StoreError: the search index failed.
    """
    out = CollectionVectors()
    stored = await _stored(search, collection, [r.id for r in wanted])
    changed = [
        r for r in wanted
        if r.id not in stored or stored[r.id].text != r.text or stored[r.id].fields != r.fields
    ]  # fmt: skip
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
    by_new_text: dict[str, list[IndexRecord]] = {}
    for r in changed:
        by_new_text.setdefault(r.text, []).append(r)
    todo = sorted((t for t in by_new_text if t not in vector_of), key=len, reverse=True)
    out.embedded = len(todo)
    out.duplicates = len(changed) - out.reused - len(todo)
    size = max(1, chunk_texts)
    ready = [r for r in changed if r.text in vector_of]
    for i in range(0, len(ready), size):
        await _upsert(search, collection, ready[i : i + size], vector_of)
    reporter = progress or NULL_PROGRESS
    label = f"embed {collection.value}"
    if todo:
        reporter.start(label, len(todo))
    for i in range(0, len(todo), size):
        texts = todo[i : i + size]
        started = time.perf_counter()
        vectors = await embedder.embed_documents(texts)
        out.embedding_s += time.perf_counter() - started
        vector_of.update(zip(texts, vectors, strict=True))
        batch = [r for t in texts for r in by_new_text[t]]
        await _upsert(search, collection, batch, vector_of)  # written as soon as embedded
        reporter.advance(label, len(texts))
    if todo:
        reporter.finish(label)
    return out


async def _upsert(
    search: SearchIndex,
    collection: Collection,
    records: list[IndexRecord],
    vector_of: dict[str, NDArray[np.float32]],
) -> None:
    """Upsert ``records`` with the vectors of their texts."""
    if records:
        matrix = np.stack([vector_of[r.text] for r in records]).astype(np.float32, copy=False)
        await search.upsert(collection, records, matrix)
