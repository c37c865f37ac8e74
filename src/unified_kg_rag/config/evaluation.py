"""Configuration of `ukr eval`: the judge model, prices, and the statistics of comparisons.

Seed 000 §9: the judge is not the answer model (a judge favours its own answers); prices are
user-supplied (a shipped table would be stale); comparisons use a seeded paired bootstrap.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from unified_kg_rag.config.llm import LLMConfig, ModelRoles, ModelTiers

__all__ = ["EvaluationConfig", "ModelPrice"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ModelPrice(_Section):
    """What one model costs, per million tokens, in any one currency you choose."""

    input_per_1m: float = Field(ge=0, description="Price of one million prompt tokens.")
    output_per_1m: float = Field(ge=0, description="Price of one million completion tokens.")


class EvaluationConfig(_Section):
    """`ukr eval`: judge model, prices, bootstrap and scoring choices."""

    judge: LLMConfig = Field(
        default_factory=LLMConfig,
        description="The model that judges answers (`--judge`); it wins over `llm.roles.judge`. "
        "Its `kind: none` (the default) means the model of `llm.roles.judge` judges (by default "
        "the top-level `llm` model, with a warning when it also answers: a judge favours its "
        "own answers, so configure another model here or in `llm.roles.judge`). Its own "
        "`tiers` and `roles` are not read (and must stay unset).",
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Prices per model: the model id a run reports "
        "(`openai:gpt-4o-mini@https://api.openai.com/v1`), that id without `@…` "
        "(`openai:gpt-4o-mini`, `bedrock:<model id>`) or the bare model name; with them "
        "the comparison reports money per query.",
    )
    bootstrap_resamples: int = Field(
        default=10_000, ge=100, description="Resamples of the paired bootstrap intervals."
    )
    confidence: float = Field(
        default=0.95, gt=0.5, lt=1.0, description="Confidence level of the intervals."
    )
    seed: int = Field(default=0, description="Seed of the bootstrap and of judge orderings.")
    answer_span: Literal["first_line", "whole"] = Field(
        default="first_line",
        description="The text exact match and F1 read: the answer's first line without "
        "citation markers (a long RAG answer is not a reader's span), or the whole answer.",
    )
    assertion_trials: int = Field(
        default=3, ge=1, description="Judge calls per answer for `--judge assertions`."
    )
    judge_timeout_s: float = Field(
        default=120.0, gt=0, description="Longest one judge call may take, seconds."
    )
    judge_concurrency: int = Field(default=4, ge=1, description="Judge calls in flight at once.")

    @field_validator("judge")
    @classmethod
    def _judge_has_no_roles(cls, judge: LLMConfig) -> LLMConfig:
        if judge.tiers != ModelTiers() or judge.roles != ModelRoles():
            raise ValueError(
                "a judge is one model: its tiers and roles are not read; choose tiers per role "
                "in llm.tiers and llm.roles (llm.roles.judge)"
            )
        return judge
