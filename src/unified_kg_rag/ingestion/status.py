"""What an index holds, for `ukr status` and the library's `describe_index`."""

from __future__ import annotations

from unified_kg_rag.domain.index_meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.models import Collection, IndexInfo
from unified_kg_rag.ports import IndexStores

__all__ = ["describe_index"]


async def describe_index(stores: IndexStores) -> IndexInfo:
    """Return the documents per status, item counts and embedding model of one index.

    Raises:
        StoreError: a store failed.
    """
    counts = {c.value: await stores.search.count(c) for c in Collection}
    counts.update(await stores.graph.counts())
    embedding = await stores.search.embedding()
    raw = await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)
    return IndexInfo(
        name=stores.name,
        methodologies=parse_methodologies(raw),
        embedding_model=embedding[0] if embedding else None,
        embedding_dimension=embedding[1] if embedding else None,
        counts={k: v for k, v in counts.items() if v},
        documents=await stores.registry.status_counts(),
        writer=await stores.registry.get_lease(),
    )
