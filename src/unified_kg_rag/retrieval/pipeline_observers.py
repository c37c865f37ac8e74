"""Who hears about each pipeline stage: observers, scoped to the current task.

`Pipeline.execute` calls `notify_stage` after each stage and `notify_run` after the run; the
calls reach every `PipelineObserver` registered with `observing` in the current task (and the
tasks it starts). Retrieval code names no metrics library: the service registers a Prometheus
observer around each request (`service.metrics.ServiceMetrics.pipeline_observer`), a script
may register its own (a list that collects `StageTiming`s, a logger ...). An observer that
raises is logged and skipped; it never fails a query.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from unified_kg_rag.retrieval.pipeline import StageTiming

__all__ = ["PipelineObserver", "notify_run", "notify_stage", "observing"]

logger = logging.getLogger(__name__)

_OBSERVERS: contextvars.ContextVar[tuple[PipelineObserver, ...]] = contextvars.ContextVar(
    "ukr_pipeline_observers", default=()
)


class PipelineObserver(Protocol):
    """Hears each stage's figures and each run's total."""

    def stage_done(self, timing: StageTiming) -> None:
        """One stage ended: its name, duration (seconds) and candidates in and out."""
        ...

    def run_done(self, duration_s: float, results: int) -> None:
        """A run ended: its wall time (seconds, stages and scoring) and results returned."""
        ...


@contextmanager
def observing(observer: PipelineObserver) -> Iterator[None]:
    """Register ``observer`` for the pipelines run inside the block (this task and its children)."""
    token = _OBSERVERS.set((*_OBSERVERS.get(), observer))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


def notify_stage(timing: StageTiming) -> None:
    """Tell the registered observers that a stage ended (observer errors are logged)."""
    for observer in _OBSERVERS.get():
        try:
            observer.stage_done(timing)
        except Exception:  # an observer must never fail the query
            logger.exception("pipeline observer %r failed on stage %s", observer, timing.name)


def notify_run(duration_s: float, results: int) -> None:
    """Tell the registered observers that a run ended (observer errors are logged)."""
    for observer in _OBSERVERS.get():
        try:
            observer.run_done(duration_s, results)
        except Exception:  # an observer must never fail the query
            logger.exception("pipeline observer %r failed at the end of a run", observer)
