"""Configuration of the `tree` strategy (``query.tree``): RAPTOR's collapsed tree, searched hybrid.

The summary tree itself is built by the `raptor` methodology at indexing time; these settings
only shape how a query reads it (seed 000 §6.5, "Retrieval: `tree`"). The defaults are the
seed's, not measured here: `tree` is opt-in until its experiment says otherwise.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from unified_kg_rag.config.values import false_as_off

__all__ = ["TreeQueryConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TreeQueryConfig(_Section):
    """Strategy `tree`: hybrid search over text units and every level of the summary tree."""

    text_top_k: int = Field(
        default=20,
        ge=1,
        le=10_000,
        description="Text units searched for and kept (before the passages added by expanding "
        "summaries); `tree` uses it in place of `query.top_k`.",
    )
    summary_top_k: int = Field(
        default=4,
        ge=0,
        le=1000,
        description="Summaries (of every level together) kept in the context. 0 answers from "
        "the text units alone. 4 (with `summary_share` 0.15) kept more supporting passages "
        "in the context than 10 (with 0.5) on MuSiQue-100 and the GraphRAG-Bench novels "
        "(recall@10 0.694 vs 0.677, 0.614 vs 0.577; `benchmarks/bench_tree.py`).",
    )
    max_nodes_per_level: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="Most summaries of any one tree level kept, so one level (often the many "
        "level-1 summaries) does not fill `summary_top_k` alone.",
    )
    expand_children: int = Field(
        default=2,
        ge=0,
        le=100,
        description="Passages of its own lineage each kept summary brings into the context "
        "(those whose stored vectors are nearest the question), placed at the summary's rank "
        "among the passages. 0 turns expansion off.",
    )
    graph_signal: Annotated[Literal["auto", "off"], BeforeValidator(false_as_off)] = Field(
        default="auto",
        description="`auto`: where the index holds an entity graph (`graphrag`, `lightrag` or "
        "`hipporag`), the entities a search (the query's mode) finds for the raw question (no "
        "model call) also rank the summaries and passages citing their text units. `off`: never.",
    )
    graph_seed_entities: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="Entities the graph signal's search keeps as seeds.",
    )
    text_weight: float = Field(
        default=1.0, ge=0, description="RRF weight of the text-unit search (`tree_text_units`)."
    )
    summary_weight: float = Field(
        default=1.0,
        ge=0,
        description="RRF weight of the summary search over every level (`tree_summaries`).",
    )
    graph_weight: float = Field(
        default=1.0,
        ge=0,
        description="RRF weight of each graph-signal list (`tree_graph_summaries`, "
        "`tree_graph_text_units`).",
    )
    summary_share: float = Field(
        default=0.15,
        ge=0,
        description="Share of `query.max_context_tokens` the summaries may fill, weighed "
        "against `query.type_shares` (text units 0.55); budget one type leaves unused goes "
        "to the other. Small, so summaries do not crowd out the passages that ground the "
        "answer (see `summary_top_k`).",
    )
