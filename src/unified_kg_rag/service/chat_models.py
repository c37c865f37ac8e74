"""The models the chat protocols offer: one per index and strategy it serves, named per protocol.

A chat client picks a "model"; here a model is an index asked with one strategy:

| protocol | one strategy | the default strategy (``query.strategy``) |
|---|---|---|
| OpenAI (``/v1``) | ``ukr/<index>/<strategy>`` | ``ukr/<index>`` |
| Ollama (``/api``) | ``ukr-<index>:<strategy>`` | ``ukr-<index>:latest``, ``ukr-<index>`` |

Index names hold neither ``/`` nor ``:`` (`bootstrap.validate_index_name`) and strategy names
are plain words, so each name parses one way. Ollama names use the tag for the strategy
because Ollama tags are variants of one model (``llama3:8b``) and a name without a tag means
``:latest``. A model is offered while the index serves its strategy (`strategy_catalog`); the
protocols list exactly the models that resolve. Which index and strategy a name means, and
which are served, lives here only; the protocol modules only translate.
"""

from __future__ import annotations

from dataclasses import dataclass

from unified_kg_rag.bootstrap import App
from unified_kg_rag.retrieval.catalog import StrategyCatalog, strategy_catalog
from unified_kg_rag.util.errors import UsageError

__all__ = ["ChatModelRef", "UnknownModelError", "parse_model", "resolve_model", "served_models"]

OPENAI_PREFIX = "ukr/"
OLLAMA_PREFIX = "ukr-"
OLLAMA_DEFAULT_TAG = "latest"


class UnknownModelError(UsageError):
    """A chat request names a model this service does not offer (the protocols answer 404).

    Attributes:
        model: the name as given.
    """

    def __init__(self, model: str, reason: str) -> None:
        super().__init__(f"{model!r} does not exist: {reason}", field="model")
        self.model = model


@dataclass(frozen=True)
class ChatModelRef:
    """One offered model: an index asked with one strategy.

    Attributes:
        index: the index name.
        strategy: the strategy; None: the configured default (``query.strategy``).
        resolved: the strategy that runs (``strategy``, or the default's name).
        description: the strategy's one line.
    """

    index: str
    strategy: str | None
    resolved: str
    description: str

    @property
    def openai_id(self) -> str:
        """``ukr/<index>/<strategy>``, or ``ukr/<index>`` for the default strategy."""
        tail = f"/{self.strategy}" if self.strategy else ""
        return f"{OPENAI_PREFIX}{self.index}{tail}"

    @property
    def ollama_name(self) -> str:
        """``ukr-<index>:<strategy>``, or ``ukr-<index>:latest`` for the default strategy."""
        return f"{OLLAMA_PREFIX}{self.index}:{self.strategy or OLLAMA_DEFAULT_TAG}"


def parse_model(name: str) -> tuple[str, str | None] | None:
    """Read a model name of either protocol as ``(index, strategy or None)``.

    Returns:
        None when the name has neither form (an index is not checked to exist here).
    """
    if name.startswith(OPENAI_PREFIX):
        index, _, strategy = name.removeprefix(OPENAI_PREFIX).partition("/")
        return (index, strategy or None) if index else None
    if name.startswith(OLLAMA_PREFIX):
        index, _, tag = name.removeprefix(OLLAMA_PREFIX).partition(":")
        return (index, None if tag in ("", OLLAMA_DEFAULT_TAG) else tag) if index else None
    return None


async def served_models(app: App) -> list[ChatModelRef]:
    """Every model offered now: per index, its default strategy, then each served strategy.

    Raises:
        StoreError: a store failed.
    """
    out: list[ChatModelRef] = []
    for name in await app.backend.list_indexes():
        out.extend(_models_of(await strategy_catalog(app.index(name)), app.config.query.strategy))
    return out


async def resolve_model(app: App, name: str) -> ChatModelRef:
    """Return the offered model ``name`` names (either protocol's form).

    Raises:
        UnknownModelError: not a ``ukr`` model name, no such index, or a strategy the index
            does not serve (the message says which, and how to get it served).
        StoreError: a store failed.
    """
    parsed = parse_model(name)
    if parsed is None:
        raise UnknownModelError(name, "models are named ukr/<index>[/<strategy>] (OpenAI) "
                                      "or ukr-<index>[:<strategy>] (Ollama)")  # fmt: skip
    index, strategy = parsed
    if index not in await app.backend.list_indexes():
        raise UnknownModelError(name, f"there is no index {index!r}")
    catalog = await strategy_catalog(app.index(index))
    for ref in _models_of(catalog, app.config.query.strategy):
        if ref.strategy == strategy:
            return ref
    if catalog.note:
        raise UnknownModelError(name, catalog.note)
    info = next((s for s in catalog.strategies if s.name == (strategy or "")), None)
    if info is None:
        if strategy is None:
            raise UnknownModelError(name, f"index {index!r} does not serve the default "
                                          f"strategy {app.config.query.strategy!r}")  # fmt: skip
        raise UnknownModelError(name, f"there is no strategy {strategy!r}")
    raise UnknownModelError(name, f"index {index!r} does not serve {strategy!r}: {info.how}")


def _models_of(catalog: StrategyCatalog, default: str) -> list[ChatModelRef]:
    served = {s.name: s for s in catalog.strategies if s.served}
    out = []
    if default in served:
        out.append(ChatModelRef(catalog.index, None, default, served[default].description))
    out.extend(ChatModelRef(catalog.index, s.name, s.name, s.description)
               for s in served.values())  # fmt: skip
    return out
