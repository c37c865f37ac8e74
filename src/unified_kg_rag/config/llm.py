"""Chat-model configuration: the providers a `llm` section (or an evaluation judge) selects.

Split from `config.models` so sections that name a model of their own (the evaluation judge)
can use the same models; `config.models` re-exports every name.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from unified_kg_rag.domain.llm.roles import ModelRole
from unified_kg_rag.util.errors import ConfigurationError

__all__ = [
    "BedrockChatConfig",
    "ChatModelChoice",
    "LLMConfig",
    "ModelRoles",
    "ModelTiers",
    "OpenAIChatConfig",
    "RoleChoice",
    "ScriptedLLMConfig",
    "ScriptedReply",
    "http_url",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def http_url(value: str) -> str:
    """Return ``value`` if it is an http(s) URL, else raise ValueError (a field validator)."""
    if not value.startswith(("http://", "https://")) or len(value) < 10:
        raise ValueError("must be an http:// or https:// URL")
    return value


_CHAT_TIMEOUT = (
    "Connect and read timeout of each request, seconds: how long to wait for the connection "
    "and for each piece of the reply (not for the whole call: see `deadline_s`)."
)
_CHAT_DEADLINE = (
    "Longest one model call may take in total, seconds (a stream: until its last piece). "
    "A server sending its reply a few bytes at a time never trips `timeout_s`; past this a "
    "call fails and is retried like a timeout, and a stream that already wrote part of its "
    "reply ends there, flagged incomplete (finish reason `deadline`)."
)


class OpenAIChatConfig(_Section):
    """An OpenAI-compatible chat endpoint (OpenAI, vLLM, llama.cpp, Ollama, LM Studio)."""

    base_url: str = Field(
        default="https://api.openai.com/v1",
        description="Base URL of the API, e.g. `http://127.0.0.1:11434/v1` for Ollama.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="API key. Empty: read the variable named by `api_key_env`."
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the API key (local servers accept any value).",
    )
    model: str = Field(default="gpt-4o-mini", description="Chat model name.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    max_tokens: int = Field(default=1024, ge=1, description="Longest reply, in tokens.")
    timeout_s: float = Field(default=120.0, gt=0, description=_CHAT_TIMEOUT)
    deadline_s: float = Field(default=300.0, gt=0, description=_CHAT_DEADLINE)

    _check_url = field_validator("base_url")(http_url)


class BedrockChatConfig(_Section):
    """An Amazon Bedrock chat model, called through the Converse API (boto3, extra `aws`)."""

    model_id: str = Field(
        default="anthropic.claude-3-5-haiku-20241022-v1:0",
        description="Bedrock model id or inference-profile id/ARN passed as `modelId`.",
    )
    region: str | None = Field(
        default=None,
        description="AWS region, e.g. `us-east-1`. Empty: boto3's default chain "
        "(`AWS_REGION`/`AWS_DEFAULT_REGION`, then the profile's region).",
    )
    endpoint_url: str | None = Field(
        default=None,
        description="Override of the `bedrock-runtime` endpoint (VPC endpoint, test server). "
        "Empty: the region's public endpoint.",
    )
    profile: str | None = Field(
        default=None,
        description="Named AWS profile whose credentials are used. Empty: boto3's default "
        "credential chain (environment, shared files, instance role).",
    )
    temperature: float = Field(default=0.0, ge=0.0, le=1.0, description="Sampling temperature.")
    max_tokens: int = Field(default=1024, ge=1, description="Longest reply, in tokens.")
    timeout_s: float = Field(default=120.0, gt=0, description=_CHAT_TIMEOUT)
    deadline_s: float = Field(default=300.0, gt=0, description=_CHAT_DEADLINE)

    @field_validator("endpoint_url")
    @classmethod
    def _check_endpoint(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value)


class ScriptedReply(_Section):
    """One canned reply of the `scripted` LLM."""

    match: str = Field(description="Reply when the last user message contains this text.")
    reply: str = Field(description="The reply text.")


class ScriptedLLMConfig(_Section):
    """A deterministic LLM for tests and demos: canned replies keyed by prompt content."""

    replies: list[ScriptedReply] = Field(
        default_factory=list, description="Rules tried in order; the first match answers."
    )
    default_reply: str = Field(
        default="I cannot answer from the given sources.",
        description="Reply when no rule matches.",
    )


class ChatModelChoice(_Section):
    """One chat model: its provider, the provider's settings and its prices.

    The provider part of the ``llm`` section, also the shape of a tier (``llm.tiers.fast``)
    and of a role's own model (``llm.roles.answer: {kind: openai, openai: {...}}``).
    """

    kind: str = Field(
        default="none",
        description="LLM provider: `none` (extractive answers, no model), `openai`, `bedrock`, "
        "`scripted`.",
    )
    openai: OpenAIChatConfig = Field(
        default_factory=OpenAIChatConfig, description="Settings of the `openai` provider."
    )
    bedrock: BedrockChatConfig = Field(
        default_factory=BedrockChatConfig, description="Settings of the `bedrock` provider."
    )
    scripted: ScriptedLLMConfig = Field(
        default_factory=ScriptedLLMConfig, description="Settings of the `scripted` provider."
    )
    input_price_per_1m: float | None = Field(
        default=None,
        ge=0,
        description="Price of one million prompt tokens (any currency); with it, "
        "`ukr index --estimate` and run summaries show cost.",
    )
    output_price_per_1m: float | None = Field(
        default=None, ge=0, description="Price of one million completion tokens."
    )

    @property
    def label(self) -> str:
        """The model as configured, for people: ``openai:gpt-4o-mini``, ``bedrock:<id>``."""
        provider = getattr(self, self.kind, None)
        name = getattr(provider, "model", None) or getattr(provider, "model_id", None)
        return f"{self.kind}:{name}" if isinstance(name, str) else self.kind


class ModelTiers(_Section):
    """Two named models roles can choose (`llm.roles`): a cheap fast one and a strong one."""

    fast: ChatModelChoice | None = Field(
        default=None,
        description="The fast, cheap model (e.g. for extraction and query processing). Empty: "
        "no `fast` tier; a role naming it is a configuration error.",
    )
    strong: ChatModelChoice | None = Field(
        default=None,
        description="The strong model (e.g. for community reports and answers). Empty: no "
        "`strong` tier; a role naming it is a configuration error.",
    )


RoleChoice = Literal["default", "fast", "strong"] | ChatModelChoice
"""What serves a role: the top-level model, a tier, or a model of its own (inline)."""

_ROLE = (
    "`default` (the top-level `llm` model), `fast` or `strong` (a tier of `llm.tiers`), or a "
    "model of its own (`kind`, provider settings and prices, like a tier)."
)


class ModelRoles(_Section):
    """Which model serves each role (`domain.llm.roles`); every role defaults to `default`."""

    extraction: RoleChoice = Field(
        default="default",
        description="Graph extraction and gleaning (and claims). Changing its model "
        "re-extracts. " + _ROLE,
    )
    summaries: RoleChoice = Field(
        default="default",
        description="Description summaries and summary-tree cluster summaries. " + _ROLE,
    )
    reports: RoleChoice = Field(default="default", description="Community reports. " + _ROLE)
    query: RoleChoice = Field(
        default="default",
        description="Query processing: keywords and entities, the `auto` router, follow-up "
        "rewrites, drift's HyDE and follow-ups, iterative's controller. " + _ROLE,
    )
    answer: RoleChoice = Field(
        default="default",
        description="Final answers, lazy's map-reduce answer and global search's map and "
        "reduce steps. " + _ROLE,
    )
    judge: RoleChoice = Field(
        default="default",
        description="`ukr eval`'s judge, unless `evaluation.judge` names a model (that one "
        "wins). " + _ROLE,
    )


class LLMConfig(ChatModelChoice):
    """Which language models extract graphs, summarize, report, process queries and answer.

    The provider fields (``kind``, ``openai`` ...) are the default model; ``tiers`` and
    ``roles`` choose other models per role. Retries, concurrency and the cache are shared.
    """

    max_retries: int = Field(
        default=4, ge=0, description="Retries of a transient failure (408/429/5xx, timeouts)."
    )
    retry_initial_s: float = Field(
        default=1.0, ge=0, description="First retry delay, seconds; doubles up to retry_max_s."
    )
    retry_max_s: float = Field(default=30.0, ge=0, description="Longest retry delay, seconds.")
    max_concurrency: int = Field(
        default=4, ge=1,
        description="Model calls in flight at once, per model: the default model, each tier "
        "and each role's own model have their own limit (roles sharing a model share it).",
    )  # fmt: skip
    cache: bool = Field(
        default=True,
        description="Cache replies in the store, keyed by model, messages and parameters.",
    )
    reasoning_holdback_chars: int = Field(
        default=4096, ge=0,
        description="A streamed answer's first characters held back while a lone `</think>` "
        "(a reasoning model whose template opens the block) may still drop them; 0 streams at "
        "once, for models that never reason before a lone closing tag.",
    )  # fmt: skip
    tiers: ModelTiers = Field(
        default_factory=ModelTiers,
        description="Named models (`fast`, `strong`) that `roles` can choose.",
    )
    roles: ModelRoles = Field(
        default_factory=ModelRoles,
        description="Which model serves each role: `default`, a tier, or a model of its own.",
    )

    def role_choice(self, role: ModelRole) -> tuple[str, ChatModelChoice | None]:
        """Return what serves ``role``: (``default``|``fast``|``strong``|``inline``, model).

        The model is None for ``default`` (this section's own provider serves the role).

        Raises:
            ConfigurationError: the role names a tier that is not configured, or its model
                (tier or inline) has ``kind: none`` (field ``llm.roles.<role>`` or
                ``llm.tiers.<tier>.kind``).
        """
        choice = getattr(self.roles, role)
        if choice == "default":
            return "default", None
        if isinstance(choice, ChatModelChoice):
            if choice.kind == "none":
                raise ConfigurationError(
                    "a role's own model needs a provider (kind: openai, bedrock ...), not "
                    "`none`; use `default` for the top-level model",
                    field=f"llm.roles.{role}.kind",
                )
            return "inline", choice
        tier: ChatModelChoice | None = getattr(self.tiers, choice)
        if tier is None:
            raise ConfigurationError(
                f"names the tier `{choice}`, but llm.tiers.{choice} is not configured",
                field=f"llm.roles.{role}",
            )
        if tier.kind == "none":
            raise ConfigurationError(
                f"the tier serves llm.roles.{role} but has no provider (kind: none)",
                field=f"llm.tiers.{choice}.kind",
            )
        return choice, tier

    def serving(self, role: ModelRole) -> tuple[str, ChatModelChoice | None]:
        """Return `role_choice`, or the extraction model a graph build falls back to.

        ``summaries`` and ``reports`` with no model at all (``llm.kind: none``, role
        ``default``) name the extraction model, source ``extraction (<its source>)``.

        Raises:
            ConfigurationError: as `role_choice`.
        """
        source, choice = self.role_choice(role)
        if role in ("summaries", "reports") and choice is None and self.kind == "none":
            of, extraction = self.role_choice("extraction")
            if extraction is not None:
                return f"extraction ({of})", extraction
        return source, choice

    def section_for(self, choice: ChatModelChoice) -> LLMConfig:
        """Return this section with ``choice``'s provider and prices (shared settings kept).

        What a tier's or a role's own model is built and wrapped from: retries, concurrency,
        cache and the reasoning hold-back are this section's; it has no tiers or roles. A
        provider setting the choice does not write (``base_url``, ``api_key``, ``region`` ...)
        is the top-level ``llm.<provider>``'s, so ``tiers.fast: {kind: openai, openai: {model:
        m}}`` asks the same server with the same key; prices are the choice's own.
        """
        update: dict[str, object] = {"kind": choice.kind,
                                     "input_price_per_1m": choice.input_price_per_1m,
                                     "output_price_per_1m": choice.output_price_per_1m}
        for provider in ("openai", "bedrock", "scripted"):
            own = getattr(choice, provider)
            # settings the choice leaves out are the top-level provider's (its server, its key)
            update[provider] = getattr(self, provider).model_copy(
                update={name: getattr(own, name) for name in own.model_fields_set}
            )
        return self.model_copy(update={**update, "tiers": ModelTiers(), "roles": ModelRoles()})
