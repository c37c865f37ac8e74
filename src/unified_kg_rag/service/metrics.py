"""Prometheus metrics of one service: ``GET /metrics`` (text exposition format 0.0.4).

Each `create_app` holds its own `ServiceMetrics` (its own registry, never the process-wide
one), as ``api.state.metrics``; `metrics_of` returns it to a route. What it shows:

- ``ukr_http_requests_total{method,route,status}`` and
  ``ukr_http_request_duration_seconds{method,route,status}`` (histogram): every request, by
  route TEMPLATE (``/v1/documents/{document_id}``; ``<unmatched>`` for no route), never a
  raw path or query string (`service.access`);
- ``ukr_query_stage_duration_seconds{strategy,stage}`` (histogram) from a `RAGOutput`'s
  ``timings_ms`` (``rewrite``, ``route``, ``retrieve``, ``fuse``, ``pack``, ``answer``,
  ``total``) and ``ukr_queries_total{strategy,answer_kind}``: `ServiceMetrics.observe_query`;
- ``ukr_pipeline_stage_duration_seconds{stage}`` and
  ``ukr_pipeline_stage_candidates{stage,side}`` (histograms; ``side`` is ``in`` or ``out``),
  ``ukr_pipeline_duration_seconds`` and ``ukr_pipeline_results`` (histograms): every staged
  pipeline run (`retrieval.pipeline`) inside a request, heard by
  `ServiceMetrics.pipeline_observer` (a `retrieval.pipeline_observers.PipelineObserver` the
  access middleware registers around each request); a stage name outside ``[a-z0-9_]{1,48}``,
  or new after `MAX_STAGE_LABELS` names were seen (clients name stages), is counted as
  ``other``;
- ``ukr_job_done{index,kind}``, ``ukr_job_total{index,kind}`` and
  ``ukr_job_state{index,kind,state}`` (1 for the current state, 0 for the others): the
  job code reports them with `ServiceMetrics.job_progress` and `ServiceMetrics.job_state`;
- ``ukr_index_items{index,kind}`` (documents, text units, entities, relationships,
  communities, reports) and ``ukr_index_counts_refreshed_timestamp_seconds``: read from a
  cache a background task refreshes every ``service.metrics_refresh_s`` seconds and soon after
  a write job ends (`ServiceMetrics.index_changed`). A scrape reads only the cache: it never
  touches a store, let alone walks a graph. No stored summary of the counts exists, so the
  refresh runs the ``COUNT`` queries ``ukr status`` runs (index-backed, no graph read).

``/metrics`` needs the ``read`` scope once keys exist (Prometheus sends one with
``authorization: {credentials: KEY}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, get_args

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from unified_kg_rag.domain.models import Collection, RAGOutput
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.job_store import JobState

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from unified_kg_rag.bootstrap import App
    from unified_kg_rag.retrieval.pipeline import StageTiming

__all__ = ["ITEM_KINDS", "ServiceMetrics", "metrics_of", "router"]

logger = logging.getLogger(__name__)

router = APIRouter()

ITEM_KINDS = ("documents", "text_units", "entities", "relationships", "communities", "reports")
"""The ``kind`` label values of ``ukr_index_items``."""

_STAGE = re.compile(r"[a-z_]{1,32}")
_PIPELINE_STAGE = re.compile(r"[a-z0-9_]{1,48}")
MAX_STAGE_LABELS = 64
"""Distinct pipeline stage names given their own series; later new names count as ``other``."""
_CANDIDATE_BUCKETS = (0, 1, 5, 10, 20, 50, 100, 200, 500, 1000, 5000)
_QUERY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_MIN_REFRESH_GAP_S = 1.0


class _IndexCounts(Collector):
    """The cached per-index counts, as gauges (read at scrape; nothing is queried)."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self.refreshed_at: float | None = None

    def collect(self) -> Iterator[Metric]:
        items = GaugeMetricFamily("ukr_index_items", "Items an index holds, by kind (cached; "
                                  "see ukr_index_counts_refreshed_timestamp_seconds).",
                                  labels=["index", "kind"])  # fmt: skip
        for index, counts in sorted(self.counts.items()):
            for kind in ITEM_KINDS:
                items.add_metric([index, kind], counts.get(kind, 0))
        yield items
        if self.refreshed_at is not None:
            yield GaugeMetricFamily("ukr_index_counts_refreshed_timestamp_seconds",
                                    "When ukr_index_items was last refreshed, Unix seconds.",
                                    value=self.refreshed_at)  # fmt: skip


