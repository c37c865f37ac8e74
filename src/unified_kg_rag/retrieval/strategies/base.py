"""The strategy contract and its registry.

A strategy turns a question into ranked context candidates; the chain packs and answers.
Strategies register with `register_strategy`, naming the methodology whose artefacts they read
(None: only text units, which every index holds), so the chain can refuse a query the index
cannot serve before any model call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.models import MetadataValue
from unified_kg_rag.ports import ChatModel, Embedder, IndexStores
from unified_kg_rag.util.registry import Registry

__all__ = [
    "STRATEGIES",
    "Candidate",
    "QueryContext",
    "Strategy",
    "StrategySpec",
    "register_strategy",
]


@dataclass(frozen=True)
class Candidate:
    """A context candidate a strategy found, with its provenance.

    Attributes:
        kind: ``text_unit`` (later ``entity``, ``relationship``, ``report`` ...).
        id: the item id.
        text: the item text.
        score: the strategy's fused score (higher is better).
        document_id: the source document, for text units.
        path: the document's relative path.
        location: the document's full path, when known.
        title: the document's title.
        text_unit_ids: the text units the item rests on.
        start_char: offset in the document, for text units.
        end_char: end offset in the document.
    """

    kind: str
    id: str
    text: str
    score: float
    document_id: str | None = None
    path: str | None = None
    location: str | None = None
    title: str | None = None
    text_unit_ids: tuple[str, ...] = ()
    start_char: int | None = None
    end_char: int | None = None


@dataclass
class QueryContext:
    """What a strategy may use to answer one question.

    Attributes:
        question: the question, stripped.
        stores: the index's store ports.
        embedder: the embedding model.
        chat_model: the LLM, or None.
        config: query settings in effect (CLI overrides applied).
        filters: equality filters on text-unit fields.
        held: the methodologies the index holds.
    """

    question: str
    stores: IndexStores
    embedder: Embedder
    chat_model: ChatModel | None
    config: QueryConfig
    filters: dict[str, MetadataValue | Sequence[MetadataValue]] = field(default_factory=dict)
    held: tuple[str, ...] = ()
    _query_vector: NDArray[np.float32] | None = None

    async def query_vector(self) -> NDArray[np.float32]:
        """Return the question's embedding (computed once per query), ``ndarray[d] float32``."""
        if self._query_vector is None:
            self._query_vector = await self.embedder.embed_query(self.question)
        return self._query_vector


class Strategy(Protocol):
    """Finds ranked context candidates for a question."""

    async def retrieve(self, ctx: QueryContext) -> list[Candidate]:
        """Return candidates, best first.

        Raises:
            StoreError: a store failed (never reported as "no results").
            EmbeddingModelError: the query could not be embedded.
        """
        ...


@dataclass(frozen=True)
class StrategySpec:
    """A registered strategy: how to build it and what the index must hold.

    Attributes:
        name: the strategy name (``naive``).
        methodology: the methodology whose artefacts it reads (a tuple: any one of them);
            None for text units only.
        factory: builds the strategy.
        description: one line for help texts.
    """

    name: str
    methodology: str | tuple[str, ...] | None
    factory: Callable[[], Strategy]
    description: str


STRATEGIES: Registry[StrategySpec] = Registry("strategy", field="query.strategy")


def register_strategy(
    name: str, *, methodology: str | tuple[str, ...] | None, description: str
) -> Callable[[type[Strategy]], type[Strategy]]:
    """Class decorator registering a strategy under ``name``."""

    def wrap(cls: type[Strategy]) -> type[Strategy]:
        STRATEGIES.register(name, StrategySpec(name, methodology, cls, description))
        return cls

    return wrap
