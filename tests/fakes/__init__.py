"""In-memory fakes of the ports, for tests (STYLE.md §4): small, and held to the same
conformance suites as the real backends (``tests/conformance/``)."""

from typing import TYPE_CHECKING

from tests.fakes.graph_store import FakeGraphStore
from tests.fakes.models import FakeEmbedder, FakeTokenCounter
from tests.fakes.search_index import FakeSearchIndex
from tests.fakes.stores import FakeAccessLog, FakeBackend, FakeDocRegistry, FakeRecordStore

__all__ = [
    "FakeAccessLog",
    "FakeBackend",
    "FakeDocRegistry",
    "FakeEmbedder",
    "FakeGraphStore",
    "FakeRecordStore",
    "FakeSearchIndex",
    "FakeTokenCounter",
]

if TYPE_CHECKING:  # mypy checks that each fake matches its port
    from unified_kg_rag import ports

    _backend: ports.StoreBackend = FakeBackend()
    _embedder: ports.Embedder = FakeEmbedder()
    _tokens: ports.TokenCounter = FakeTokenCounter()
