"""Configuration of the `iterative` strategy (``query.iterative``): bridge follow-up rounds.

The defaults were chosen on MuSiQue-100 indexed without an LLM (``ukr eval`` against the
base, recorded in the strategies guide), not guessed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["IterativeConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class IterativeConfig(_Section):
    """Strategy `iterative`: the base search, then follow-up rounds on bridge entities."""

    base: Literal["local", "mix", "ppr"] = Field(
        default="ppr",
        description="The strategy each round runs (round 0 is its own search, unchanged). "
        "`iterative` serves an index exactly when this strategy does. `ppr` serves the "
        "LLM-free `lazy` index too, where `iterative` over it was measured best.",
    )
    max_rounds: int = Field(
        default=2, ge=0, le=5, description="Follow-up rounds after round 0 (0: the base alone)."
    )
    max_next_queries: int = Field(
        default=2,
        ge=0,
        le=5,
        description="Most follow-up text searches a round runs (the controller's "
        "`next_queries` with an LLM; `question + bridge term` for the best bridges without).",
    )
    round_top_k: int = Field(
        default=5, ge=1, le=100, description="Text units each follow-up text search returns."
    )
    max_bridge_terms: int = Field(
        default=5,
        ge=0,
        le=20,
        description="Most bridge entities (or concepts) a round follows; they seed the base "
        "rerun (local's query entities, mix's low-level keywords, ppr's search text).",
    )
    bridge_passages: int = Field(
        default=5,
        ge=1,
        le=50,
        description="Without an LLM: how many of the last round's top passages bridge terms "
        "are taken from (5 beat 3 and 8 on MuSiQue-100's recall@10).",
    )
    first_round_weight: float = Field(
        default=2.0,
        ge=0,
        description="RRF weight of round 0's ranking in the final fusion (each follow-up "
        "round's buckets weigh 1): above 1 so that round 0's top candidates stay on top.",
    )
    text_weight: float = Field(
        default=1.0, ge=0, description="RRF weight of each round's follow-up text searches."
    )
    rerun_base: bool = Field(
        default=True,
        description="Rerun the base, seeded with the bridge terms, in each follow-up round "
        "(off: the round is its text searches only).",
    )
    followup_query: Literal["question_bridge", "bridge"] = Field(
        default="question_bridge",
        description="Without an LLM, the text each follow-up search runs: `question_bridge` "
        "(the question and the bridge term) or `bridge` (the bridge term alone).",
    )
    rerun_query: Literal["question_bridges", "first_query"] = Field(
        default="question_bridges",
        description="The search text of the base's rerun: `question_bridges` (the question and "
        "the round's bridge terms) or `first_query` (the round's first follow-up query, the "
        "bridges joined when it has none).",
    )
    decompose: bool = Field(
        default=False,
        description="With an LLM: one call splits the question into at most `max_rounds + 1` "
        "single-hop steps (`#n` names step n's answer), each run as one follow-up round, in "
        "place of the controller's verdicts. A step's answer is read without a model call "
        "(the best bridge term of its passages). Ignored without an LLM.",
    )
    controller_context_tokens: int | None = Field(
        default=None,
        ge=256,
        description="Token budget of the candidates the controller reads (null: "
        "`query.max_context_tokens`, what the answer reads).",
    )
