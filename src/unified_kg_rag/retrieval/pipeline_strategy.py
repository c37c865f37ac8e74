"""A staged pipeline as `RAGChain`'s retrieval step, and choosing one by name, file or definition.

`PipelineStrategy` makes a `Pipeline` look like a strategy: it runs the pipeline over the
question with the query's ``top_k`` and filters, and hands the chain its text units in the
pipeline's score order, with the same lineage `naive` gives (document, path, title, offsets),
so packing within ``query.max_context_tokens``, the answer step, sources, citations and
streaming are the chain's as for any strategy. The chain neither reranks nor diversifies a
pipeline's ranking (reranking is the pipeline's ``rerank`` stage). The answer's strategy is
``pipeline:<label>`` and its ``pipeline`` field holds the run's figures (`PipelineTrace`).

`choose_pipeline` resolves what a user names: a preset (``standard``, ``minimal``,
``no_rerank``), a YAML definition file (the CLI only: a service never reads a path a client
sends), or a definition mapping (the service's inline ``pipeline`` object). Every bad input
is one `ConfigurationError` line naming the file or field. Source: seed 002 and issue #22.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unified_kg_rag.domain.models import Collection, SearchHit
from unified_kg_rag.domain.ranking.trace import PipelineTrace, StageFigures, TracedResult
from unified_kg_rag.ports import LoadsModel
from unified_kg_rag.retrieval.models import RAGInput
from unified_kg_rag.retrieval.pipeline import (
    NoCandidatesError,
    Pipeline,
    PipelineResult,
    PipelineRun,
)
from unified_kg_rag.retrieval.pipeline_presets import (
    PRESETS,
    PipelineComponents,
    pipeline_from_spec,
)
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
)
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate
from unified_kg_rag.retrieval.strategies.ppr import passes_filters
from unified_kg_rag.util.errors import ConfigurationError, UsageError

__all__ = [
    "PIPELINE_PREFIX",
    "PipelineStrategy",
    "choose_pipeline",
    "refuse_strategy_with_pipeline",
    "trace_of",
]

PIPELINE_PREFIX = "pipeline:"
"""The strategy name of an answer a pipeline retrieved is this prefix and the pipeline's label."""


@dataclass(frozen=True)
class PipelineStrategy:
    """A `Pipeline` as a chain's retrieval step (see the module docstring).

    Attributes:
        pipeline: the pipeline.
        label: what the user named: a preset, a file name, ``inline``, or the caller's own.
    """

    pipeline: Pipeline
    label: str

    @property
    def name(self) -> str:
        """The strategy name answers report: ``pipeline:<label>``."""
        return f"{PIPELINE_PREFIX}{self.label}"

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return the pipeline's text units as one bucket, best first (`Strategy` protocol)."""
        result, _ = await self.run(ctx)
        return result

    async def run(self, ctx: QueryContext) -> tuple[StrategyResult, PipelineTrace]:
        """Run the pipeline for ``ctx``; return its text units and the run's trace.

        The pipeline is asked for ``query.top_k`` results (with filters, for
        ``max(top_k, candidate_k)``: a stage such as ``graph`` may add passages outside
        them, which are then left out). Results that are not text units are left out; one
        a stage did not load is read from the index, and one no longer stored is left out.
        A run that leaves no candidate returns none (the chain answers "cannot answer"; the
        trace then has no stage figures, ``metadata.pipeline_no_candidates``).

        Raises:
            PipelineError: a stage failed (named: connection, rate limit, timeout).
            StoreError: reading missing passages failed.
        """
        cfg = ctx.config
        k = max(cfg.top_k, cfg.candidate_k) if ctx.filters else cfg.top_k
        if isinstance(ctx.embedder, LoadsModel):  # a cold model's load is not a stage's time
            await ctx.embedder.load()
        try:
            run = await self.pipeline.execute(ctx.question, k, filters=ctx.filters or None)
        except NoCandidatesError:  # nothing found: the chain answers "cannot answer"
            ctx.metadata["pipeline_no_candidates"] = True
            return StrategyResult(buckets=[Bucket(self.name, [])]), PipelineTrace(name=self.name)
        units = [r for r in run.results if r.candidate.kind == "text_unit"]
        missing = [r.candidate.id for r in units if r.candidate.text is None]
        stored = {rec.id: rec for rec in await ctx.stores.search.get(
            Collection.TEXT_UNITS, missing)} if missing else {}  # fmt: skip
        kept: list[tuple[PipelineResult, Candidate]] = []
        for r in units:
            text, fields = r.candidate.text, r.candidate.metadata
            if text is None:
                if (record := stored.get(r.candidate.id)) is None:
                    continue  # deleted since the pipeline found it
                text, fields = record.text, {**record.fields, **fields}
            if ctx.filters and not passes_filters(fields, ctx.filters):
                continue
            hit = SearchHit(id=r.candidate.id, score=r.score, text=text, fields=fields)
            kept.append((r, text_unit_candidate(hit)))
        kept = kept[: cfg.top_k]
        if len(units) < len(run.results):
            ctx.metadata["pipeline_other_kinds"] = len(run.results) - len(units)
        trace = trace_of(self.name, run, [r for r, _ in kept])
        bucket = Bucket(self.name, [c for _, c in kept])
        return StrategyResult(buckets=[bucket]), trace


