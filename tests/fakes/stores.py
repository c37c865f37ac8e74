"""In-memory `DocRegistry`, `RecordStore` and the `FakeBackend` that hands out all fakes."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence

from tests.fakes.graph_store import FakeGraphStore
from tests.fakes.search_index import FakeSearchIndex
from unified_kg_rag.domain.index.delta import diff_documents
from unified_kg_rag.domain.index.write_lease import next_lease, renewed_lease
from unified_kg_rag.domain.models import Collection, DocRecord, DocumentDelta, Lease


class FakeDocRegistry:
    def __init__(self, index: str = "default") -> None:
        self.records: dict[str, DocRecord] = {}
        self.index = index
        self.lease: Lease | None = None

    async def get(self, document_ids: Sequence[str]) -> dict[str, DocRecord]:
        return {i: self.records[i] for i in document_ids if i in self.records}

    async def list_records(self, source_scope: str | None = None) -> list[DocRecord]:
        found = [r for r in self.records.values() if source_scope in (None, r.source_scope)]
        return sorted(found, key=lambda r: (r.path, r.document_id))

    async def diff(self, source_scope: str, current: Mapping[str, str]) -> DocumentDelta:
        return diff_documents(await self.list_records(source_scope), current)

    async def put(self, records: Sequence[DocRecord]) -> None:
        self.records.update((r.document_id, r) for r in records)

    async def delete(self, document_ids: Sequence[str]) -> int:
        return sum(self.records.pop(i, None) is not None for i in set(document_ids))

    async def status_counts(self) -> dict[str, int]:
        return dict(Counter(r.status.value for r in self.records.values()))

    async def acquire_lease(self, holder: str, ttl_s: float) -> Lease:
        self.lease = next_lease(self.index, self.lease, holder, time.time(), ttl_s)
        return self.lease

    async def renew_lease(self, holder: str, ttl_s: float) -> Lease:
        self.lease = renewed_lease(self.index, self.lease, holder, time.time(), ttl_s)
        return self.lease

    async def release_lease(self, holder: str) -> bool:
        if self.lease is None or self.lease.holder != holder:
            return False
        self.lease = None
        return True

    async def get_lease(self) -> Lease | None:
        return self.lease


class FakeRecordStore:
    def __init__(self) -> None:
        self.values: dict[tuple[str, str], str] = {}

    async def get(self, namespace: str, key: str) -> str | None:
        return self.values.get((namespace, key))

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, str]:
        return {k: self.values[(namespace, k)] for k in keys if (namespace, k) in self.values}

    async def put(self, namespace: str, key: str, value: str) -> None:
        self.values[(namespace, key)] = value

    async def put_many(self, namespace: str, items: Mapping[str, str]) -> None:
        self.values.update(((namespace, k), v) for k, v in items.items())

    async def delete(self, namespace: str, keys: Sequence[str]) -> int:
        return sum(self.values.pop((namespace, k), None) is not None for k in set(keys))

    async def count(self, namespace: str) -> int:
        return sum(ns == namespace for ns, _ in self.values)

    async def keys(self, namespace: str) -> list[str]:
        return sorted(k for ns, k in self.values if ns == namespace)


class FakeAccessLog:
    """Retrieval counts in a dict; forgets the ids its search index deletes (as the stores do)."""

    def __init__(self, search: FakeSearchIndex) -> None:
        self.values: Counter[tuple[Collection, str]] = Counter()
        self.increments = 0
        search.deleted_listeners.append(self._forget)

    def _forget(self, collection: Collection, ids: list[str]) -> None:
        for item_id in ids:
            self.values.pop((collection, item_id), None)

    async def increment(self, collection: Collection, counts: Mapping[str, int]) -> None:
        if any(n < 1 for n in counts.values()):
            raise ValueError("access count increments must be >= 1")
        self.increments += 1
        self.values.update({(collection, i): n for i, n in counts.items()})

    async def counts(self, collection: Collection, ids: Sequence[str]) -> dict[str, int]:
        return {i: self.values[(collection, i)] for i in ids if (collection, i) in self.values}

    async def totals(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for (collection, _), n in self.values.items():
            out[collection.value] += n
        return dict(sorted(out.items()))

    async def reset(self) -> int:
        n = len(self.values)
        self.values.clear()
        return n


class FakeBackend:
    """A `StoreBackend` whose ports are in-memory fakes, one set per index (or scope)."""

    location = "memory://fake"

    def __init__(self) -> None:
        self.search: dict[str, FakeSearchIndex] = {}
        self.graphs: dict[str, FakeGraphStore] = {}
        self.registries: dict[str, FakeDocRegistry] = {}
        self.records: dict[str, FakeRecordStore] = {}
        self.access: dict[str, FakeAccessLog] = {}
        self.closed = False

    def search_index(self, index: str) -> FakeSearchIndex:
        return self.search.setdefault(index, FakeSearchIndex())

    def graph_store(self, index: str) -> FakeGraphStore:
        return self.graphs.setdefault(index, FakeGraphStore())

    def doc_registry(self, index: str) -> FakeDocRegistry:
        return self.registries.setdefault(index, FakeDocRegistry(index))

    def record_store(self, scope: str) -> FakeRecordStore:
        return self.records.setdefault(scope, FakeRecordStore())

    def access_log(self, index: str) -> FakeAccessLog:
        if index not in self.access:
            self.access[index] = FakeAccessLog(self.search_index(index))
        return self.access[index]

    async def list_indexes(self) -> list[str]:
        names = {n for n, r in self.registries.items() if r.records}
        names |= {n for n, s in self.search.items() if any(s.items[c] for c in Collection)}
        return sorted(names)

    async def aclose(self) -> None:
        self.closed = True
