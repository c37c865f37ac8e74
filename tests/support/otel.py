"""Spans recorded in memory by the OpenTelemetry SDK, for the telemetry tests.

`recorded_spans` gives `util.telemetry` a tracer of a `TracerProvider` of its own (not the
process-wide one, which can be set only once), exporting to an `InMemorySpanExporter`; the
package's tracer is looked up again afterwards. Skips when the SDK is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from unified_kg_rag.util import telemetry

__all__ = ["by_name", "children_of", "recorded_spans"]


@pytest.fixture
def recorded_spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The `InMemorySpanExporter` receiving every span `util.telemetry` opens in the test."""
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(telemetry, "_tracer", provider.get_tracer("unified_kg_rag"))
    yield exporter
    provider.shutdown()
    monkeypatch.undo()
    telemetry.refresh()


def by_name(spans: Sequence[Any], name: str) -> list[Any]:
    """The finished spans called ``name``, in the order they ended."""
    return [s for s in spans if s.name == name]


def children_of(spans: Sequence[Any], parent: Any) -> list[Any]:
    """The spans whose parent is ``parent``, in the order they started."""
    kids = [s for s in spans if s.parent is not None
            and s.parent.span_id == parent.context.span_id]  # fmt: skip
    return sorted(kids, key=lambda s: s.start_time)