def refuse_strategy_with_pipeline(inp: RAGInput) -> None:
    """Refuse a request naming a strategy to a chain whose retrieval step is a pipeline.

    Raises:
        UsageError: ``strategy`` given (``--strategy`` with ``--pipeline``): one of the two.
    """
    named = inp.strategy or inp.overrides.get("strategy")
    if named:
        raise UsageError(
            f"give either a strategy ({named!r}) or a pipeline, not both: the pipeline is the "
            "whole retrieval step", field="strategy",
        )  # fmt: skip


def trace_of(name: str, run: PipelineRun, results: list[PipelineResult]) -> PipelineTrace:
    """Return the trace of ``run`` under ``name``, listing ``results`` (best first)."""
    return PipelineTrace(
        name=name,
        stages=tuple(StageFigures(name=s.name, duration_ms=round(s.duration_s * 1000.0, 3),
                                  candidates_in=s.candidates_in,
                                  candidates_out=s.candidates_out)
                     for s in run.stages),
        results=tuple(TracedResult(id=r.candidate.id, score=r.score, signals=dict(r.signals))
                      for r in results),
    )  # fmt: skip


def choose_pipeline(
    choice: str | Mapping[str, Any],
    components: PipelineComponents,
    *,
    field: str,
    files: bool,
) -> PipelineStrategy:
    """Return the pipeline ``choice`` names, as a chain's retrieval step.

    Args:
        choice: a preset name (``standard``, ``minimal``, ``no_rerank``); with ``files``, a
            path to a YAML definition (``*.yaml``/``*.yml``, or any existing file); or a
            definition mapping (`pipeline_presets` shows its shape).
        components: what the stages are built from (`bootstrap.App.pipeline_components`).
        field: the option or request field ``choice`` came from (``--pipeline``,
            ``pipeline``), named in every error.
        files: whether a path may be read (the CLI); never for a client's request.

    Returns:
        The pipeline labelled by the preset's name, the file's name, or ``inline``.

    Raises:
        ConfigurationError: one line naming the file or field: an unknown preset, a missing
            file, a folder, invalid YAML, an unknown stage or scorer, an unknown parameter,
            or a stage needing a component the index lacks (saying what to configure).
    """
    if isinstance(choice, Mapping):
        return PipelineStrategy(_built(choice, components, field=field), "inline")
    if choice in PRESETS:
        return PipelineStrategy(
            _built(PRESETS[choice], components, source=f"{field} {choice}"), choice)
    path = Path(choice)
    looks_like_file = bool(choice.strip()) and (
        path.suffix.lower() in (".yaml", ".yml") or path.exists())
    if not files or not looks_like_file:
        known = ", ".join(sorted(PRESETS))
        also = "; or a FILE.yaml pipeline definition" if files else (
            "; or an inline definition object ({\"stages\": [...]}): the service reads no "
            "files")  # fmt: skip
        raise ConfigurationError(f"no pipeline preset {choice!r}; presets: {known}{also}",
                                 field=field)  # fmt: skip
    return PipelineStrategy(_built(_read_definition(path), components, source=str(path)),
                            path.name)  # fmt: skip


