"""The ``query`` section: how questions are answered (strategy, fusion, budget, answer).

Its sub-sections live beside it: ``config/search.py`` (rerank, quotas, shares, abstention,
memory, the GraphRAG and LightRAG strategies) and ``config/lazy.py`` (``ppr``, ``lazy``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.config.access import AccessConfig
from unified_kg_rag.config.iterative import IterativeConfig
from unified_kg_rag.config.lazy import LazySearchConfig, PPRConfig
from unified_kg_rag.config.search import (
    AbstentionConfig,
    DriftSearchConfig,
    GlobalSearchConfig,
    LightRAGSearchConfig,
    LocalSearchConfig,
    MemoryConfig,
    RerankConfig,
    TypeQuotas,
    TypeShares,
)
from unified_kg_rag.config.tree import TreeQueryConfig

__all__ = ["AutoConfig", "QueryConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class AutoConfig(_Section):
    """Strategy `auto`: its rare-term guarantee (the LLM router is `query.llm_router`)."""

    rare_term_slots: int = Field(
        default=2,
        ge=0,
        le=100,
        description="Passages holding the question's rare terms (names, codes, numbers few "
        "text units contain) that `auto` keeps in the context whatever strategy it routed "
        "to: the best BM25 matches of those terms, seated after the routed strategy's best "
        "`rare_term_after` passages. 0 turns the guarantee off. Not applied with "
        "`search_mode: vector`.",
    )
    rare_term_after: int = Field(
        default=2,
        ge=0,
        le=10_000,
        description="The routed strategy's best passages that stay ahead of the rare-term "
        "passages (0: those come first). 2 kept MuSiQue recall@2 of `ppr` (0.488) where "
        "seating them first lowered it to 0.449; recall@10 rose either way.",
    )
    rare_term_max_df: int = Field(
        default=5,
        ge=1,
        le=1000,
        description="A question term is rare when at most this many text units of the index "
        "hold it (its document frequency; stopwords never count).",
    )


class QueryConfig(_Section):
    """How questions are answered."""

    index: str = Field(default="default", description="Index queried and written by default.")
    strategy: str = Field(
        default="auto",
        description="Retrieval strategy used by default. `auto` picks, by rule, the best "
        "measured strategy the index can serve (see the strategies guide).",
    )
    top_k: int = Field(
        default=10, ge=1, le=10_000, description="Text units retrieved per question."
    )
    search_mode: Literal["hybrid", "vector", "lexical"] = Field(
        default="hybrid",
        description="`hybrid` (BM25 + vector fused by weighted RRF), `vector` or `lexical`.",
    )
    rrf_k: int = Field(
        default=10,
        ge=1,
        description="RRF constant k in weight / (k + rank). 10 rather than the usual 60: it "
        "lets the top of each list count more (see the retrieval guide's measurements).",
    )
    lexical_weight: float = Field(
        default=0.7,
        ge=0,
        description="Weight of the BM25 list in RRF. 0.7 beat 1.0 on MuSiQue (recall@5 0.623 "
        "against 0.608) and lost little on the GraphRAG-Bench novels.",
    )
    vector_weight: float = Field(default=1.0, ge=0, description="Weight of the vector list in RRF.")
    candidate_k: int = Field(
        default=50, ge=1, le=100_000, description="Candidates each list contributes before fusion."
    )
    max_context_tokens: int = Field(
        default=6000, ge=64, description="Token budget of the context given to the answer step."
    )
    extractive_sentences: int = Field(
        default=16,
        ge=1,
        description="Most sentences an extractive answer (no LLM) quotes in all. Every "
        "source's closest sentence is quoted before any source's second, so the default "
        "quotes each of the 10 or so sources of a 6,000-token context.",
    )
    extractive_per_source: int = Field(
        default=2,
        ge=1,
        description="Most sentences an extractive answer quotes from one source. MuSiQue-100 "
        "(auto, answer in context for 72 questions): the answer was quoted for 31 of them "
        "with the 4 sentences closest to the question, 61 with one or two per source "
        "(`benchmarks/bench_extractive.py`).",
    )
    extractive_messages: int = Field(
        default=4,
        ge=1,
        description="Most messages of conversation transcripts an extractive answer quotes: "
        "the closest to the question over every transcript of the context (each message is "
        "evidence of its own, so an answer cites few of an archive's messages: "
        "`benchmarks/bench_messages.py`).",
    )
    extractive_lexical_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight of the question-term coverage added to each sentence's cosine when "
        "choosing extractive sentences. 1.0 put the gold answer in the extractive answer for "
        "33% of MuSiQue questions against 25% with cosine alone (0.0).",
    )
    extractive_min_relative: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="An extractive answer quotes a source's second and later sentences only "
        "when they score at least this share of the best sentence's score, so weak "
        "sentences are not quoted just to fill the count (each source's closest sentence is "
        "always quoted).",
    )
    extractive_source_floor: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="An extractive answer quotes a source only when its closest sentence "
        "scores at least this share of the best sentence's score; a source below it is "
        "listed as in the context, not cited. MuSiQue-100 (auto): the answer was quoted for "
        "60 of the 72 questions whose context held it (61 with no floor), and a source "
        "holding nothing related (\"Serve chilled.\" for a question about ice cores) is no "
        "longer quoted.",
    )
    extractive_min_coverage: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="An extractive answer is a weak match (it says so before its quotes, and "
        "`metadata.match.verdict` is `weak`) when its three best quotes hold less than this "
        "IDF-weighted share of the question's content terms. Calibrated with "
        "`benchmarks/bench_extractive.py --calibrate` (MuSiQue and novel questions asked of "
        "both corpora): on the held-out half, the verdict `weak` had precision 0.93 and "
        "recall 0.95 for questions the corpus cannot answer.",
    )
    extractive_min_similarity: float = Field(
        default=0.475,
        ge=-1,
        le=1,
        description="An extractive answer is a weak match when none of its three best quotes "
        "reaches this cosine similarity with the question (the embedding model's cosine; "
        "calibrated for the bundled all-MiniLM-L6-v2 with `extractive_min_coverage`).",
    )
    answer_max_tokens: int = Field(
        default=1024, ge=16, description="Longest generated answer, in tokens."
    )
    deadline_s: float | None = Field(
        default=None,
        gt=0,
        description="Longest a whole query may take, seconds; per call like the other query "
        "settings (an API request can pass its own). Past it, each step returns what it has: "
        "model calls still running are cut, a step falls back to its no-LLM rule or keeps "
        "its partial results, the answer is extractive from the packed sources when the "
        "model cannot finish it (a stream already writing ends there, flagged incomplete), "
        "and `metadata.deadline_hit` is true. Empty: no whole-query deadline (each model "
        "call still has its provider's `deadline_s`).",
    )
    answer_style: Literal["auto", "concise", "comprehensive"] = Field(
        default="auto",
        description="Answer prompt: `concise`, `comprehensive` (several paragraphs, Markdown), "
        "or `auto` (comprehensive for `global`, concise for every other strategy).",
    )
    mmr_lambda: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="MMR diversification of each type's candidates after reranking: relevance "
        "weight against redundancy (term overlap with items already chosen). 1.0 turns it "
        "off (the measured default: see the strategies guide).",
    )
    rerank: RerankConfig = Field(default_factory=RerankConfig, description="Reranking.")
    quotas: TypeQuotas = Field(
        default_factory=TypeQuotas, description="Items kept per section type."
    )
    type_shares: TypeShares = Field(
        default_factory=TypeShares, description="Context budget shares per section type."
    )
    abstention: AbstentionConfig = Field(
        default_factory=AbstentionConfig, description="Decline marker."
    )
    memory: MemoryConfig = Field(default_factory=MemoryConfig, description="Conversation memory.")
    llm_router: bool = Field(
        default=True,
        description="With an LLM, `auto` asks it which strategy fits the question (among those "
        "the index can serve); off, or without an LLM, the documented rule decides.",
    )
    auto: AutoConfig = Field(
        default_factory=AutoConfig, description="Strategy `auto` (rare-term guarantee)."
    )
    llm_query_processing: bool = Field(
        default=True,
        description="With an LLM, query entities (`local`, `drift`) and high/low-level keywords "
        "(`hybrid`, `mix`) are extracted by it; off, or without one, the raw question is the "
        "low-level keywords and the entity names it contains are the query entities.",
    )
    local_search: LocalSearchConfig = Field(
        default_factory=LocalSearchConfig, description="Strategy `local`."
    )
    global_search: GlobalSearchConfig = Field(
        default_factory=GlobalSearchConfig, description="Strategy `global`."
    )
    drift_search: DriftSearchConfig = Field(
        default_factory=DriftSearchConfig, description="Strategy `drift`."
    )
    lightrag: LightRAGSearchConfig = Field(
        default_factory=LightRAGSearchConfig, description="Strategies `hybrid` and `mix`."
    )
    ppr: PPRConfig = Field(default_factory=PPRConfig, description="Strategy `ppr`.")
    lazy: LazySearchConfig = Field(
        default_factory=LazySearchConfig, description="Strategy `lazy`."
    )
    tree: TreeQueryConfig = Field(default_factory=TreeQueryConfig, description="Strategy `tree`.")
    iterative: IterativeConfig = Field(
        default_factory=IterativeConfig, description="Strategy `iterative`."
    )
    access: AccessConfig = Field(
        default_factory=AccessConfig,
        description="Access counts (opt-in): recorded per retrieval for the pipeline's "
        "`access` stage.",
    )
    pipeline_modules: list[str] = Field(
        default_factory=list,
        description="Python modules imported before a staged pipeline is built, so the stages "
        "and scorers they register (`PIPELINE_STAGES`, `PIPELINE_SCORERS`) can be named in "
        "`--pipeline FILE.yaml` and the service's `pipeline`: a dotted module name importable "
        "from `sys.path`, or a `.py` file (relative to the project folder).",
    )
