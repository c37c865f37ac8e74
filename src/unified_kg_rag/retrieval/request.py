"""A request to the chain, checked before anything is read or any model is called.

`build_input` turns the arguments of `RAGChain`'s methods into one `RAGInput`; `check_request`
validates it and returns the question and the query settings in effect (`QueryConfig` with
the request's overrides); `check_index` checks the index can answer at all. Every failure is
a one-line error naming the field.

Text that is not valid Unicode (lone UTF-16 surrogates: a command line decoded with
``surrogateescape`` from bytes that are not UTF-8, a library caller's broken string) cannot
be encoded as UTF-8, so it would fail later, far from its cause: in the tokenizer, a SQLite
write, the JSON output or the terminal. It is settled here, per field:

- the question is repaired (a lone surrogate becomes U+FFFD, a split pair is joined): the
  rest of the question still finds its passages, and the output shows what was searched;
- filter values, the conversation and user ids, the strategy and every other text setting
  are refused: a repaired filter value would silently match nothing, and two different
  broken ids could be repaired into one (one user reading another's conversation).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from unified_kg_rag.config.query import QueryConfig
from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.models import Collection, SearchMode
from unified_kg_rag.domain.text.analysis import repair_unicode
from unified_kg_rag.ports import Embedder, IndexStores
from unified_kg_rag.retrieval.models import FILTER_FIELDS, MAX_QUESTION_CHARS, FilterMap, RAGInput
from unified_kg_rag.retrieval.strategies import STRATEGIES
from unified_kg_rag.util.errors import EmbeddingMismatchError, NotFoundError, UsageError

__all__ = ["build_input", "check_index", "check_request", "effective_config", "no_such_index"]


def build_input(
    question: str | RAGInput, filters: FilterMap | None, overrides: Mapping[str, object]
) -> RAGInput:
    """Merge a question (or a `RAGInput`) with a call's filters and overrides.

    The call's filters replace the input's; its overrides are laid over the input's.
    """
    if isinstance(question, RAGInput):
        if filters is None and not overrides:
            return question
        merged = {**question.overrides, **overrides}
        chosen = question.filters if filters is None else dict(filters)
        return question.model_copy(update={"filters": chosen, "overrides": merged})
    return RAGInput(question=question, filters=dict(filters or {}), overrides=dict(overrides))


def effective_config(base: QueryConfig, inp: RAGInput) -> QueryConfig:
    """Return ``base`` with the request's overrides (and its strategy) applied.

    Raises:
        UsageError: an unknown setting, or a value the setting refuses (``query.<field>``).
    """
    overrides = dict(inp.overrides)
    if inp.strategy is not None and overrides.get("strategy") is None:
        overrides["strategy"] = inp.strategy
    unknown = sorted(k for k in overrides if k not in QueryConfig.model_fields)
    if unknown:
        raise UsageError(f"unknown query setting(s): {', '.join(unknown)}", field="overrides")
    values = {k: v for k, v in overrides.items() if v is not None}
    for key, value in values.items():
        _refuse_invalid_text(value, f"query.{key}")
    if not values:
        return base
    try:
        return QueryConfig.model_validate({**base.model_dump(), **values})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise UsageError(first["msg"], field=f"query.{field}") from exc


def check_request(inp: RAGInput, base: QueryConfig) -> tuple[RAGInput, str, QueryConfig]:
    """Validate a request; return it (its question repaired), the question and its settings.

    Returns:
        The request with its question as valid Unicode (what the output echoes and the
        conversation stores), the question stripped, and the settings in effect.

    Raises:
        UsageError: a blank or overlong question, an unknown filter field, a filter value,
            id or setting that is not valid Unicode, a ``rerank`` override, a bad setting, or
            both ``history`` and ``conversation_id``.
    """
    repaired = repair_unicode(inp.question)
    if repaired is not inp.question:
        inp = inp.model_copy(update={"question": repaired})
    question = repaired.strip()
    if not question:
        raise UsageError("must not be empty", field="question")
    unknown = sorted(k for k in inp.filters if k not in FILTER_FIELDS)
    if unknown:
        raise UsageError(
            f"unknown filter field(s) {', '.join(map(repr, unknown))}; passages can be "
            f"filtered on {', '.join(FILTER_FIELDS)}",
            field="filters",
        )
    for key, value in inp.filters.items():
        _refuse_invalid_text(value, f"filters.{key}")
        _refuse_unmatchable(value, f"filters.{key}")
    inp = _checked_history(inp)
    _refuse_invalid_text(inp.conversation_id, "conversation_id")
    _refuse_invalid_text(inp.user_id, "user_id")
    _refuse_invalid_text(inp.strategy, "strategy")
    if len(question) > MAX_QUESTION_CHARS:
        raise UsageError(
            f"is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}",
            field="question",
        )
    if "rerank" in inp.overrides:
        raise UsageError(
            "query.rerank cannot change for one call: the reranker is built with the app "
            "(set it in ukr.yaml or UKR_QUERY__RERANK__*)",
            field="overrides",
        )
    _refuse_swapped_names(inp)
    return inp, question, effective_config(base, inp)


_INT64 = 2**63
"""Integers a filter may hold: what the stores keep (SQLite and PostgreSQL 64-bit)."""


def _refuse_unmatchable(value: object, field: str) -> None:
    """Refuse a filter no stored value can pass: an empty list, an integer past 64 bits.

    Raises:
        UsageError: the filter is an empty list, or holds an integer outside ±2⁶³.
    """
    values = value if isinstance(value, list | tuple) else [value]
    if not values:
        raise UsageError("an empty list matches nothing; leave the filter out", field=field)
    for item in values:
        if isinstance(item, int) and not isinstance(item, bool) and not -_INT64 <= item < _INT64:
            raise UsageError(f"{item} is out of range (a stored number fits 64 bits)",
                             field=field)  # fmt: skip


def _checked_history(inp: RAGInput) -> RAGInput:
    """Return ``inp`` with its history's text repaired as the question's is.

    Raises:
        UsageError: both ``history`` and ``conversation_id`` given (two memories).
    """
    if not inp.history:
        return inp
    if inp.conversation_id is not None:
        raise UsageError(
            "give either history (the caller keeps the conversation) or conversation_id "
            "(the index keeps it), not both",
            field="history",
        )
    turns = [
        t.model_copy(update={"question": repair_unicode(t.question),
                             "answer": repair_unicode(t.answer)})
        for t in inp.history
    ]  # fmt: skip
    return inp.model_copy(update={"history": turns})


def _refuse_swapped_names(inp: RAGInput) -> None:
    """Refuse a search mode given as the strategy, or a strategy given as the search mode.

    ``hybrid`` is both (LightRAG's strategy, the BM25 + vector mode) and is never refused.

    Raises:
        UsageError: naming the option the value belongs to.
    """
    modes = tuple(SearchMode)
    strategy = inp.overrides.get("strategy") or inp.strategy
    if isinstance(strategy, str) and strategy in modes and strategy not in STRATEGIES:
        raise UsageError(
            f"{strategy!r} is a search mode, not a strategy: use `--mode {strategy}` "
            f"(strategies: {', '.join(STRATEGIES.names())})",
            field="query.strategy",
        )
    mode = inp.overrides.get("search_mode")
    if isinstance(mode, str) and mode not in modes and mode in STRATEGIES:
        raise UsageError(
            f"{mode!r} is a strategy, not a search mode: use `--strategy {mode}` (search "
            f"modes: {', '.join(modes)})",
            field="query.search_mode",
        )


def no_such_index(name: str, existing: Sequence[str]) -> NotFoundError:
    """The error for index ``name``, which is not among the project's ``existing`` indexes.

    One line naming the index and listing the existing ones (the service answers 404).
    """
    listed = ", ".join(existing) if existing else "none yet"
    return NotFoundError(
        f"no index {name!r} in this project (indexes: {listed}); index documents into it "
        f"with `ukr index PATH --index {name}`",
        kind="index", key=name, field="index",
    )


async def check_index(stores: IndexStores, embedder: Embedder) -> tuple[str, ...]:
    """Check the index can be queried with ``embedder``; return the methodologies it holds.

    Raises:
        UsageError: the index holds no text units (nothing indexed, another index, or its
            first build is running: then the message says so).
        EmbeddingMismatchError: the index was built with another embedding model.
        StoreError: a store failed.
    """
    name = stores.name
    if await stores.search.count(Collection.TEXT_UNITS) == 0:
        await _refuse_while_first_build_runs(stores)
        raise UsageError(
            f"index {name!r} holds no text units; index documents first with "
            f"`ukr index PATH --index {name}`",
            field="index",
        )
    bound = await stores.search.embedding()
    if bound is not None and bound[0] != embedder.model_id:
        raise EmbeddingMismatchError(
            f"index {name!r} was built with embedding model {bound[0]!r}; the configured "
            f"model is {embedder.model_id!r}. Configure the original model to query it"
        )
    return parse_methodologies(await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY))


async def _refuse_while_first_build_runs(stores: IndexStores) -> None:
    """Say so when an empty index is empty because its first build is running.

    A build holds the index's write lease (`domain.index.write_lease`); its passages become
    searchable as it stores them, so "index documents first" would mislead.

    Raises:
        UsageError: a live lease is held on the index (names its holder and age).
    """
    lease = await stores.registry.get_lease()
    now = time.time()
    if lease is None or lease.expires_at <= now:
        return
    age = max(now - lease.acquired_at, 0.0)
    raise UsageError(
        f"index {stores.name!r} holds no text units yet: a build is running ({lease.holder}, "
        f"started {age:.0f} s ago); its passages become searchable as it stores them, so "
        "query again in a moment",
        field="index",
    )


def _refuse_invalid_text(value: object, field: str) -> None:
    """Refuse ``value`` (a string, or a list of them) when it is not valid Unicode.

    Raises:
        UsageError: naming ``field``, its first surrogate code point and its position.
    """
    values = value if isinstance(value, list | tuple) else [value]
    for item in values:
        if isinstance(item, str) and repair_unicode(item) != item:
            at = next(i for i, ch in enumerate(item) if "\ud800" <= ch <= "\udfff")
            raise UsageError(
                f"is not valid Unicode text: it holds a surrogate code point "
                f"(U+{ord(item[at]):04X} at character {at + 1}), as bytes that are not UTF-8 "
                f"decode to; the value was {ascii(item)[:80]}",
                field=field,
            )
