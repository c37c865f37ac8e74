"""Builds the chat model of each role (`domain.llm.roles`) from the ``llm`` section.

The top-level provider (``llm.kind`` ...) is the default model; ``llm.tiers`` names a
``fast`` and a ``strong`` model; ``llm.roles`` maps each role to one of them or to a model of
its own. Each distinct model is built once and wrapped once (`wrap_chat_model`): roles
choosing the same model share one instance, so they share its concurrency bound
(``llm.max_concurrency`` is per model); every model writes to the same response cache
(replies are keyed by model id, so models never answer for each other).
"""

from __future__ import annotations

from collections.abc import Callable

from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
from unified_kg_rag.adapters.registry import CHAT_MODELS
from unified_kg_rag.config.llm import ChatModelChoice, LLMConfig
from unified_kg_rag.domain.llm.roles import ROLES, RoleModels
from unified_kg_rag.ports import ChatModel, RecordStore
from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["build_role_models", "check_role_models"]


def _provider_key(choice: ChatModelChoice) -> str:
    """What makes two choices one model: the provider part, prices left out."""
    return choice.model_dump_json(
        include={"kind", "openai", "bedrock", "scripted"}, round_trip=True
    )


def _field_of(source: str, role: str) -> str:
    return f"llm.roles.{role}.kind" if source == "inline" else f"llm.tiers.{source}.kind"


def check_role_models(llm: LLMConfig) -> None:
    """Check every role's choice: tiers configured, providers registered.

    Raises:
        ConfigurationError: a role names a tier that is not configured (field
            ``llm.roles.<role>``), or a tier or a role's own model has kind ``none`` or
            names no registered provider (field ``llm.tiers.<tier>.kind`` /
            ``llm.roles.<role>.kind``).
    """
    CHAT_MODELS.get(llm.kind)
    for role in ROLES:
        source, choice = llm.role_choice(role)
        if choice is not None and choice.kind not in CHAT_MODELS:
            known = ", ".join(sorted(CHAT_MODELS.names()))
            raise ConfigurationError(
                f"unknown llm provider {choice.kind!r}; registered: {known}",
                field=_field_of(source, role),
            )


def build_role_models(
    llm: LLMConfig,
    cache: RecordStore | None,
    opened: list[object] | None = None,
    *,
    place: Callable[[LLMConfig, ChatModel], ChatModel] | None = None,
) -> RoleModels[ChatModel]:
    """Return the wrapped model of each role.

    Args:
        llm: the ``llm`` section (shared settings, default model, tiers, roles).
        cache: the response cache's store; None (or ``llm.cache`` false) leaves it out.
        opened: when given, each unwrapped provider model built is appended (the caller
            closes those with an ``aclose`` when it is done: `App.aclose`).
        place: when given, where each provider model runs: it receives the model's section
            and its adapter and returns the model the wrapper wraps (`adapters.ray`: calls
            sent to a Ray cluster).

    Returns:
        `RoleModels` whose ``default`` is the top-level model (None for ``llm.kind: none``)
        and whose ``by_role`` lists the roles served by a tier or a model of their own.

    Raises:
        ConfigurationError: see `check_role_models`.
    """
    check_role_models(llm)
    built: dict[str, ChatModel | None] = {}

    def model(section: LLMConfig) -> ChatModel | None:
        key = _provider_key(section)
        if key not in built:
            raw = CHAT_MODELS.get(section.kind)(section)
            if raw is not None and opened is not None:
                opened.append(raw)
            if raw is not None and place is not None:
                raw = place(section, raw)
            built[key] = None if raw is None else wrap_chat_model(raw, section, cache)
        return built[key]

    default = model(llm)
    by_role: dict[str, ChatModel | None] = {}
    sources: dict[str, str] = {}
    for role in ROLES:
        source, choice = llm.role_choice(role)
        if choice is not None:
            by_role[role] = model(llm.section_for(choice))
            sources[role] = source
    return RoleModels(default, by_role, sources)
