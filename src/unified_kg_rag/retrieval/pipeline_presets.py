"""Pipelines by name or by definition: the stage and scorer registries and the presets.

A pipeline definition (the YAML of ``ukr query --pipeline FILE.yaml``) names its stages and
scorer::

    stages:
      - {stage: semantic, limit: 50}
      - {stage: hydrate}
      - {stage: graph, depth: 2, max_expansion: 100}
    scorer: {kind: weighted, weights: {semantic: 0.6, graph: 0.4}}
    stage_timeout_s: 5

Stages and scorers are looked up in `PIPELINE_STAGES` and `PIPELINE_SCORERS`, where a user's
own register too. The presets ``standard``, ``minimal`` and ``no_rerank`` follow seed 002
("Using Presets"); their weights are the seed's, not yet measured here. Source: seed 002 and
issue #22.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from unified_kg_rag.domain.ranking.signals import Scorer, WeightedScorer
from unified_kg_rag.ports import Embedder, GraphStore, IndexStores, Reranker, SearchIndex
from unified_kg_rag.util.errors import ConfigurationError
from unified_kg_rag.util.registry import Registry

from .pipeline import Pipeline, Stage
from .pipeline_stages import (
    AccessStage,
    GraphExpansionStage,
    HydrateStage,
    LexicalStage,
    RerankStage,
    SemanticStage,
)
from .pipeline_time import temporal_decay_stage

__all__ = [
    "PIPELINE_SCORERS",
    "PIPELINE_STAGES",
    "PRESETS",
    "PipelineComponents",
    "pipeline_from_spec",
    "preset_pipeline",
]

DAY_S = 86_400.0


@dataclass(frozen=True)
class PipelineComponents:
    """What stages are built from: the index's stores and the query-time models.

    Attributes:
        index: the search index.
        embedder: the embedding model.
        graph: the graph store (None: stages over the entity graph refuse to build).
        reranker: the reranker (None: ``rerank`` refuses to build).
        stores: the index's stores (None: ``temporal_decay`` looks up no time for units
            stored without one).
    """

    index: SearchIndex
    embedder: Embedder
    graph: GraphStore | None = None
    reranker: Reranker | None = None
    stores: IndexStores | None = None


StageFactory = Callable[[PipelineComponents, dict[str, Any]], Stage]
"""Builds a stage from the components and the definition's parameters (unknown ones: error)."""
ScorerFactory = Callable[[dict[str, Any]], Scorer]

PIPELINE_STAGES: Registry[StageFactory] = Registry("pipeline stage", field="stages[].stage")
PIPELINE_SCORERS: Registry[ScorerFactory] = Registry("pipeline scorer", field="scorer.kind")


def _need(value: Any, what: str) -> Any:
    if value is None:
        raise ConfigurationError(f"the {what} is not available to this pipeline")
    return value


PIPELINE_STAGES.register("semantic", lambda c, p: SemanticStage(c.index, c.embedder, **p))
PIPELINE_STAGES.register("lexical", lambda c, p: LexicalStage(c.index, **p))
PIPELINE_STAGES.register("hydrate", lambda c, p: HydrateStage(c.index, **p))
PIPELINE_STAGES.register(
    "graph", lambda c, p: GraphExpansionStage(_need(c.graph, "graph store"), **p)
)
PIPELINE_STAGES.register("temporal_decay", lambda c, p: temporal_decay_stage(p, c.stores))
PIPELINE_STAGES.register("access", lambda c, p: AccessStage(**p))
PIPELINE_STAGES.register(
    "rerank", lambda c, p: RerankStage(_need(c.reranker, "reranker (query.rerank.kind)"), **p)
)
PIPELINE_SCORERS.register("weighted", lambda p: WeightedScorer(**p))


