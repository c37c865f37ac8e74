"""The strategy contract and its registry.

A strategy turns a question into candidate *buckets* (ranked lists, each with an RRF weight)
and optional *synthesized* sections (global search's key points); the chain fuses the buckets,
reranks, diversifies, applies the per-type quotas, packs and answers. A strategy that already
ranks its candidates returns a plain list (one bucket). Strategies register with
`register_strategy`, naming the methodology whose artefacts they read (None: only text units,
which every index holds), so the chain can refuse a query the index cannot serve before any
model call.

Sub-searches run through `QueryContext.section`: a fatal error (store, configuration,
authentication, query embedding; `is_fatal`) fails the query, any other failure degrades
only that section and is reported in the output's metadata (seed 000 §8.1).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.index.methodologies import how_to_build
from unified_kg_rag.domain.llm.deadline import QueryDeadline
from unified_kg_rag.domain.llm.roles import ModelRole, RoleModels
from unified_kg_rag.domain.models import Completion, MetadataValue, SearchMode
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.domain.ranking.fusion import weighted_rrf
from unified_kg_rag.ports import ChatModel, Embedder, IndexStores
from unified_kg_rag.util.errors import (
    ConfigurationError,
    EmbeddingModelError,
    MethodologyNotIndexedError,
    ModelError,
    StoreError,
    UsageError,
)
from unified_kg_rag.util.registry import Registry

if TYPE_CHECKING:
    from unified_kg_rag.retrieval.query_processing import QueryKeywords
    from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph
    from unified_kg_rag.retrieval.strategies.tree import LoadedTree

__all__ = [
    "SECTION_KINDS",
    "STRATEGIES",
    "Bucket",
    "BuildCache",
    "Candidate",
    "QueryContext",
    "Selection",
    "Strategy",
    "StrategyResult",
    "StrategySpec",
    "fuse",
    "is_fatal",
    "register_strategy",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

CandidateKind = Literal[
    "text_unit", "entity", "relationship", "claim", "report", "summary", "key_points", "notes"
]
"""Section types: the six searchable ones (``summary``: a node of the `raptor` summary tree;
``claim``: a claim, with claim extraction on), and two synthesized ones (`global`'s key points,
`drift`'s intermediate answers)."""

SECTION_KINDS: tuple[str, ...] = (
    "key_points", "notes", "report", "summary", "entity", "relationship", "claim", "text_unit"
)
"""Context order of the section types: synthesized first, then reports, tree summaries,
entities, relationships, claims and the passages (GraphRAG local search's order, claims as its
covariates; a summary, index content a model wrote at ingestion like a report, sits beside the
reports)."""


def is_fatal(exc: BaseException) -> bool:
    """True when ``exc`` must fail the whole query rather than degrade one section.

    Decided by type alone (seed 000 §8.1): store failures, configuration and usage errors,
    a missing methodology, the query embedding, and model errors that say access is denied
    (HTTP 401/403) are fatal; anything else (one failed search, a model reply that cannot be
    read, a model error after retries) degrades only the section that raised it.
    """
    if isinstance(
        exc,
        StoreError | ConfigurationError | UsageError | MethodologyNotIndexedError
        | EmbeddingModelError,
    ):
        return True
    return isinstance(exc, ModelError) and exc.status_code in (401, 403)


@dataclass(frozen=True)
class Candidate:
    """A context candidate a strategy found, with its provenance.

    Attributes:
        kind: ``text_unit``, ``entity``, ``relationship``, ``claim``, ``report``, ``summary``,
            or a synthesized section (``key_points``, ``notes``).
        id: the item id (text-unit, entity, relationship, community or summary-node id).
        text: the item text as it goes into the context.
        score: the strategy's score (higher is better; only the order within a bucket counts).
        document_id: the source document, for text units.
        path: the document's relative path.
        location: the document's full path, when known.
        title: the document's title.
        text_unit_ids: the text units the item rests on.
        start_char: offset in the document, for text units.
        end_char: end offset in the document.
        document_ids: the documents of ``text_unit_ids``, for graph items (first seen first).
        metadata: provenance beyond the fields above (a report's level, a relationship's
            endpoints ...), JSON scalars.
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
    document_ids: tuple[str, ...] = ()
    metadata: dict[str, MetadataValue] = field(default_factory=dict)


@dataclass
class Bucket:
    """One ranked list of candidates for fusion.

    Attributes:
        name: what produced it (``chunks``, ``entity_chunks``, ``entities`` ...), reported in
            the output's metadata.
        candidates: best first; candidates of several kinds may share a bucket.
        weight: the list's weight in weighted RRF.
    """

    name: str
    candidates: list[Candidate]
    weight: float = 1.0


def fuse(buckets: Sequence[Bucket], rrf_k: int) -> list[Candidate]:
    """Fuse ranked buckets into one ranking by weighted RRF over ``(kind, id)``.

    One bucket keeps its order. A candidate found by several buckets keeps the first
    bucket's copy; its score becomes the fused RRF score.
    """
    live = [b for b in buckets if b.candidates and b.weight > 0]
    if not live:
        return []
    if len(live) == 1:
        return list(live[0].candidates)
    first: dict[str, Candidate] = {}
    lists: list[list[str]] = []
    for b in live:
        keys = []
        for c in b.candidates:
            key = f"{c.kind}\x00{c.id}"
            first.setdefault(key, c)
            keys.append(key)
        lists.append(keys)
    fused = weighted_rrf(lists, [b.weight for b in live], k=rrf_k)
    return [dataclasses.replace(first[key], score=score) for key, score in fused]


Selection = Callable[[dict[str, list[Candidate]]], Awaitable[dict[str, list[Candidate]]]]
"""A strategy's last step on the chain's per-kind selection (`StrategyResult.finish`)."""


@dataclass
class StrategyResult:
    """What a strategy found for one question.

    Attributes:
        buckets: ranked lists, fused by weighted RRF (one bucket keeps its order).
        synthesized: sections the strategy wrote (key points, intermediate answers), placed
            first in the context in this order, outside the quotas (they count against the
            budget first).
        answer_style: the strategy's default answer prompt (``comprehensive`` for `global`),
            used when ``query.answer_style`` is ``auto``.
        cannot_answer: a reason the strategy found nothing relevant (global search rejected
            every key point); the chain answers "cannot answer" with it, without an answer call.
        pinned: passages the context must hold (`auto`'s rare-term matches), best first: the
            chain seats them after the type's best ``query.auto.rare_term_after`` candidates,
            after reranking and MMR, within the type's quota (`retrieval.context.seat_pinned`).
        quotas: kind -> items kept, in place of the configured quota of that kind
            (`retrieval.context.quota_of`): `tree` keeps ``query.tree.text_top_k`` passages.
        finish: a last step the chain awaits on the selection (kind -> candidates, best
            first) after reranking, MMR, quotas and pinning, before packing; it returns the
            selection to pack (`tree` caps summaries per level and adds each kept summary's
            passages). None: the selection is packed as it is.
    """

    buckets: list[Bucket] = field(default_factory=list)
    synthesized: list[Candidate] = field(default_factory=list)
    answer_style: str | None = None
    cannot_answer: str | None = None
    pinned: list[Candidate] = field(default_factory=list)
    quotas: dict[str, int] = field(default_factory=dict)
    finish: Selection | None = None


_Loaded = TypeVar("_Loaded")


class BuildCache(Generic[_Loaded]):
    """Structures loaded from an index build, kept for the next queries (least recent out).

    Keyed by index name and build digest, so a new build is loaded afresh. The `App` owns
    one per structure and hands it to every chain it builds (`bootstrap.App.chain`); a
    chain built by hand keeps its own. Not shared through module state: two apps in one
    process never see each other's indexes.
    """

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._items: OrderedDict[tuple[str, str], _Loaded] = OrderedDict()

    def get(self, index: str, digest: str) -> _Loaded | None:
        """Return what was loaded for ``index`` at build ``digest``, or None."""
        item = self._items.get((index, digest))
        if item is not None:
            self._items.move_to_end((index, digest))
        return item

    def put(self, index: str, digest: str, item: _Loaded) -> None:
        """Keep ``item`` for ``index`` at build ``digest``, dropping the least recent past size."""
        self._items[(index, digest)] = item
        self._items.move_to_end((index, digest))
        while len(self._items) > self._size:
            self._items.popitem(last=False)


@dataclass
class QueryContext:
    """What a strategy may use to answer one question.

    Attributes:
        question: the question, stripped.
        stores: the index's store ports.
        embedder: the embedding model.
        chat_model: the default LLM, or None.
        models: the model of each role (`domain.llm.roles`); None: ``chat_model`` serves
            every role. Strategies ask `model` for their role's (``query``, ``answer``).
        config: query settings in effect (CLI overrides applied).
        filters: equality filters on text-unit fields.
        held: the methodologies the index holds.
        metadata: what the strategy reports (``degraded`` sections, ``llm_calls``,
            ``report_selection`` ...); returned in the output's metadata.
        deadline: the query's deadline (``query.deadline_s``), None without one. Model
            calls are bound by it already (`domain.llm.deadline`); a strategy reads it to
            start no new round of calls once it has passed.
        concept_graphs: loaded `lazy` concept graphs kept between queries (`BuildCache`).
        summary_trees: loaded `raptor` summary trees kept between queries (`BuildCache`).
        prompts: the prompt templates in effect (packaged, or the user's overrides).
    """

    question: str
    stores: IndexStores
    embedder: Embedder
    chat_model: ChatModel | None
    config: QueryConfig
    models: RoleModels[ChatModel] | None = None
    filters: dict[str, MetadataValue | Sequence[MetadataValue]] = field(default_factory=dict)
    held: tuple[str, ...] = ()
    metadata: dict[str, object] = field(default_factory=dict)
    deadline: QueryDeadline | None = None
    concept_graphs: BuildCache[LoadedConceptGraph] = field(default_factory=BuildCache)
    summary_trees: BuildCache[LoadedTree] = field(default_factory=BuildCache)
    prompts: PromptLibrary = PACKAGED
    _query_vector: NDArray[np.float32] | None = None
    _vector_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _keywords: QueryKeywords | None = None
    _entities: list[str] | None = None

    def model(self, role: ModelRole) -> ChatModel | None:
        """Return the model serving ``role`` (``chat_model`` without ``models``), or None."""
        return self.chat_model if self.models is None else self.models.for_role(role)

    async def query_vector(self) -> NDArray[np.float32]:
        """Return the question's embedding (computed once per query), ``ndarray[d] float32``.

        Raises:
            EmbeddingModelError: the embedding model failed (fatal to the query).
        """
        async with self._vector_lock:  # concurrent sub-searches embed the question once
            if self._query_vector is None:
                self._query_vector = await self.embedder.embed_query(self.question)
        return self._query_vector

    async def keywords(self) -> QueryKeywords:
        """Return the question's high- and low-level keywords (LightRAG), computed once.

        By the LLM when one is configured and ``query.llm_query_processing`` is on; else (or
        when its reply cannot be read) the raw question serves as both (seed 000 §6.2).
        """
        if self._keywords is None:
            from unified_kg_rag.retrieval.query_processing import extract_keywords

            self._keywords = await extract_keywords(self)
        return self._keywords

    async def query_entities(self) -> list[str]:
        """Return the entity names the question mentions (GraphRAG local), computed once.

        By the LLM when one is configured and ``query.llm_query_processing`` is on; else the
        names of indexed entities found in the question, or the question itself when it names
        none.
        """
        if self._entities is None:
            from unified_kg_rag.retrieval.query_processing import extract_query_entities

            self._entities = await extract_query_entities(self)
        return self._entities

    async def section(self, name: str, work: Callable[[], Awaitable[T]], default: T) -> T:
        """Run one sub-search; a non-fatal failure degrades only it.

        Args:
            name: the section's name, as reported under ``metadata["degraded"]``.
            work: the sub-search.
            default: returned when it failed non-fatally.

        Raises:
            The error of ``work`` when `is_fatal` says so.
        """
        try:
            return await work()
        except Exception as exc:
            if is_fatal(exc):
                raise
            logger.warning("section %s degraded: %s", name, exc)
            degraded = self.metadata.setdefault("degraded", {})
            assert isinstance(degraded, dict)
            degraded[name] = f"{type(exc).__name__}: {exc}"
            return default

    def note_reply(self, step: str, reply: Completion) -> None:
        """Record a cut reply of ``step`` (``global_map.2``) in ``metadata["incomplete_replies"]``.

        A reply the model did not finish (`Completion.complete` false: the length limit, a
        content filter ...) is still used; the answer built on it says so.
        """
        if reply.complete:
            return
        cut = self.metadata.setdefault("incomplete_replies", {})
        if isinstance(cut, dict):
            cut[step] = reply.finish_reason

    @property
    def out_of_time(self) -> bool:
        """True once the query's deadline has passed (never without one)."""
        return self.deadline is not None and self.deadline.passed

    def count_llm_call(self, n: int = 1) -> None:
        """Count ``n`` model calls made by the strategy (``metadata["llm_calls"]``)."""
        calls = self.metadata.get("llm_calls", 0)
        self.metadata["llm_calls"] = (calls if isinstance(calls, int) else 0) + n


class Strategy(Protocol):
    """Finds ranked context candidates for a question."""

    async def retrieve(self, ctx: QueryContext) -> list[Candidate] | StrategyResult:
        """Return candidates, best first (one bucket), or buckets to fuse.

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
        answer: ``generative`` (one answer call over the packed context) or ``map_reduce``
            (`lazy`: an answer per batch of sources, then one that joins them).
        wraps: for a strategy that runs another (``iterative``), the name of the one it
            runs under a query config; its methodology is then the wrapped one's.
    """

    name: str
    methodology: str | tuple[str, ...] | None
    factory: Callable[[], Strategy]
    description: str
    answer: Literal["generative", "map_reduce"] = "generative"
    wraps: Callable[[QueryConfig], str] | None = None

    @property
    def needs(self) -> tuple[str, ...]:
        """The methodologies any one of which lets it serve (empty: every index).

        A wrapper's are those of the strategy it wraps under the default query config.
        """
        return self.needs_for(None)

    def needs_for(self, config: QueryConfig | None) -> tuple[str, ...]:
        """The methodologies it needs under ``config`` (None: the default query config)."""
        if self.wraps is not None:
            config = config if config is not None else QueryConfig()
            return STRATEGIES.get(self.wraps(config)).needs_for(config)
        m = self.methodology
        return () if m is None else (m,) if isinstance(m, str) else m

    def serves(self, held: Sequence[str], config: QueryConfig | None = None) -> bool:
        """True when an index holding ``held`` methodologies can serve it (under ``config``)."""
        needs = self.needs_for(config)
        return not needs or any(m in held for m in needs)

    def require(
        self, held: Sequence[str], index: str, config: QueryConfig | None = None
    ) -> None:
        """Check that index ``index`` (holding ``held``) can serve this strategy.

        Args:
            held: the methodologies the index holds.
            index: the index name, for the message.
            config: the query config in effect (a wrapper's needs follow it; None: defaults).

        Raises:
            MethodologyNotIndexedError: it cannot; the message names what the index holds.
        """
        if self.serves(held, config):
            return
        needs = self.needs_for(config)
        via = ""
        if self.wraps is not None:
            via = f" (through {self.wraps(config or QueryConfig())!r}, the strategy it wraps)"
        raise MethodologyNotIndexedError(
            f"strategy {self.name!r} needs the {' or '.join(repr(m) for m in needs)} "
            f"methodology{via}, which index {index!r} does not hold (it holds: "
            f"{', '.join(held) or 'text units only'}); {how_to_build(needs)}. "
            f"`ukr strategies` lists the strategies this index serves{self._mode_note()}",
            index=index,
            held=tuple(held),
        )

    def _mode_note(self) -> str:
        """Tell a strategy named like a search mode (LightRAG's ``hybrid``) from the mode."""
        if self.name not in tuple(SearchMode):
            return ""
        return (f". `--strategy {self.name}` is a graph strategy; `--mode {self.name}` is the "
                "search mode of the passage searches (e.g. `--strategy naive --mode "
                f"{self.name}`)")  # fmt: skip


STRATEGIES: Registry[StrategySpec] = Registry("strategy", field="query.strategy")


def register_strategy(
    name: str,
    *,
    methodology: str | tuple[str, ...] | None,
    description: str,
    answer: Literal["generative", "map_reduce"] = "generative",
    wraps: Callable[[QueryConfig], str] | None = None,
) -> Callable[[type[Strategy]], type[Strategy]]:
    """Class decorator registering a strategy under ``name`` (see `StrategySpec`).

    ``wraps`` (a wrapper strategy): the name of the strategy it runs under a query config;
    its methodology is then resolved through that one (`StrategySpec.needs_for`).
    """

    def wrap(cls: type[Strategy]) -> type[Strategy]:
        STRATEGIES.register(
            name, StrategySpec(name, methodology, cls, description, answer, wraps)
        )
        return cls

    return wrap