def _read_definition(path: Path) -> dict[str, object]:
    """Read a pipeline definition file (the project's YAML reader).

    Raises:
        ConfigurationError: naming the file: missing, a folder, unreadable, not UTF-8,
            invalid YAML, or not a mapping.
    """
    from unified_kg_rag.config.load import read_yaml_file

    if not path.exists():
        raise ConfigurationError("no such pipeline definition file", source=str(path))
    if path.is_dir():
        raise ConfigurationError("is a folder; give a pipeline definition FILE.yaml",
                                 source=str(path))  # fmt: skip
    data = read_yaml_file(path, what="a pipeline definition (a mapping with `stages`)")
    if not data:
        raise ConfigurationError("is empty; a pipeline definition lists its `stages`",
                                 source=str(path))  # fmt: skip
    return data


def _built(
    spec: Mapping[str, Any], components: PipelineComponents, *, source: str | None = None,
    field: str | None = None,
) -> Pipeline:
    """`pipeline_from_spec`; its errors name ``source`` (a file, a preset) or sit under ``field``.

    Raises:
        ConfigurationError: as `pipeline_from_spec`, with the definition's field at fault
            prefixed by ``field`` (``pipeline.stages.2``) or preceded by ``source``.
    """
    try:
        pipeline = pipeline_from_spec(spec, components)
        _check_values(pipeline)
        return pipeline
    except ConfigurationError as exc:
        inner = exc.field if exc.field != "pipeline" else None  # the definition's top level
        raw = exc.message.removeprefix(f"{exc.field}: ") if exc.field else exc.message
        if field is not None:
            raise ConfigurationError(raw, field=f"{field}.{inner}" if inner else field) from None
        raise ConfigurationError(raw, source=source, field=inner) from None


_SCALARS: dict[object, tuple[type, ...]] = {
    int: (int,), float: (int, float), str: (str,), bool: (bool,),
    int | None: (int, type(None)), float | None: (int, float, type(None)),
}  # fmt: skip
"""The scalar parameter types checked, and the values each accepts (YAML reads 5 as int)."""


def _check_values(pipeline: Pipeline) -> None:
    """Refuse a stage parameter of the wrong scalar type (``limit: ten``), naming it.

    Stages are dataclasses whose scalar fields are checked against their annotations;
    a stage of another shape is left to itself.

    Raises:
        ConfigurationError: ``stages.<i>.<parameter>``: the expected type and the value.
    """
    for i, stage in enumerate(pipeline.stages):
        if not dataclasses.is_dataclass(stage):
            continue
        try:
            hints = typing.get_type_hints(type(stage))
        except Exception:  # annotations it cannot resolve: nothing to check against
            continue
        for item in dataclasses.fields(stage):
            accepted = _SCALARS.get(hints.get(item.name))
            value = getattr(stage, item.name)
            wrong_bool = isinstance(value, bool) and bool not in accepted if accepted else False
            if accepted and (not isinstance(value, accepted) or wrong_bool):
                wanted = " or ".join(t.__name__ for t in accepted if t is not type(None))
                raise ConfigurationError(f"expected {wanted}, got {value!r}",
                                         field=f"stages.{i}.{item.name}")  # fmt: skip
