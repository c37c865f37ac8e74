"""Configuration of the query chain's shared steps and of the GraphRAG / LightRAG strategies.

Everything here lives under ``query``: reranking (``query.rerank``), per-type quotas and
context shares (``query.quotas``, ``query.type_shares``), the answer prompt and abstention
(``query.answer_style``, ``query.abstention``), conversation memory (``query.memory``) and
one section per strategy family (``query.local_search``, ``query.global_search``,
``query.drift_search``, ``query.lightrag``). Source of the steps: seed 000 §6, §7, §9.2.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, model_validator

from unified_kg_rag.config.values import false_as_off

__all__ = [
    "AbstentionConfig",
    "DriftSearchConfig",
    "GlobalSearchConfig",
    "LightRAGSearchConfig",
    "LocalSearchConfig",
    "MemoryConfig",
    "RerankConfig",
    "TypeQuotas",
    "TypeShares",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class RerankConfig(_Section):
    """Optional reranking of the fused candidates, before MMR and the quotas."""

    kind: str = Field(
        default="none",
        description="`none` (keep the fused order), `cross_encoder` (a local sentence-"
        "transformers cross-encoder loaded from `model_path`; nothing is downloaded) or "
        "`http` (a `/rerank` endpoint of the Cohere / Jina / TEI shape at `url`).",
    )
    model_path: str | None = Field(
        default=None, description="Directory of the local cross-encoder (`cross_encoder`)."
    )
    url: str | None = Field(
        default=None,
        description="Rerank endpoint (`http`), e.g. `http://127.0.0.1:8080/rerank` (TEI) or "
        "`https://api.cohere.com/v2/rerank`.",
    )
    model: str = Field(default="", description="Model name sent to the endpoint (`http`).")
    api_key: SecretStr | None = Field(
        default=None,
        description="Bearer token for the endpoint (`http`); or set UKR_QUERY__RERANK__API_KEY.",
    )
    top_n: int = Field(
        default=40,
        ge=1,
        le=1000,
        description="Best fused candidates of each type sent to the reranker; the rest keep "
        "their fused order behind them.",
    )
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Connect and read timeout of each request, seconds: how long to wait for "
        "the connection and for each piece of the reply (not for the whole call: see "
        "`deadline_s`).",
    )
    deadline_s: float = Field(
        default=60.0,
        gt=0,
        description="Longest one request may take in total, seconds. A server sending its "
        "reply a few bytes at a time never trips `timeout_s`; past this the request fails "
        "and is retried like a timeout (then `required` decides).",
    )
    required: bool = Field(
        default=False,
        description="Fail the query when the reranker fails. Off: keep the fused order and "
        "report the failure in the output's metadata (`rerank`).",
    )
    api_style: Literal["auto", "cohere", "tei"] = Field(
        default="auto",
        description="Request body of `http`: `cohere` (`documents`, also Jina, vLLM, Infinity), "
        "`tei` (`texts`, Hugging Face text-embeddings-inference), or `auto`: the Cohere body "
        "first, the TEI body when the server rejects it with HTTP 400/422 (then kept).",
    )
    max_batch: int = Field(
        default=32,
        ge=1,
        le=1000,
        description="Most texts per request (`http`); TEI refuses more than its "
        "`--max-client-batch-size` (32 by default).",
    )

    @model_validator(mode="after")
    def _kind_needs(self) -> RerankConfig:
        kind = self.kind.lower()
        if kind == "cross_encoder" and not (self.model_path or "").strip():
            raise ValueError(
                "`model_path` (a local cross-encoder directory) is required when kind is "
                "`cross_encoder`"
            )
        if kind == "http":
            parts = urlsplit(self.url or "")
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(
                    f"`url` must be an http:// or https:// rerank endpoint when kind is "
                    f"`http` (got {self.url!r})"
                )
        return self


class TypeQuotas(_Section):
    """Most items of each type kept after reranking and MMR (text units: ``query.top_k``)."""

    entity: int = Field(default=20, ge=0, le=1000, description="Entities kept.")
    relationship: int = Field(default=20, ge=0, le=1000, description="Relationships kept.")
    report: int = Field(default=5, ge=0, le=1000, description="Community reports kept.")
    claim: int = Field(
        default=10, ge=0, le=1000, description="Claims kept (claim extraction on; `local`)."
    )


class TypeShares(_Section):
    """Share of ``query.max_context_tokens`` each section type may fill.

    Renormalized over the types a query has candidates for; budget a type leaves unused goes
    to the types that still have candidates (seed 000 §7).
    """

    text_unit: float = Field(default=0.55, ge=0, description="Text units (passages).")
    entity: float = Field(default=0.2, ge=0, description="Entity descriptions.")
    relationship: float = Field(default=0.15, ge=0, description="Relationship descriptions.")
    report: float = Field(default=0.1, ge=0, description="Community reports.")
    claim: float = Field(
        default=0.1, ge=0, description="Claims (only present with claim extraction on)."
    )

    @model_validator(mode="after")
    def _some_share(self) -> TypeShares:
        if self.text_unit + self.entity + self.relationship + self.report + self.claim <= 0:
            raise ValueError("at least one share must be positive")
        return self


class AbstentionConfig(_Section):
    """The decline marker (seed 000 §9.2)."""

    mode: Annotated[Literal["off", "mark"], BeforeValidator(false_as_off)] = Field(
        default="off",
        description="`mark`: the answer prompt asks the model to start with `[NO_ANSWER]` when "
        "the context does not support an answer; the output then says it abstained.",
    )
    strip_marker: bool = Field(
        default=True, description="Remove the marker from the answer text."
    )


class MemoryConfig(_Section):
    """Conversation memory: follow-up questions rewritten as standalone ones."""

    max_turns: int = Field(
        default=6, ge=1, le=100, description="Previous turns read when rewriting a follow-up."
    )
    max_answer_chars: int = Field(
        default=600, ge=0, le=100_000, description="Characters of each stored answer kept."
    )


class LocalSearchConfig(_Section):
    """Strategy `local` (GraphRAG local search, seed 000 §6.1)."""

    entity_candidates: int = Field(
        default=10, ge=1, le=1000, description="Entity-index hits read per query entity."
    )
    question_lookup: bool = Field(
        default=True,
        description="Also look the whole question up in the entities index, as one more query "
        "entity (its top hit seeds when it passes `seed_score_ratio`). On MuSiQue without an "
        "LLM it raised recall@5/@10 of the ranked cited units from 0.609/0.683 to 0.645/0.724 "
        "(2 hops).",
    )
    seed_score_ratio: float = Field(
        default=0.6,
        ge=0,
        le=1,
        description="A query entity without a name match seeds its top hit only when it scores "
        "at least this share of the best hit of any query entity.",
    )
    max_hops: int = Field(
        default=2,
        ge=0,
        le=5,
        description="Graph expansion depth. 2: on MuSiQue without an LLM, recall@5/@10 of the "
        "ranked cited units 0.645/0.724 against 0.625/0.689 at 1 hop (naive 0.623/0.712).",
    )
    max_entities: int = Field(
        default=30, ge=1, le=10_000, description="Entities the expansion may reach in all."
    )
    text_unit_candidates: int = Field(
        default=60, ge=1, le=10_000, description="Cited text units ranked per query."
    )
    claim_candidates: int = Field(
        default=10,
        ge=0,
        le=1000,
        description="Claims about the expanded entities (an index built with "
        "`graph.claims.enabled`) ranked by similarity to the question, GraphRAG's covariates; "
        "0 leaves them out. An index without claims is not searched for them.",
    )
    support_weight: float = Field(
        default=1.0,
        ge=0,
        description="RRF weight of the support ranking of cited text units (how strongly the "
        "expanded entities cite them).",
    )
    similarity_weight: float = Field(
        default=1.0,
        ge=0,
        description="RRF weight of the cited text units ranked by similarity to the question.",
    )
    include_bridge_relationships: bool = Field(
        default=True,
        description="Fetch the relationships among the expanded entities, edges between two "
        "seeds first: they carry the hops of a multi-hop chain.",
    )
    report_selection: Literal["membership", "similarity"] = Field(
        default="membership",
        description="Which community reports fill `quotas.report`. `membership` (GraphRAG's "
        "local search): the reports of the communities the expanded entities belong to, each "
        "entity's deepest community first, then the ones above it (more matched entities "
        "first, then report rank), then the reports most similar to the query entities fill "
        "the rest. `similarity`: only the reports most similar to the query entities (an "
        "entity's own community report can be missing when its text does not name it).",
    )
    neighbour_decay: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Weight of an entity the expansion reached, per hop, relative to the "
        "score of the seed it was reached from (summed over seeds: a bridge reached from two "
        "seeds counts twice). Orders the entities and weighs their cited text units.",
    )
    lineage_damping: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="An entity citing n text units adds weight / n^damping to the support of "
        "each (0: every cited unit gets the full weight; 1: the weight is shared out), so a "
        "hub citing hundreds of units does not outweigh a seed's own units.",
    )
    direct_weight: float = Field(
        default=0.0,
        ge=0,
        description="RRF weight of a plain hybrid search over all text units added beside the "
        "cited ones (0: off, GraphRAG's local search reads only the units its entities cite).",
    )


class GlobalSearchConfig(_Section):
    """Strategy `global` (GraphRAG global search, seed 000 §6.1.1)."""

    level: int | None = Field(
        default=None,
        ge=0,
        description="Hierarchy cut (0 = the top communities). None: the deepest cut with at "
        "most `max_reports` reports.",
    )
    max_reports: int = Field(
        default=40,
        ge=1,
        le=10_000,
        description="Most reports mapped; a larger cut gives way to the deepest shallower cut "
        "that fits, and past the top cut the most similar reports are taken.",
    )
    map_context_tokens: int = Field(
        default=4000,
        ge=16,
        description="Report tokens per map call (reports are packed in order; a report "
        "larger than this is cut to it and mapped alone).",
    )
    map_max_tokens: int = Field(default=800, ge=16, description="Longest map reply, tokens.")
    relevance_threshold: int = Field(
        default=0, ge=0, le=100, description="Key points scoring at or below this are dropped."
    )
    points_tokens: int = Field(
        default=2000, ge=64, description="Token budget of the key-points section."
    )
    dynamic_selection: bool = Field(
        default=False,
        description="Rate reports top-down (1-10) and follow the children of relevant ones "
        "(GraphRAG's dynamic community selection) instead of a fixed cut.",
    )
    dynamic_threshold: int = Field(
        default=5, ge=1, le=10, description="Rating from which a report counts as relevant."
    )
    dynamic_max_level: int | None = Field(
        default=None,
        ge=0,
        description="Dynamic selection: deepest level rated whole when no report of the "
        "levels above was relevant (MS GraphRAG's `max_level`); None: every level. Children "
        "of relevant reports are followed to the leaves regardless.",
    )
    max_concurrency: int = Field(default=4, ge=1, le=64, description="Map calls at a time.")


class DriftSearchConfig(_Section):
    """Strategy `drift` (GraphRAG DRIFT search, seed 000 §6.1).

    Model calls per query, at most: 1 (hypothetical answer) + ``primer_folds`` +
    ``n_depth`` × ``followups_per_round``, plus the answer.
    """

    k_followups: int = Field(
        default=10, ge=1, le=200, description="Reports the primer reads."
    )
    primer_folds: int = Field(
        default=3, ge=1, le=20, description="Primer calls (the reports are split among them)."
    )
    n_depth: int = Field(default=2, ge=0, le=10, description="Rounds of follow-up searches.")
    followups_per_round: int = Field(
        default=3, ge=1, le=20, description="Best-scored open follow-ups searched per round."
    )
    max_concurrency: int = Field(
        default=4, ge=1, le=64, description="Primer calls and follow-up actions at a time."
    )
    reply_max_tokens: int = Field(
        default=800, ge=16, description="Longest hypothetical answer, primer or follow-up reply."
    )
    primer_context_tokens: int = Field(
        default=6000, ge=256, description="Report tokens given to one primer call."
    )
    action_context_tokens: int = Field(
        default=3000,
        ge=256,
        description="Context tokens of one follow-up answer call, shared among the local "
        "search's types by `query.type_shares`.",
    )


class LightRAGSearchConfig(_Section):
    """Strategies `hybrid` and `mix` (LightRAG, seed 000 §6.2)."""

    entity_top_k: int = Field(
        default=20, ge=1, le=1000, description="Entity-index hits for the low-level keywords."
    )
    relationship_top_k: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="Relationship-index hits for the high-level keywords.",
    )
    chunks_per_side: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="Cited chunks kept per side (entity side, relationship side).",
    )
    linked_chunk_weight: float = Field(
        default=1.0, ge=0, description="RRF weight of the chunks the matched entities cite."
    )
    relation_chunk_weight: float = Field(
        default=0.5,
        ge=0,
        description="RRF weight of the chunks the matched relationships cite.",
    )
    direct_chunk_weight: float = Field(
        default=1.0, ge=0, description="RRF weight of `mix`'s direct chunk retrieval."
    )
    min_similarity: float = Field(
        default=0.2,
        ge=-1,
        le=1,
        description="Vector hits of the entity and relationship searches below this cosine "
        "are dropped before fusion with the BM25 hits (LightRAG's cosine threshold, 0.2), so a "
        "small graph does not return every entity as a match.",
    )
    expansion_top_k: int = Field(
        default=20,
        ge=0,
        le=1000,
        description="Most items the one-hop expansion adds on each side: relationships "
        "incident to the matched entities, endpoint entities of the matched relationships.",
    )
    max_chunks_per_item: int = Field(
        default=5,
        ge=1,
        le=1000,
        description="Weighted polling: cited chunks the best matched item votes for; the "
        "quota falls linearly to 1 for the last item (LightRAG's `related_chunk_number`).",
    )
    linked_pool: int = Field(
        default=60,
        ge=1,
        le=10_000,
        description="Cited chunks read per side, in polling order: filtered, then cut to "
        "`chunks_per_side`, and ranked by similarity to the question.",
    )
    similarity_weight: float = Field(
        default=1.0,
        ge=0,
        description="RRF weight of the cited chunks (both sides) ranked by a hybrid search of "
        "the question restricted to their documents; 0 skips that search.",
    )
