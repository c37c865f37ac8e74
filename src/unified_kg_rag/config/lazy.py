"""Configuration of the LLM-free concept graph (`lazy`) and of the `ppr` and `lazy` strategies.

Indexing settings live under ``graph.lazy``; query settings under ``query.ppr`` and
``query.lazy``. The defaults were chosen by the MuSiQue sweep recorded in
``benchmarks/bench_lazy.py`` (issue #5), then checked and re-chosen by leave-one-dataset-out
over MuSiQue and the GraphRAG-Bench novels in ``benchmarks/bench_defaults.py`` (issue 19),
not guessed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["LazyIndexConfig", "LazySearchConfig", "PPRConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class LazyIndexConfig(_Section):
    """The concept graph built without an LLM (keyphrases, containment links, Leiden)."""

    extractor: str = Field(
        default="yake",
        description="Keyphrase extractor: `yake` (statistical, no model), or `spacy` (noun "
        "phrases of a spaCy pipeline you installed yourself; nothing is downloaded).",
    )
    spacy_model: str = Field(
        default="en_core_web_sm",
        description="The installed spaCy pipeline (package name or path) `spacy` loads.",
    )
    keyphrases_per_unit: int = Field(
        default=15, ge=1, le=200, description="YAKE keyphrases taken from each text unit."
    )
    max_ngram: int = Field(default=3, ge=1, le=6, description="Longest keyphrase, in words.")
    include_titles: bool = Field(
        default=True, description="Document titles join the concept vocabulary."
    )
    link_by_containment: bool = Field(
        default=True,
        description="Link each text unit to every vocabulary concept its text contains, not "
        "only to the keyphrases extracted from it.",
    )
    min_df: int = Field(
        default=2, ge=1, description="Concepts in fewer text units are dropped (they link nothing)."
    )
    max_df: float = Field(
        default=30,
        gt=0,
        description="Concepts in more text units are dropped (too common to discriminate). A "
        "whole number is a count of units; a value below 1 a share of them.",
    )
    @model_validator(mode="after")
    def _df_window(self) -> LazyIndexConfig:
        if self.max_df > 1 and self.max_df != int(self.max_df):
            raise ValueError("max_df must be a whole number of units, or a share in (0, 1]")
        if self.max_df >= 1 and self.min_df > self.max_df:
            raise ValueError("min_df must not exceed max_df")
        return self

    min_cooccurrence: int = Field(
        default=2,
        ge=1,
        description="Concept-concept edges (for communities) need this many shared text units.",
    )


class PPRConfig(_Section):
    """Strategy `ppr`: personalized PageRank over the index's graph (HippoRAG 2)."""

    graph: Literal["auto", "entities", "concepts"] = Field(
        default="auto",
        description="Which graph: `entities` (the LLM graph), `concepts` (the `lazy` graph), "
        "or `auto` (the LLM graph when the index holds it).",
    )
    damping: float = Field(
        default=0.5, gt=0, lt=1, description="Probability of following an edge at each step."
    )
    max_iterations: int = Field(default=40, ge=1, description="Power iterations at most.")
    tolerance: float = Field(default=1e-7, gt=0, description="Stop when the L1 change is below.")
    passage_seed_top_k: int = Field(
        default=50,
        ge=1,
        description="Passage hits that seed the walk: the embedding search's, and in hybrid "
        "mode BM25's too (BM25's alone with `query.search_mode: lexical`). 50 (was 20) "
        "raised recall@10 by 0.005 on MuSiQue and 0.008 on the GraphRAG-Bench novels with "
        "BM25 seeds (the sharp seed weights make the far hits weigh little).",
    )
    passage_seed_sharpness: float = Field(
        default=20.0,
        ge=0,
        description="Passage seed weight exp(sharpness * (score - best score)) on cosine "
        "scores (concept graph).",
    )
    passage_node_weight: float = Field(
        default=2.0,
        ge=0,
        description="Entity graph: weight of the passage seeds against the fact seeds "
        "(HippoRAG 2 uses 0.05; 2.0 with `entity_passage_sharpness` 20 was measured best).",
    )
    concept_weight: float = Field(
        default=0.3,
        ge=0,
        description="Weight of a question n-gram that is a concept: this times n-gram length "
        "/ log(1 + df) (concept graph).",
    )
    entity_passage_sharpness: float = Field(
        default=20.0,
        ge=0,
        description="Entity graph: passage hit scores become exp(sharpness * (s - best)) "
        "before HippoRAG's min-max normalisation (0: HippoRAG's own weighting).",
    )
    fact_top_k: int = Field(default=5, ge=0, description="Relationship hits (facts) that seed.")
    link_top_k: int = Field(default=5, ge=1, description="Best seeded entities kept (HippoRAG).")
    max_hops: int = Field(default=2, ge=0, description="Graph expansion depth from the seeds.")
    max_entities: int = Field(
        default=200, ge=1, description="Entities of the expansion at most (entity graph)."
    )
    entity_frequency_threshold: int = Field(
        default=20, ge=1, description="An entity citing more text units links none (a hub)."
    )
    fusion_weight: float = Field(
        default=0.0,
        ge=0,
        description="RRF weight of the vector passage hits fused with the PPR order (0: PPR "
        "order alone).",
    )
    lexical_seed_weight: float = Field(
        default=2.5,
        ge=0,
        description="With `query.search_mode: hybrid`, the BM25 passage hits also seed the walk: "
        "the best with this weight, the others by `lexical_seed_sharpness` (the best vector "
        "hit weighs 1). 2.5 was chosen by leave-one-dataset-out over MuSiQue and the "
        "GraphRAG-Bench novels (`benchmarks/bench_defaults.py`): on the novels `ppr` went "
        "from 0.134 below hybrid at evidence recall@5 to 0.038 above it, MuSiQue kept its "
        "recall@5 (0.692). 0 seeds from the embedding search alone (the earlier default).",
    )
    lexical_seed_sharpness: float = Field(
        default=20.0,
        ge=0,
        description="BM25 seed weight `lexical_seed_weight * exp(sharpness * (score / best "
        "score - 1))`: a hit scoring 5% below the best weighs e^-1 of it, so a question whose "
        "rare name one passage holds seeds that passage alone. 0 weighs the k-th hit 1 / k "
        "(every hit seeds much; MuSiQue recall@5 fell to 0.609 with weight 1).",
    )
    lexical_fusion_weight: float = Field(
        default=0.0,
        ge=0,
        description="With `query.search_mode: hybrid`, RRF weight of the BM25 passage hits "
        "fused with the PPR order. 0 by default: with the BM25 seeds, 0.3 raised the novels' "
        "evidence recall@5 by 0.025 but cost MuSiQue 0.032.",
    )

    @model_validator(mode="after")
    def _sane(self) -> PPRConfig:
        if self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        return self


class LazySearchConfig(_Section):
    """Strategy `lazy` (LazyGraphRAG-style query-time relevance testing)."""

    relevance_budget: int = Field(
        default=40, ge=1, description="Text units tested for relevance per query, at most."
    )
    relevance_threshold: float = Field(
        default=0.45,
        ge=-1,
        le=1,
        description="Without an LLM, a unit is relevant when its cosine similarity to the "
        "(sub)query is at least this. 0.45 (was 0.35) was chosen by leave-one-dataset-out "
        "over MuSiQue and the GraphRAG-Bench novels, in both directions "
        "(`benchmarks/bench_defaults.py`): recall@5 0.611 against 0.594 on MuSiQue, "
        "evidence recall@5 0.583 against 0.570 on the novels.",
    )
    candidate_units: int = Field(
        default=100, ge=1, description="Text units ranked by similarity before testing."
    )
    max_subqueries: int = Field(default=3, ge=1, description="Subqueries an LLM may split into.")
