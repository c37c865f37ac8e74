"""OpenTelemetry spans when ``opentelemetry-api`` is installed; a no-op when it is not.

Library code opens spans with `span` and never imports ``opentelemetry`` itself::

    with span("ukr.stage.semantic", {"ukr.stage.name": "semantic"}) as current:
        ...
        current.set_attribute("ukr.stage.candidates_out", 50)

The tracer is ``opentelemetry.trace.get_tracer("unified_kg_rag")``: spans go wherever the
user's `TracerProvider` sends them (one they install, or the one the ``OTEL_*`` environment
variables configure through ``opentelemetry-instrument``). With the API alone (no SDK, no
provider set: FastAPI installs the API) or without the package, `span` returns one shared
do-nothing context manager (`NOOP_SPAN`): no span object, no context change. The import is
tried once (`refresh` tries again); whether a provider is set is asked at each span, so a
provider installed after the first query is used from the next span on. The optional extra
``otel`` installs the API and the SDK; no exporter is a dependency (docs/guides/observability.md).

A span ends with the ``with`` block; an exception leaving the block is recorded on it and
sets its status to ERROR (the SDK's default), then propagates unchanged.

Span names of the product: ``ukr.index.run`` and ``ukr.index.<phase>``, ``ukr.query``,
``ukr.pipeline``, ``ukr.stage.<name>``, ``ukr.pipeline.scoring``, ``ukr.llm.complete``,
``ukr.llm.stream``, ``ukr.embed``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any, ParamSpec, Protocol, TypeVar

from unified_kg_rag.util.correlation import query_scope, run_scope
from unified_kg_rag.util.errors import ModelError

__all__ = [
    "NOOP_SPAN",
    "AttributeValue",
    "Span",
    "enabled",
    "in_run_span",
    "note_model_error",
    "query_span",
    "refresh",
    "run_span",
    "set_current_attribute",
    "span",
    "traced",
]

P = ParamSpec("P")
T = TypeVar("T")

AttributeValue = str | bool | int | float | Sequence[str]
"""What a span attribute may hold (None values are left out)."""


class Span(Protocol):
    """The part of an OpenTelemetry span that library code uses."""

    def set_attribute(self, key: str, value: Any) -> object:
        """Set one attribute."""
        ...


class _NoSpan(AbstractContextManager["_NoSpan"]):
    """The do-nothing span and its context manager, in one shared object."""

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def set_attribute(self, key: str, value: Any) -> _NoSpan:
        """Do nothing."""
        return self


NOOP_SPAN = _NoSpan()
"""What `span` returns without ``opentelemetry``: enters as itself, records nothing."""

_UNRESOLVED: Any = object()
_tracer: Any = _UNRESOLVED
_global_tracer: Any = None  # the tracer of the process-wide provider (`trace.get_tracer`)
_trace: Any = None  # the ``opentelemetry.trace`` module
_unset: tuple[type, ...] = ()  # the provider classes that mean "no provider was set"
_provider_set = False  # a provider was seen set (`_recording`)
_provider_from_env = False  # OTEL_PYTHON_TRACER_PROVIDER names one (read at the first span)


def _resolve() -> Any:
    """The package's tracer, or None when ``opentelemetry`` cannot be imported."""
    global _tracer, _global_tracer, _trace, _unset, _provider_from_env
    if _tracer is _UNRESOLVED:
        try:
            from opentelemetry import trace
        except ImportError:
            _tracer = None
        else:
            _trace = trace
            _unset = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
            _provider_from_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
            _tracer = _global_tracer = trace.get_tracer("unified_kg_rag")
    return _tracer


def refresh() -> None:
    """Look for ``opentelemetry`` again at the next span (after installing it; tests)."""
    global _tracer, _provider_set
    _tracer = _UNRESOLVED
    _provider_set = False


