"""Configuration of the RAPTOR summary tree (the `raptor` methodology, seed 000 §6.5).

The ``graph.raptor`` section: how text units are clustered level by level, when the tree
stops growing, and how each cluster is summarised. The defaults are RAPTOR's (Sarthi et al.,
ICLR 2024) where it has one (6 children a parent, 5 levels, a stop at 11 nodes) and seed 000
§6.5's otherwise (an 8,000-token cluster bound, a stop when a level shrinks less than 20%).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RaptorConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class RaptorConfig(_Section):
    """The summary tree: clustering, levels and summaries (methodology `raptor`)."""

    target_children: int = Field(
        default=6,
        ge=2,
        description="Children wanted per summary: a level of `n` nodes is cut into "
        "`ceil(n / target_children)` k-means clusters.",
    )
    max_cluster_tokens: int = Field(
        default=8000,
        ge=64,
        description="Most tokens of one cluster's children (the summary prompt's input); a "
        "larger cluster is clustered again until it fits. A single larger child stays alone.",
    )
    reduction_dims: int = Field(
        default=10,
        ge=1,
        description="Principal axes the embeddings are reduced to before clustering (PCA, "
        "in place of RAPTOR's UMAP).",
    )
    max_levels: int = Field(
        default=5, ge=1, description="Most summary levels above the text units."
    )
    min_nodes_to_cluster: int = Field(
        default=11,
        ge=1,
        description="A level of at most this many nodes is the top of the tree.",
    )
    min_level_shrink: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="The tree stops when the next level would hold less than this share "
        "fewer nodes than the current one.",
    )
    max_summary_tokens: int = Field(
        default=300, ge=16, description="Longest summary of a cluster, in tokens."
    )
    summaries: Literal["auto", "llm", "extractive"] = Field(
        default="auto",
        description="Who writes the summaries: `llm`, `extractive` (the children's sentences "
        "nearest the cluster centroid, no model call), or `auto` (the LLM when one is "
        "configured, extractive otherwise).",
    )
    seed: int = Field(
        default=0, ge=0, description="Seeds the choice of the initial k-means centres."
    )
    min_leaves: int = Field(
        default=3,
        ge=1,
        description="Fewer text units build no tree (the run says so).",
    )
