"""The staged retrieval pipeline: stages that add, remove or score candidates, then a scorer.

A `Pipeline` runs its stages in order over one query: each stage receives the candidates of
the stage before (the first receives none), may add, drop or score candidates by setting
named signals (``semantic``, ``graph``, ``temporal`` ...), and passes them on; the scorer
(`domain.ranking.signals.WeightedScorer` or any `Scorer`) then turns each candidate's
signals into its final score. Every run reports each stage's duration and candidate counts:
in `PipelineRun.stages`, in a DEBUG log record per stage (fields ``stage``, ``candidates_in``,
``candidates_out``, ``duration_ms``), to the observers of `retrieval.pipeline_observers`, and
as OpenTelemetry spans (`util.telemetry`): ``ukr.pipeline``, a child ``ukr.stage.<name>`` per
stage (attributes ``ukr.stage.name``, ``ukr.stage.candidates_in``/``_out``) and
``ukr.pipeline.scoring``.
A stage's error reaches the caller wrapped in a `PipelineError` naming the stage
(`StageConnectionError`, `RateLimitedError`, `StageTimeoutError`), and a run that leaves no
candidate raises `NoCandidatesError`. Source: seed 002 (PIPELINE.md) and issue #22.

This module is the machinery; the stages themselves and the presets build on it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from unified_kg_rag.domain.models import MetadataValue
from unified_kg_rag.domain.ranking.signals import Scorer
from unified_kg_rag.retrieval.pipeline_observers import notify_run, notify_stage
from unified_kg_rag.util.errors import ModelError, StoreConnectionError, UkrError
from unified_kg_rag.util.telemetry import AttributeValue, span

__all__ = [
    "Candidate",
    "NoCandidatesError",
    "Pipeline",
    "PipelineBuilder",
    "PipelineError",
    "PipelineResult",
    "PipelineRun",
    "RateLimitedError",
    "RunObserver",
    "Stage",
    "StageConnectionError",
    "StageInput",
    "StageOutput",
    "StageTimeoutError",
    "StageTiming",
]

logger = logging.getLogger(__name__)

BUILT_IN_SIGNALS = frozenset({"semantic", "lexical", "graph", "temporal", "pagerank", "ppr",
                              "access", "rerank"})  # fmt: skip
"""The signals the registered stages set (seed 002's and ``lexical``, ``ppr``)."""


@dataclass
class Candidate:
    """One candidate of a pipeline run.

    Attributes:
        id: the item's id (a text unit, entity, report ... id).
        kind: what the id names (``text_unit``, ``entity``, ``report`` ...).
        text: the item's text once a stage loaded it (None: not hydrated yet).
        metadata: the item's metadata (document path, timestamps, access counts ...).
        signals: named scores in 0..1 set by the stages.
    """

    id: str
    kind: str = "text_unit"
    text: str | None = None
    metadata: dict[str, MetadataValue] = field(default_factory=dict)
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StageInput:
    """What a stage receives.

    Attributes:
        query: the question.
        candidates: the previous stage's candidates (none for the first stage).
        k: the number of results the run asks for.
        filters: metadata filters of the run (field → value; a list: any of them).
        context: values stages pass on to later stages (the query vector ...).
    """

    query: str
    candidates: list[Candidate]
    k: int
    filters: Mapping[str, MetadataValue | Sequence[MetadataValue]] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StageOutput:
    """What a stage returns: the candidates it passes on, and the context for later stages."""

    candidates: list[Candidate]
    context: dict[str, Any] = field(default_factory=dict)


class Stage(Protocol):
    """A pipeline stage (seed 002, "Stage Interface")."""

    @property
    def name(self) -> str:
        """The stage's name in logs, metrics and errors (``semantic``, ``hydrate`` ...)."""
        ...

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Return the candidates after this stage (may add, drop or score them)."""
        ...


class PipelineError(UkrError):
    """A stage failed; ``stage`` names it. The original error is the ``__cause__``.

    Attributes:
        stage: the failing stage's name.
    """

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"stage {stage}: {message}")
        self.stage = stage


class StageConnectionError(PipelineError):
    """A store or model a stage reads could not be reached."""


class RateLimitedError(PipelineError):
    """A provider a stage calls refused for rate limiting (HTTP 429)."""


class StageTimeoutError(PipelineError):
    """A stage ran past the pipeline's stage timeout."""


class NoCandidatesError(PipelineError):
    """The run left no candidate (``stage``: the last stage)."""


@dataclass(frozen=True)
class StageTiming:
    """One stage of a run: its duration (seconds) and candidate counts in and out."""

    name: str
    duration_s: float
    candidates_in: int
    candidates_out: int


@dataclass(frozen=True)
class PipelineResult:
    """A ranked result: the candidate, its final score and every signal it carried."""

    candidate: Candidate
    score: float
    signals: Mapping[str, float]


@dataclass(frozen=True)
class PipelineRun:
    """A run's results (best first) and the figures of each stage, in order."""

    results: list[PipelineResult]
    stages: list[StageTiming]


class RunObserver(Protocol):
    """Told of each successful run once its results are ranked (the access recorder ...)."""

    def observe(self, query: str, run: PipelineRun) -> None:
        """Note ``run``; must not block (queue the work). An error is logged, never raised."""
        ...


class Pipeline:
    """Stages in order, then a scorer. Build one with `PipelineBuilder`.

    Args:
        stages: the stages, run in order (names must be distinct).
        scorer: combines each candidate's signals into its final score.
        stage_timeout_s: the longest one stage may run, seconds (None: no limit).
        observers: told of each successful run after its results are ranked
            (`retrieval.access.AccessRecorder` counts them); their errors are logged.

    Raises:
        ValueError: no stage, or two stages share a name.
    """

    def __init__(
        self, stages: Sequence[Stage], scorer: Scorer, *, stage_timeout_s: float | None = None,
        observers: Sequence[RunObserver] = (),
    ) -> None:
        if not stages:
            raise ValueError("a pipeline needs at least one stage")
        names = [s.name for s in stages]
        for name in names:
            if not isinstance(name, str) or not name.strip() or not name.isprintable():
                raise ValueError(f"a stage name must be printable text, got {name!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"stage names must be distinct (give a second use its own "
                             f"`name`), got {names}")  # fmt: skip
        if stage_timeout_s is not None and (
            isinstance(stage_timeout_s, bool) or not isinstance(stage_timeout_s, int | float)
            or not math.isfinite(stage_timeout_s) or stage_timeout_s <= 0
        ):
            raise ValueError(f"stage_timeout_s must be a positive number of seconds, "
                             f"got {stage_timeout_s!r}")  # fmt: skip
        self.stages = list(stages)
        self.scorer = scorer
        self.stage_timeout_s = stage_timeout_s
        self.observers = list(observers)
        self._weights_checked = False

    async def execute(
        self,
        query: str,
        k: int = 10,
        *,
        min_score: float = 0.0,
        filters: Mapping[str, MetadataValue | Sequence[MetadataValue]] | None = None,
    ) -> PipelineRun:
        """Run the stages over ``query`` and return the ``k`` best candidates.

        Args:
            query: the question.
            k: results wanted (≥ 1).
            min_score: results scoring below this are left out.
            filters: metadata filters passed to every stage (a list value: any of them).

        Raises:
            ValueError: ``k`` < 1.
            PipelineError: a stage failed (a subclass for connection failures, rate limits
                and timeouts), or `NoCandidatesError` when no candidate is left.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a whole number >= 1, got {k!r}")
        started = time.perf_counter()
        candidates: list[Candidate] = []
        context: dict[str, Any] = {}
        timings: list[StageTiming] = []
        with span("ukr.pipeline", {"ukr.pipeline.stages": [s.name for s in self.stages],
                                   "ukr.pipeline.k": k}) as run_span:  # fmt: skip
            emptied = self.stages[-1].name  # the last stage that left no candidate
            for stage in self.stages:
                stage_input = StageInput(query, candidates, k, dict(filters or {}), context)
                output = await self._observed(stage, stage_input, timings)
                if not output.candidates and (candidates or not timings[:-1]):
                    emptied = stage.name
                candidates, context = output.candidates, output.context
            if not candidates:
                raise NoCandidatesError(emptied, "no candidate is left")
            self._check_weights(candidates)
            with span("ukr.pipeline.scoring", {"ukr.pipeline.candidates": len(candidates)}):
                scored = [PipelineResult(c, self.scorer.score(c.signals), dict(c.signals))
                          for c in candidates]  # fmt: skip
                scored.sort(key=lambda r: (-r.score, r.candidate.id))
            results = [r for r in scored if r.score >= min_score][:k]
            run_span.set_attribute("ukr.pipeline.results", len(results))
        notify_run(time.perf_counter() - started, len(results))
        run = PipelineRun(results, timings)
        for observer in self.observers:
            try:
                observer.observe(query, run)
            except Exception as exc:  # an observer never fails a run
                logger.warning("pipeline observer %s failed: %s", type(observer).__name__, exc)
        return run

    def _check_weights(self, candidates: Sequence[Candidate]) -> None:
        """Warn once per pipeline about weights naming a signal no candidate carries.

        The built-in signals are left out (a ``graph`` weight on a run where no entity cites
        a candidate is no mistake); another name is likely a typo (``access_signal``).
        """
        weights = getattr(self.scorer, "weights", None)
        if self._weights_checked or not isinstance(weights, Mapping):
            return
        self._weights_checked = True
        carried = {name for c in candidates for name in c.signals}
        unset = sorted(str(name) for name in weights if name not in carried
                       and name not in BUILT_IN_SIGNALS)  # fmt: skip
        if unset:
            logger.warning("pipeline: the scorer weighs signal(s) %s that no stage set on any "
                           "candidate (signals set: %s); check the names in `weights`",
                           ", ".join(unset), ", ".join(sorted(carried)) or "none")  # fmt: skip

    async def _observed(
        self, stage: Stage, stage_input: StageInput, timings: list[StageTiming]
    ) -> StageOutput:
        """Run one stage in its span; time it, log it, tell the observers (`pipeline_observers`)."""
        count_in = len(stage_input.candidates)
        attributes: dict[str, AttributeValue | None] = {
            "ukr.stage.name": stage.name, "ukr.stage.candidates_in": count_in}
        debug = logger.isEnabledFor(logging.DEBUG)  # the records' fields cost only when kept
        with span(f"ukr.stage.{stage.name}", attributes) as current:
            if debug:
                logger.debug("stage %s started with %d candidates", stage.name, count_in,
                             extra={"stage": stage.name, "candidates_in": count_in})  # fmt: skip
            started = time.perf_counter()
            output = await self._run(stage, stage_input)
            duration = time.perf_counter() - started
            count_out = len(output.candidates)
            current.set_attribute("ukr.stage.candidates_out", count_out)
        timing = StageTiming(stage.name, duration, count_in, count_out)
        timings.append(timing)
        if debug:
            fields = {"stage": stage.name, "candidates_in": count_in, "candidates_out": count_out,
                      "duration_ms": round(duration * 1000, 3)}  # fmt: skip
            logger.debug("stage %s: %d -> %d candidates in %.1f ms", stage.name, count_in,
                         count_out, duration * 1000, extra=fields)  # fmt: skip
        notify_stage(timing)
        return output

    async def _run(self, stage: Stage, stage_input: StageInput) -> StageOutput:
        """Run one stage under the timeout; wrap its errors with its name.

        Any error of the stage's own (a bug in a custom stage, a wrong return value) is a
        `PipelineError` naming it too; a `TimeoutError` the stage raises itself (an HTTP
        client's) is not mistaken for the stage timeout.
        """
        try:
            async with asyncio.timeout(self.stage_timeout_s) as limit:
                output = await stage.execute(stage_input)
        except PipelineError:
            raise
        except TimeoutError as exc:
            if limit.expired():
                raise StageTimeoutError(
                    stage.name, f"ran past {self.stage_timeout_s} s") from exc
            raise PipelineError(stage.name, f"TimeoutError: {exc}") from exc
        except ModelError as exc:
            if exc.status_code == 429:
                raise RateLimitedError(stage.name, str(exc)) from exc
            raise PipelineError(stage.name, str(exc)) from exc
        except (StoreConnectionError, ConnectionError) as exc:
            raise StageConnectionError(stage.name, str(exc)) from exc
        except UkrError as exc:
            raise PipelineError(stage.name, str(exc)) from exc
        except Exception as exc:
            raise PipelineError(stage.name, f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(output, StageOutput):
            raise PipelineError(stage.name, f"returned {type(output).__name__}, not a "
                                "StageOutput")  # fmt: skip
        return output


class PipelineBuilder:
    """Builds a `Pipeline` fluently: ``PipelineBuilder().add(s1).add(s2).scoring(w).build()``."""

    def __init__(self) -> None:
        self._stages: list[Stage] = []
        self._scorer: Scorer | None = None
        self._timeout: float | None = None
        self._observers: list[RunObserver] = []

    def add(self, stage: Stage) -> PipelineBuilder:
        """Append ``stage``."""
        self._stages.append(stage)
        return self

    def scoring(self, scorer: Scorer) -> PipelineBuilder:
        """Use ``scorer`` for the final score."""
        self._scorer = scorer
        return self

    def stage_timeout(self, seconds: float) -> PipelineBuilder:
        """Limit each stage to ``seconds``.

        Raises:
            ValueError: ``seconds`` is not positive.
        """
        if not seconds > 0:
            raise ValueError(f"stage timeout must be positive, got {seconds}")
        self._timeout = seconds
        return self

    def observe(self, observer: RunObserver) -> PipelineBuilder:
        """Tell ``observer`` of each successful run (e.g. an `AccessRecorder`)."""
        self._observers.append(observer)
        return self

    def build(self) -> Pipeline:
        """Return the pipeline.

        Raises:
            ValueError: no stage, duplicate stage names, or no scorer.
        """
        if self._scorer is None:
            raise ValueError("a pipeline needs a scorer (.scoring(...))")
        return Pipeline(self._stages, self._scorer, stage_timeout_s=self._timeout,
                        observers=self._observers)  # fmt: skip
