"""Pipelines by name or by definition: the stage and scorer registries and the presets.

A pipeline definition (the YAML of ``ukr query --pipeline FILE.yaml``) names its stages and
scorer::

    stages:
      - {stage: semantic, limit: 50}
      - {stage: hydrate}
      - {stage: graph, depth: 2, max_expansion: 100}
    scorer: {kind: weighted, weights: {semantic: 0.6, graph: 0.4}}
    stage_timeout_s: 30

Stages and scorers are looked up in `PIPELINE_STAGES` and `PIPELINE_SCORERS`, where a user's
own register too. The presets ``standard``, ``minimal`` and ``no_rerank`` follow seed 002
("Using Presets") with the seed's weights; their ``graph`` stage propagates the candidates'
relevance (`GraphExpansionStage.propagate`), which measured better on MuSiQue than the plain
distance (``benchmarks/bench_pipeline.py``, the pipeline guide's figures). Source: seed 002
and issue #22.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from unified_kg_rag.config.query import QueryConfig
from unified_kg_rag.domain.ranking.signals import Scorer, WeightedScorer
from unified_kg_rag.ports import AccessLog, Embedder, GraphStore, IndexStores, Reranker, SearchIndex
from unified_kg_rag.retrieval.strategies.base import BuildCache
from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph
from unified_kg_rag.util.errors import ConfigurationError
from unified_kg_rag.util.registry import Registry

from .pipeline import Pipeline, RunObserver, Stage
from .pipeline_centrality import PageRankStage, PPRStage
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
    "components_of",
    "pipeline_from_spec",
    "preset_pipeline",
]

DAY_S = 86_400.0
MAX_STAGES = 32
"""The most stages a definition lists (a service client's definition is bounded)."""


@dataclass(frozen=True)
class PipelineComponents:
    """What stages are built from: the index's stores and the query-time models.

    Attributes:
        index: the search index.
        embedder: the embedding model.
        graph: the graph store (None: stages over the entity graph refuse to build).
        reranker: the reranker (None: ``rerank`` refuses to build).
        stores: the index's stores (None: ``pagerank`` and ``ppr`` refuse to build, and
            ``temporal_decay`` looks up no time for units stored without one).
        settings: the query settings (None: ``ppr`` refuses to build).
        concept_graphs: loaded concept graphs kept between queries (None: ``ppr`` keeps its
            own); the `App`'s.
        warned: indexes ``pagerank`` has warned about (one warning per index).
        access_log: the index's access counts, read by ``access`` (None: it reads the
            candidates' ``access_count`` metadata).
        observers: told of each run of the pipelines built (the `AccessRecorder` when
            ``query.access.record`` is on).
    """

    index: SearchIndex
    embedder: Embedder
    graph: GraphStore | None = None
    reranker: Reranker | None = None
    stores: IndexStores | None = None
    settings: QueryConfig | None = None
    concept_graphs: BuildCache[LoadedConceptGraph] | None = None
    warned: set[str] = field(default_factory=set)
    access_log: AccessLog | None = None
    observers: tuple[RunObserver, ...] = ()


StageFactory = Callable[[PipelineComponents, dict[str, Any]], Stage]
"""Builds a stage from the components and the definition's parameters (unknown ones: error)."""
ScorerFactory = Callable[[dict[str, Any]], Scorer]

PIPELINE_STAGES: Registry[StageFactory] = Registry("pipeline stage", field="stages[].stage")
PIPELINE_SCORERS: Registry[ScorerFactory] = Registry("pipeline scorer", field="scorer.kind")


def _need(value: Any, stage: str, what: str) -> Any:
    if value is None:
        raise ConfigurationError(f"stage {stage!r} needs {what}")
    return value


_NO_GRAPH = ("an entity graph, which this index does not hold: build one with the graphrag, "
             "lightrag or hipporag methodology (`indexing.methodologies` and an LLM, then "
             "`ukr index PATH`)")  # fmt: skip
_NO_RERANKER = ("a reranker, and none is configured: set `query.rerank.kind` (cross_encoder "
                "with `model_path`, or http with `url`) in ukr.yaml")  # fmt: skip


PIPELINE_STAGES.register("semantic", lambda c, p: SemanticStage(c.index, c.embedder, **p))
PIPELINE_STAGES.register("lexical", lambda c, p: LexicalStage(c.index, **p))
PIPELINE_STAGES.register("hydrate", lambda c, p: HydrateStage(c.index, **p))
PIPELINE_STAGES.register(
    "graph", lambda c, p: GraphExpansionStage(_need(c.graph, "graph", _NO_GRAPH), **p)
)
PIPELINE_STAGES.register("temporal_decay", lambda c, p: temporal_decay_stage(p, c.stores))
PIPELINE_STAGES.register("access", lambda c, p: AccessStage(**{"log": c.access_log, **p}))
PIPELINE_STAGES.register(
    "rerank", lambda c, p: RerankStage(_need(c.reranker, "rerank", _NO_RERANKER), **p)
)
_NO_STORES = "the index's stores (build the components with `App.pipeline_components`)"
PIPELINE_STAGES.register("pagerank", lambda c, p: PageRankStage(
    _need(c.stores, "pagerank", _NO_STORES).records, _need(c.stores, "pagerank", _NO_STORES).name,
    warned=c.warned, **p))  # fmt: skip
PIPELINE_STAGES.register("ppr", lambda c, p: PPRStage(
    _need(c.stores, "ppr", _NO_STORES), c.embedder,
    _need(c.settings, "ppr", "the query settings (`query` of the configuration)"),
    concept_graphs=c.concept_graphs or BuildCache(), **p))  # fmt: skip
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
    if len(stages_spec) > MAX_STAGES:
        raise ConfigurationError(f"a pipeline lists at most {MAX_STAGES} stages, got "
                                 f"{len(stages_spec)}", field="stages")  # fmt: skip
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
        if entry["stage"] not in PIPELINE_STAGES:
            raise ConfigurationError(
                f"unknown pipeline stage {entry['stage']!r}; registered: "
                f"{', '.join(PIPELINE_STAGES.names())}", field=f"stages.{i}.stage")
        factory = PIPELINE_STAGES.get(entry["stage"])
        stages.append(_built(partial(factory, components, params), f"stages.{i}"))
    scorer_spec = spec.get("scorer", {"kind": "weighted", "weights": {"semantic": 1.0}})
    if not isinstance(scorer_spec, Mapping):
        raise ConfigurationError("the scorer is a mapping with a `kind`", field="scorer")
    scorer_params = {k: v for k, v in scorer_spec.items() if k != "kind"}
    scorer_factory = PIPELINE_SCORERS.get(str(scorer_spec.get("kind", "weighted")))
    scorer = _built(lambda: scorer_factory(scorer_params), "scorer")
    timeout = spec.get("stage_timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not math.isfinite(timeout) or timeout <= 0):  # fmt: skip
        raise ConfigurationError(f"must be a positive number of seconds, got {timeout!r}",
                                 field="stage_timeout_s")  # fmt: skip
    pipeline: Pipeline = _built(partial(Pipeline, stages, scorer, stage_timeout_s=timeout,
                                        observers=components.observers), "pipeline")  # fmt: skip
    return pipeline


def _built(make: Callable[[], Any], field: str) -> Any:
    """Call ``make``; turn a bad parameter into a one-line error naming ``field``."""
    try:
        return make()
    except ConfigurationError as exc:
        raise ConfigurationError(exc.message, field=field) from None
    except (TypeError, ValueError) as exc:
        unknown = re.search(r"unexpected keyword argument '(\w+)'|multiple values for "
                            r"(?:keyword )?argument '(\w+)'", str(exc))  # fmt: skip
        if unknown is not None:  # a parameter the stage or scorer does not take
            name = unknown[1] or unknown[2]
            raise ConfigurationError(f"unknown parameter {name!r}",
                                     field=f"{field}.{name}") from None  # fmt: skip
        raise ConfigurationError(str(exc), field=field) from None
    except Exception as exc:  # a user's factory failing: name it, one line
        raise ConfigurationError(f"{type(exc).__name__}: {exc}", field=field) from None


_WITHOUT_RERANK: list[dict[str, Any]] = [
    {"stage": "semantic", "limit": 50}, {"stage": "lexical", "limit": 50},
    {"stage": "hydrate"},
    {"stage": "graph", "depth": 2, "max_expansion": 100, "propagate": True},
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


async def components_of(
    stores: IndexStores, *, embedder: Embedder, reranker: Reranker | None,
    settings: QueryConfig, concept_graphs: BuildCache[LoadedConceptGraph],
    warned: set[str], access_log: AccessLog | None = None, base_dir: Path | None = None,
) -> PipelineComponents:
    """Return the components of the index ``stores`` (`App.pipeline_components`).

    The modules of ``settings.pipeline_modules`` are imported first (once per process;
    `retrieval.pipeline_plugins`), a ``.py`` file relative to ``base_dir`` (the project
    folder; None: the current directory), so the stages and scorers they register exist.

    The graph store is given only when the index holds an entity graph (a ``graph`` stage on
    another index is refused, saying what to build); ``reranker`` is None when
    ``query.rerank.kind`` is not configured (``rerank`` is then refused).

    Raises:
        ConfigurationError: a module of ``query.pipeline_modules`` failed to import.
        StoreError: the index's records could not be read.
    """
    from unified_kg_rag.domain.index.meta import (
        INDEX_NAMESPACE,
        METHODOLOGIES_KEY,
        parse_methodologies,
    )
    from unified_kg_rag.domain.index.methodologies import builds_artifact

    from .pipeline_plugins import load_pipeline_modules

    load_pipeline_modules(settings.pipeline_modules, base_dir or Path.cwd())
    held = parse_methodologies(await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY))
    return PipelineComponents(
        index=stores.search, embedder=embedder, reranker=reranker,
        graph=stores.graph if builds_artifact(held, "entity_graph") else None,
        stores=stores, settings=settings, concept_graphs=concept_graphs, warned=warned,
        access_log=access_log,
    )  # fmt: skip
