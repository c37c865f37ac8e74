"""What a staged-pipeline run reports with its answer: each stage's figures and the ranking.

`PipelineTrace` is the ``pipeline`` field of an answer (`RAGOutput`, ``ukr query --json``,
the service's ``POST /v1/query``) when a staged pipeline (`retrieval.pipeline`) did the
retrieval: the pipeline's name, each stage's duration and candidate counts in run order, and
the results the chain received, best first, with their final score and every signal.
Source: seed 002 ("Observability") and issue #22.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PipelineTrace", "StageFigures", "TracedResult"]


class StageFigures(BaseModel):
    """One stage of a run.

    Attributes:
        name: the stage's name (``semantic``, ``hydrate`` ...).
        duration_ms: wall time of the stage, milliseconds.
        candidates_in: candidates the stage received.
        candidates_out: candidates it passed on.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    duration_ms: float
    candidates_in: int
    candidates_out: int


class TracedResult(BaseModel):
    """One result of a run, as the chain received it.

    Attributes:
        id: the item's id (a text-unit id).
        score: the scorer's final score.
        signals: every named signal the candidate carried (0..1 each).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    score: float
    signals: dict[str, float] = Field(default_factory=dict)


class PipelineTrace(BaseModel):
    """The figures of the pipeline run behind an answer.

    Attributes:
        name: ``pipeline:<preset>``, ``pipeline:<file name>`` or ``pipeline:inline``.
        stages: each stage's figures, in run order.
        results: the results the chain received (text units within the query's filters),
            best first; the context is packed from them in this order.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    stages: tuple[StageFigures, ...] = ()
    results: tuple[TracedResult, ...] = ()