def pipeline_from_spec(spec: Mapping[str, Any], components: PipelineComponents) -> Pipeline:
    """Build the pipeline a definition describes (see the module docstring for the shape).

    Raises:
        ConfigurationError: one line naming the field: no stages, an unknown stage or
            scorer (listing the registered ones), a parameter the stage does not take or a
            bad value, a stage needing a component the index lacks.
    """
    stages_spec = spec.get("stages")
    if not isinstance(stages_spec, list) or not stages_spec:
        raise ConfigurationError("a pipeline lists at least one stage", field="stages")
    unknown = set(spec) - {"stages", "scorer", "stage_timeout_s"}
    if unknown:
        raise ConfigurationError(f"unknown key(s) {', '.join(sorted(unknown))}",
                                 field="pipeline")  # fmt: skip
    stages = []
    for i, entry in enumerate(stages_spec):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("stage"), str):
            raise ConfigurationError("each stage is a mapping with a `stage` name",
                                     field=f"stages.{i}")  # fmt: skip
        params = {k: v for k, v in entry.items() if k != "stage"}
        factory = PIPELINE_STAGES.get(entry["stage"])
        stages.append(_built(partial(factory, components, params), f"stages.{i}"))
    scorer_spec = spec.get("scorer", {"kind": "weighted", "weights": {"semantic": 1.0}})
    if not isinstance(scorer_spec, Mapping):
        raise ConfigurationError("the scorer is a mapping with a `kind`", field="scorer")
    scorer_params = {k: v for k, v in scorer_spec.items() if k != "kind"}
    scorer_factory = PIPELINE_SCORERS.get(str(scorer_spec.get("kind", "weighted")))
    scorer = _built(lambda: scorer_factory(scorer_params), "scorer")
    timeout = spec.get("stage_timeout_s")
    pipeline: Pipeline = _built(partial(Pipeline, stages, scorer, stage_timeout_s=timeout),
                                "pipeline")  # fmt: skip
    return pipeline


def _built(make: Callable[[], Any], field: str) -> Any:
    """Call ``make``; turn a bad parameter into a one-line error naming ``field``."""
    try:
        return make()
    except ConfigurationError as exc:
        raise ConfigurationError(exc.message, field=field) from None
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(str(exc), field=field) from None


_WITHOUT_RERANK: list[dict[str, Any]] = [
    {"stage": "semantic", "limit": 50}, {"stage": "lexical", "limit": 50},
    {"stage": "hydrate"}, {"stage": "graph", "depth": 2, "max_expansion": 100},
    {"stage": "hydrate", "name": "hydrate_expanded"},
    {"stage": "temporal_decay", "half_life_s": 90 * DAY_S, "floor": 0.1},
]  # fmt: skip

PRESETS: dict[str, dict[str, Any]] = {
    "minimal": {
        "stages": [{"stage": "semantic", "limit": 50}, {"stage": "hydrate"}],
        "scorer": {"kind": "weighted", "weights": {"semantic": 1.0}},
    },
    "no_rerank": {
        "stages": _WITHOUT_RERANK,
        "scorer": {"kind": "weighted", "weights": {
            "semantic": 0.40, "lexical": 0.20, "graph": 0.25, "temporal": 0.15}},
    },
    "standard": {
        "stages": [*_WITHOUT_RERANK, {"stage": "rerank", "top_k": 20}],
        "scorer": {"kind": "weighted", "weights": {
            "semantic": 0.30, "lexical": 0.10, "graph": 0.25, "temporal": 0.15,
            "rerank": 0.20}},
    },
}  # fmt: skip
"""The presets' definitions (seed 002 "Using Presets"; weights from its Weighted Scorer)."""


def preset_pipeline(name: str, components: PipelineComponents) -> Pipeline:
    """Return the preset ``name`` (``standard``, ``minimal``, ``no_rerank``).

    Raises:
        ConfigurationError: no preset has that name (listing them), or it needs a component
            the index lacks (``standard``: a reranker; ``standard``/``no_rerank``: a graph).
    """
    if name not in PRESETS:
        raise ConfigurationError(
            f"no pipeline preset {name!r}; presets: {', '.join(sorted(PRESETS))}",
            field="--pipeline",
        )
    return pipeline_from_spec(PRESETS[name], components)