class ServiceMetrics:
    """The metrics of one service (module docstring), in a registry of its own.

    Attributes:
        registry: the `prometheus_client.CollectorRegistry` ``/metrics`` renders.
        refresh_s: seconds between refreshes of the index counts (``service.metrics_refresh_s``).
    """

    def __init__(self, refresh_s: float = 60.0) -> None:
        """Create the metrics in a fresh registry."""
        self.registry = CollectorRegistry()
        self.refresh_s = refresh_s
        self._stage_labels: set[str] = set()
        labels = ["method", "route", "status"]
        self._requests = Counter("ukr_http_requests", "HTTP requests answered.", labels,
                                 registry=self.registry)  # fmt: skip
        self._latency = Histogram("ukr_http_request_duration_seconds",
                                  "Time to answer an HTTP request (to its last byte), seconds.",
                                  labels, registry=self.registry)  # fmt: skip
        self._stages = Histogram("ukr_query_stage_duration_seconds",
                                 "Wall time of a query's stage, seconds.", ["strategy", "stage"],
                                 buckets=_QUERY_BUCKETS_S, registry=self.registry)  # fmt: skip
        self._queries = Counter("ukr_queries", "Queries answered.", ["strategy", "answer_kind"],
                                registry=self.registry)  # fmt: skip
        self._pipeline_stage = Histogram("ukr_pipeline_stage_duration_seconds",
                                         "Wall time of a staged pipeline's stage, seconds.",
                                         ["stage"], buckets=_QUERY_BUCKETS_S,
                                         registry=self.registry)  # fmt: skip
        self._pipeline_candidates = Histogram("ukr_pipeline_stage_candidates",
                                              "Candidates a pipeline stage received (side=in) "
                                              "or passed on (side=out).", ["stage", "side"],
                                              buckets=_CANDIDATE_BUCKETS,
                                              registry=self.registry)  # fmt: skip
        self._pipeline_runs = Histogram("ukr_pipeline_duration_seconds",
                                        "Wall time of a staged pipeline run, seconds.",
                                        buckets=_QUERY_BUCKETS_S,
                                        registry=self.registry)  # fmt: skip
        self._pipeline_results = Histogram("ukr_pipeline_results",
                                           "Results a staged pipeline run returned.",
                                           buckets=_CANDIDATE_BUCKETS,
                                           registry=self.registry)  # fmt: skip
        self.pipeline_observer = _PipelineMetrics(self)
        """The `PipelineObserver` feeding the ``ukr_pipeline_*`` histograms."""
        self._job_done = Gauge("ukr_job_done", "Steps done of the index's current or last job.",
                               ["index", "kind"], registry=self.registry)  # fmt: skip
        self._job_total = Gauge("ukr_job_total", "Steps of the index's current or last job "
                                "(0 while unknown).", ["index", "kind"],
                                registry=self.registry)  # fmt: skip
        self._job_state = Gauge("ukr_job_state", "1 for the state of the index's current or "
                                "last job of a kind, 0 for the other states.",
                                ["index", "kind", "state"], registry=self.registry)  # fmt: skip
        self._counts = _IndexCounts()
        self.registry.register(self._counts)
        self._changed = asyncio.Event()

    # ------------------------------------------------------------------ HTTP and queries

    def observe_request(self, method: str, route: str, status: int, duration_s: float) -> None:
        """Count one answered request (``route``: its template) and its time in seconds."""
        self._requests.labels(method, route, str(status)).inc()
        self._latency.labels(method, route, str(status)).observe(duration_s)

    def observe_query(self, output: RAGOutput) -> None:
        """Record a query's stage times (``output.timings_ms``, milliseconds) by strategy."""
        self._queries.labels(output.strategy, output.answer_kind).inc()
        for stage, ms in output.timings_ms.items():
            if _STAGE.fullmatch(stage):
                self._stages.labels(output.strategy, stage).observe(ms / 1000)

    def observe_stage(self, timing: StageTiming) -> None:
        """Record one pipeline stage: duration (seconds) and candidates in and out."""
        stage = timing.name if _PIPELINE_STAGE.fullmatch(timing.name) else "other"
        if stage not in self._stage_labels:  # clients name stages: bound the series
            if len(self._stage_labels) >= MAX_STAGE_LABELS:
                stage = "other"
            else:
                self._stage_labels.add(stage)
        self._pipeline_stage.labels(stage).observe(timing.duration_s)
        self._pipeline_candidates.labels(stage, "in").observe(timing.candidates_in)
        self._pipeline_candidates.labels(stage, "out").observe(timing.candidates_out)

    def observe_pipeline(self, duration_s: float, results: int) -> None:
        """Record one pipeline run: wall time (seconds) and results returned."""
        self._pipeline_runs.observe(duration_s)
        self._pipeline_results.observe(results)

    # ------------------------------------------------------------------ jobs (for the job code)

    def job_progress(self, index: str, kind: str, done: int, total: int | None) -> None:
        """Report a job's progress: ``done`` steps of ``total`` (None while unknown).

        Args:
            index: the index the job writes.
            kind: what the job does (``index``, ``delete``, ``upload`` ...); a short fixed
                word, not a job id (every value is a series of its own).
            done: steps done so far.
            total: steps in all, if known.
        """
        self._job_done.labels(index, kind).set(done)
        self._job_total.labels(index, kind).set(total or 0)

    def job_state(self, index: str, kind: str, state: JobState) -> None:
        """Report a job's state (`JobState`).

        A job that ends (``succeeded``, ``failed``, ``cancelled``, ``interrupted``) also
        refreshes the index counts soon (`index_changed`).

        Call from the event loop.
        """
        for name in get_args(JobState):
            self._job_state.labels(index, kind, name).set(1 if name == state else 0)
        if state in ("succeeded", "failed", "cancelled", "interrupted"):
            self.index_changed(index)

    def index_changed(self, index: str) -> None:
        """Say that ``index`` was written: its counts are refreshed within about a second.

        Call from the event loop.
        """
        del index  # every index is recounted: a refresh is a few COUNT queries per index
        self._changed.set()

    # ------------------------------------------------------------------ index counts

    @property
    def index_counts(self) -> dict[str, dict[str, int]]:
        """The cached counts: index -> kind (`ITEM_KINDS`) -> items."""
        return self._counts.counts

    async def refresh_counts(self, app: App) -> None:
        """Count every index's items now (the queries ``ukr status`` runs; no graph read).

        Raises:
            StoreError: a store failed.
        """
        counts: dict[str, dict[str, int]] = {}
        for name in await app.backend.list_indexes():
            stores = app.index(name)
            graph = await stores.graph.counts()
            documents = await stores.registry.status_counts()
            counts[name] = {
                "documents": sum(documents.values()),
                "text_units": await stores.search.count(Collection.TEXT_UNITS),
                **{kind: graph.get(kind, 0) for kind in ITEM_KINDS[2:]},
            }
        self._counts.counts = counts
        self._counts.refreshed_at = time.time()

    async def keep_counts_fresh(self, app: App) -> None:
        """Keep the index counts fresh; runs until cancelled.

        Refreshes now, then every ``refresh_s`` seconds and after each `index_changed` (at
        most once a second). A failed refresh is logged and the last counts kept.
        """
        while True:
            try:
                await self.refresh_counts(app)
            except Exception as exc:  # a store outage must not end the loop
                logger.warning("the index counts of /metrics were not refreshed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), self.refresh_s)
            self._changed.clear()
            await asyncio.sleep(_MIN_REFRESH_GAP_S)

    def render(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return generate_latest(self.registry)


class _PipelineMetrics:
    """A `PipelineObserver` recording into one `ServiceMetrics`."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self._metrics = metrics

    def stage_done(self, timing: StageTiming) -> None:
        """Record the stage (`ServiceMetrics.observe_stage`)."""
        self._metrics.observe_stage(timing)

    def run_done(self, duration_s: float, results: int) -> None:
        """Record the run (`ServiceMetrics.observe_pipeline`)."""
        self._metrics.observe_pipeline(duration_s, results)


def metrics_of(request: Request) -> ServiceMetrics:
    """The `ServiceMetrics` of the service answering ``request``."""
    metrics: ServiceMetrics = request.app.state.metrics
    return metrics


@router.get("/metrics", dependencies=[Depends(requires("read"))])
async def metrics(request: Request) -> Response:
    """The service's metrics in the Prometheus text format (module docstring)."""
    return Response(metrics_of(request).render(), media_type=CONTENT_TYPE_LATEST)