def _recording(tracer: Any) -> bool:
    """Whether spans of ``tracer`` may record.

    False when ``tracer`` is the global one and no provider is set: its spans would be
    non-recording, so none is made (a provider set later is seen at the next span).
    """
    global _provider_set
    if tracer is not _global_tracer or _provider_set:
        return True
    # a provider, once set, is never replaced (OpenTelemetry refuses): remember it. The
    # module's global is read directly: `get_tracer_provider` looks up the environment on
    # every call (a few microseconds); it is used when a variable may name a provider, or
    # when a later API version moved the global.
    current = getattr(_trace, "_TRACER_PROVIDER", _UNRESOLVED)
    if current is _UNRESOLVED or _provider_from_env:
        current = _trace.get_tracer_provider()
    _provider_set = current is not None and not isinstance(current, _unset)
    return _provider_set


def enabled() -> bool:
    """Whether ``opentelemetry`` is importable (spans may be recorded)."""
    return _resolve() is not None


def span(
    name: str, attributes: Mapping[str, AttributeValue | None] | None = None
) -> AbstractContextManager[Span]:
    """A context manager for a span named ``name``, current inside the block.

    Args:
        name: the span's name (low cardinality: ``ukr.stage.semantic``, not a question).
        attributes: its attributes at start; None values are left out.

    Returns:
        The OpenTelemetry ``start_as_current_span`` context manager, or `NOOP_SPAN`.
    """
    tracer = _tracer if _tracer is not _UNRESOLVED else _resolve()
    if tracer is None or not _recording(tracer):
        return NOOP_SPAN
    kept = {k: v for k, v in attributes.items() if v is not None} if attributes else None
    manager: AbstractContextManager[Span] = tracer.start_as_current_span(name, attributes=kept)
    return manager


def set_current_attribute(key: str, value: AttributeValue) -> None:
    """Set an attribute on the span current in this task (a no-op without a span or package)."""
    if (_tracer if _tracer is not _UNRESOLVED else _resolve()) is None:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attribute(key, value)


@contextmanager
def query_span() -> Iterator[Span]:
    """The scope of one query: its id (`util.correlation.query_scope`) and its span.

    The span is ``ukr.query`` with the attribute ``ukr.query.id`` (the id every log record
    of the query carries); the chain adds ``ukr.query.strategy`` once it is known. Inside
    another query's scope the id is the outer one.
    """
    with query_scope() as query_id, span("ukr.query", {"ukr.query.id": query_id}) as current:
        yield current


@contextmanager
def run_span(**attributes: AttributeValue | None) -> Iterator[Span]:
    """The scope of one index run: its id (`util.correlation.run_scope`) and its span.

    The span is ``ukr.index.run`` with ``ukr.run.id`` and ``attributes`` (prefixed
    ``ukr.index.``); the pipeline's phases are its children (``ukr.index.<phase>``).
    """
    with run_scope() as run_id:
        fields = {f"ukr.index.{k}": v for k, v in attributes.items()}
        with span("ukr.index.run", {"ukr.run.id": run_id, **fields}) as current:
            yield current


async def traced(name: str, work: Awaitable[T], **attributes: AttributeValue | None) -> T:
    """Await ``work`` inside a span ``name`` (attributes prefixed ``ukr.``); return its result.

    For a phase of a longer job: ``hashed = await traced("ukr.index.hash", hash_all(files))``.
    """
    with span(name, {f"ukr.{k}": v for k, v in attributes.items()}):
        return await work


def in_run_span(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Decorate an index or delete run: its whole call is one `run_span` (id and span)."""

    @functools.wraps(method)
    async def scoped(*args: P.args, **kwargs: P.kwargs) -> T:
        with run_span(operation=method.__name__):
            return await method(*args, **kwargs)

    return scoped


def note_model_error(current: Span, exc: BaseException) -> None:
    """Set ``error.type`` and, for a `ModelError` with one, ``http.response.status_code``."""
    current.set_attribute("error.type", type(exc).__name__)
    status = getattr(exc, "status_code", None) if isinstance(exc, ModelError) else None
    if status is not None:
        current.set_attribute("http.response.status_code", status)
