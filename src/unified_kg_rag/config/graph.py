"""Configuration of LLM knowledge-graph indexing: extraction, resolution, communities, reports.

The ``graph`` section of `UkrConfig`. Which of these stages run is decided by
``indexing.methodologies`` (seed 000 §4.6); the defaults are the measured choices of seed 000
§4.1-§4.3.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from unified_kg_rag.config.claims import ClaimsConfig
from unified_kg_rag.config.extraction_schema import SchemaAlign, SchemaMode, SchemaSourceConfig
from unified_kg_rag.config.lazy import LazyIndexConfig
from unified_kg_rag.config.raptor import RaptorConfig
from unified_kg_rag.config.values import false_as_off
from unified_kg_rag.domain.extraction.grounding import GroundingMode, ShapingRules

__all__ = [
    "CommunitiesConfig",
    "ExtractionConfig",
    "GraphConfig",
    "ReportsConfig",
    "ResolutionConfig",
]

DEFAULT_ENTITY_TYPES = (
    "PERSON",
    "ORGANIZATION",
    "LOCATION",
    "EVENT",
    "WORK",
    "PRODUCT",
    "CONCEPT",
    "DATE",
)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ExtractionConfig(_Section):
    """Entity and relationship extraction per text unit, and gleaning."""

    entity_types: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ENTITY_TYPES),
        min_length=1,
        description="Entity types the extraction prompt offers (`{entity_types}`).",
    )
    prompt_file: str | None = Field(
        default=None,
        description="A file replacing the whole extraction prompt (relative to the project "
        "directory); the same as `prompts.files.extract_graph`. System part, a line "
        "`=== user ===`, then the user part; `{entity_types}` and `{text}` are filled in "
        "(`{text}` required). Changing it re-extracts every text unit.",
    )
    gleaning_prompt_file: str | None = Field(
        default=None,
        description="A file replacing the gleaning prompt (same layout; also "
        "`{current_items}`); the same as `prompts.files.glean_graph`.",
    )
    max_gleaning_rounds: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Gleaning calls per text unit at most. A unit is asked again only while "
        "its last answer added or corrected something; 0 turns gleaning off.",
    )
    max_reply_tokens: int = Field(
        default=4096,
        ge=64,
        description="Longest extraction or gleaning reply, in tokens. A reply cut at this "
        "length keeps its complete records for this run, but the unit fails for now and the "
        "next run asks again (it is quarantined if it is cut on `indexing.quarantine_after` "
        "runs in a row).",
    )
    schema_sources: list[SchemaSourceConfig] = Field(
        default_factory=list,
        description="Where the extraction schema comes from, merged in order (`inline`, "
        "`file`, `owl`, `rdfs`, `skos`; see the extraction schema guide). With a schema, its "
        "entity types replace `entity_types` in the prompt and its relationship types are "
        "offered to the model. None: no schema (items are not annotated).",
    )
    schema_mode: SchemaMode = Field(
        default="open",
        description="What a build does with items off the schema: `open` keeps and flags "
        "them (`in_schema: false`), `strict` drops them (and relationships the patterns of their "
        "type do not allow), `align` maps their type to the closest declared one. Changing it "
        "re-annotates the graph without re-extracting.",
    )
    schema_align: SchemaAlign = Field(
        default="name",
        description="How `align` maps a type: `name` (same key, a synonym, then string "
        "similarity) or `llm` (one cached call per build listing the off-schema types; "
        "falls back to `name` when it fails).",
    )
    schema_align_threshold: float = Field(
        default=85.0,
        ge=0,
        le=100,
        description="Least string similarity (rapidfuzz ratio of the type names, 0-100) for "
        "name alignment's fallback.",
    )

    grounding: Annotated[GroundingMode, BeforeValidator(false_as_off)] = Field(
        default="off",
        description="Check each extracted item's verbatim span against its text unit "
        "(normalised: NFKC, case, quotes, dashes, whitespace; then fuzzy, "
        "`grounding_min_similarity`). An item with an empty span is checked by its name "
        "(a relationship: both endpoint names). `drop` removes an ungrounded item, `weight` "
        "keeps it with its confidence (entity) or strength (relationship) multiplied by "
        "`grounding_weight`, `off` (default) checks nothing. Re-shapes the graph from the "
        "stored records: no model call.",
    )
    grounding_min_similarity: float = Field(
        default=90.0,
        ge=0,
        le=100,
        description="Lowest similarity (rapidfuzz partial ratio, 0-100) of a span to its best "
        "window of the unit's text that counts as grounded (100: verbatim after normalising).",
    )
    grounding_weight: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Under `grounding: weight`, the factor of an ungrounded item's confidence "
        "or strength (a relationship's weight sums its strengths).",
    )
    min_confidence: float | None = Field(
        default=None,
        ge=1,
        le=10,
        description="Drop entities the model rated below this confidence (1-10; after "
        "grounding's down-weighting), with the relationships their text unit states about "
        "them. Entities without a confidence are kept. None: no threshold.",
    )
    min_strength: float | None = Field(
        default=None,
        ge=1,
        le=10,
        description="Drop relationships the model rated below this strength (1-10; after "
        "grounding's down-weighting). None: no threshold.",
    )

    @property
    def shaping_rules(self) -> ShapingRules:
        """The grounding and confidence settings as `domain.extraction.grounding` reads them."""
        return ShapingRules(
            grounding=self.grounding,
            min_similarity=self.grounding_min_similarity,
            weight=self.grounding_weight,
            min_confidence=self.min_confidence,
            min_strength=self.min_strength,
        )

    @field_validator("entity_types")
    @classmethod
    def _types_not_blank(cls, value: list[str]) -> list[str]:
        cleaned = [v.strip() for v in value]
        if any(not v for v in cleaned):
            raise ValueError("entity types must not be blank")
        return cleaned


class ResolutionConfig(_Section):
    """Merging name variants and summarizing merged descriptions."""

    summarize_over_tokens: int = Field(
        default=400,
        ge=16,
        description="A merged description longer than this (tokens) is summarized by the LLM; "
        "shorter ones are kept as the concatenation of what each text unit said.",
    )
    summary_max_words: int = Field(
        default=150, ge=10, description="Length the summary prompt asks for, in words."
    )
    summary_max_input_tokens: int = Field(
        default=6000,
        ge=256,
        description="Description tokens one summary call may read; more are summarized in "
        "batches first and the batch summaries summarized again (map-reduce).",
    )
    fuzzy_threshold: float | None = Field(
        default=None,
        ge=0,
        le=100,
        description="Also merge names whose similarity (rapidfuzz token-sort ratio, 0-100) is "
        "at least this. Off by default: similarity also joins different organizations "
        "sharing most of a name. Names whose number tokens differ never merge.",
    )


class CommunitiesConfig(_Section):
    """Hierarchical Leiden communities over the entity graph (graphrag)."""

    max_cluster_size: int = Field(
        default=20,
        ge=2,
        description="A community with more members is split again into sub-communities one "
        "level down.",
    )
    min_community_size: int = Field(
        default=3,
        ge=1,
        description="Connected components with fewer entities get no community (and no "
        "report).",
    )
    seed: int = Field(
        default=0xDEADBEEF,
        description="Random seed of Leiden; the same graph and seed give the same communities.",
    )
    max_levels: int | None = Field(
        default=None, ge=1, description="Deepest hierarchy levels kept (None: all)."
    )


class ReportsConfig(_Section):
    """Community reports (graphrag)."""

    max_context_tokens: int = Field(
        default=4000,
        ge=200,
        description="Tokens of entities and relationships packed into one report prompt; "
        "sub-community summaries get a second budget of the same size when a community's own "
        "context was cut.",
    )
    max_entities: int = Field(
        default=200, ge=1, description="Entities of one community considered for its report."
    )
    max_reply_tokens: int = Field(
        default=2000, ge=128, description="Longest report reply, in tokens."
    )
    prompt_file: str | None = Field(
        default=None,
        description="A file replacing the report prompt (system part, `=== user ===`, user "
        "part; `{community_name}` and `{context}` are filled in); the same as "
        "`prompts.files.community_report`.",
    )


class GraphConfig(_Section):
    """LLM knowledge-graph indexing (needs `llm.kind` other than `none`)."""

    extraction: ExtractionConfig = Field(
        default_factory=ExtractionConfig, description="Extraction and gleaning."
    )
    resolution: ResolutionConfig = Field(
        default_factory=ResolutionConfig, description="Entity resolution and summaries."
    )
    communities: CommunitiesConfig = Field(
        default_factory=CommunitiesConfig, description="Leiden communities."
    )
    reports: ReportsConfig = Field(default_factory=ReportsConfig, description="Community reports.")
    claims: ClaimsConfig = Field(
        default_factory=ClaimsConfig,
        description="Claim (covariate) extraction per text unit; off by default.",
    )
    lazy: LazyIndexConfig = Field(
        default_factory=LazyIndexConfig, description="The LLM-free concept graph (`lazy`)."
    )
    raptor: RaptorConfig = Field(
        default_factory=RaptorConfig,
        description="The `raptor` summary tree (methodology `raptor`).",
    )
    unit_concurrency: int = Field(
        default=8,
        ge=1,
        description="Text units extracted at once (model calls are further bounded by "
        "`llm.max_concurrency`).",
    )
