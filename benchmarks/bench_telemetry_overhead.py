"""What observability costs per pipeline stage: spans, observers and log records.

A pipeline of ``--stages`` stages that do no work (each passes its ``--candidates``
candidates on) is run ``--runs`` times in each mode; the figure is the CPU time per stage
(the process's, its threads included; what a busy machine makes it wait is left out),
in microseconds (the best of ``--repeat`` rounds, as `timeit` reports), next to the same
stages awaited in a bare loop (no pipeline machinery at all):

- ``bare loop``: ``await stage.execute(...)`` for each stage, nothing else;
- ``pipeline, no observability``: the pipeline with its per-stage spans, records and observer
  calls taken out (the machinery alone: inputs, timing, scoring, sorting);
- ``otel absent``: ``opentelemetry`` cannot be imported (the no-op span of `util.telemetry`);
- ``otel api, no sdk``: the API is installed but no `TracerProvider` is set (what a user of
  the ``service`` extra has: FastAPI depends on the API): non-recording spans;
- ``otel sdk, recording``: an SDK `TracerProvider` with a `BatchSpanProcessor` to an exporter
  that drops the spans (the cost of recording, without an exporter's I/O);
- ``+ observer``: the last mode with a `PipelineObserver` registered (as the service does).

Logging is at WARNING (the stage records are DEBUG: built, not written).

Usage:  python benchmarks/bench_telemetry_overhead.py [--stages 8] [--runs 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import (
    Candidate,
    Pipeline,
    StageInput,
    StageOutput,
    StageTiming,
)
from unified_kg_rag.retrieval.pipeline_observers import observing
from unified_kg_rag.util import telemetry


class PassThrough:
    """A stage with no work: the first one makes the candidates, the others pass them on."""

    def __init__(self, name: str, candidates: int) -> None:
        self.name = name
        self._made = [Candidate(str(i), signals={"semantic": 0.5}) for i in range(candidates)]

    async def execute(self, stage_input: StageInput) -> StageOutput:
        return StageOutput(stage_input.candidates or self._made, stage_input.context)


class Counting:
    """A `PipelineObserver` doing the least an observer does."""

    stages = 0

    def stage_done(self, timing: StageTiming) -> None:
        self.stages += 1

    def run_done(self, duration_s: float, results: int) -> None:
        del duration_s, results


def per_stage_us(run_once: Callable[[], Any], runs: int, stages: int, repeat: int) -> float:
    """The best of ``repeat`` rounds: CPU time per stage, microseconds (as `timeit`)."""

    async def rounds() -> list[float]:
        out = []
        for _ in range(repeat):
            started = time.process_time()  # CPU time: a busy machine's waits are left out
            for _ in range(runs):
                await run_once()
            out.append((time.process_time() - started) / (runs * stages) * 1e6)
        return out

    return min(asyncio.run(rounds()))


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=8)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    stages = [PassThrough(f"s{i}", args.candidates) for i in range(args.stages)]
    pipeline = Pipeline(stages, WeightedScorer({"semantic": 1.0}))

    async def bare() -> None:
        stage_input = StageInput("q", [], 10)
        for stage in stages:
            out = await stage.execute(stage_input)
            stage_input = StageInput("q", out.candidates, 10, {}, out.context)

    async def piped() -> None:
        await pipeline.execute("q", 10)

    figures: list[tuple[str, float]] = []
    measure = lambda fn: per_stage_us(fn, args.runs, args.stages, args.repeat)  # noqa: E731
    figures.append(("bare loop", measure(bare)))

    observed = Pipeline._observed

    async def unobserved(self: Pipeline, stage: Any, stage_input: StageInput,
                         timings: list[StageTiming]) -> StageOutput:
        started = time.perf_counter()  # what a run did before spans, records and observers
        output = await self._run(stage, stage_input)
        timings.append(StageTiming(stage.name, time.perf_counter() - started,
                                   len(stage_input.candidates), len(output.candidates)))
        return output

    Pipeline._observed = unobserved  # type: ignore[method-assign]
    telemetry_state = telemetry._tracer
    telemetry._tracer = None  # no span at all
    figures.append(("pipeline, no observability", measure(piped)))
    Pipeline._observed = observed  # type: ignore[method-assign]
    telemetry._tracer = telemetry_state

    real = sys.modules.get("opentelemetry")
    sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    telemetry.refresh()
    assert not telemetry.enabled()
    figures.append(("otel absent", measure(piped)))
    if real is not None:
        sys.modules["opentelemetry"] = real
    else:
        del sys.modules["opentelemetry"]
    telemetry.refresh()
    if telemetry.enabled():
        figures.append(("otel api, no sdk", measure(piped)))
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import (
                BatchSpanProcessor,
                SpanExporter,
                SpanExportResult,
            )
        except ImportError:
            print("(opentelemetry-sdk is not installed: the recording modes are skipped)")
        else:
            class Drop(SpanExporter):
                def export(self, spans: Any) -> SpanExportResult:
                    return SpanExportResult.SUCCESS

            provider = TracerProvider()
            provider.add_span_processor(BatchSpanProcessor(Drop()))
            trace.set_tracer_provider(provider)
            figures.append(("otel sdk, recording", measure(piped)))
            with observing(Counting()):
                figures.append(("otel sdk, recording + observer", measure(piped)))
            provider.shutdown()
    else:
        print("(opentelemetry-api is not installed: the otel modes are skipped)")

    bare_us, machinery_us = figures[0][1], figures[1][1]
    print(f"{args.stages} no-op stages, {args.candidates} candidates, {args.runs} runs x "
          f"{args.repeat} rounds (best); microseconds per stage")
    print(f"{'mode':34} {'us/stage':>9} {'vs bare':>9} {'vs machinery':>13} {'us/query':>9}")
    for name, us in figures:
        print(f"{name:34} {us:9.2f} {us - bare_us:+9.2f} {us - machinery_us:+13.2f} "
              f"{us * args.stages:9.1f}")


if __name__ == "__main__":
    main()
