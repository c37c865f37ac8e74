"""Chat-model providers and the middleware stack every chat call goes through.

Registers the providers of ``llm.kind`` in `adapters.registry.CHAT_MODELS`:

- ``none``: no model (LLM-free indexing, extractive answers); the loader returns None;
- ``openai``: any OpenAI-compatible endpoint (`adapters.llm.openai.OpenAIChatModel`);
- ``bedrock``: Amazon Bedrock's Converse API through boto3 (`adapters.llm.bedrock`);
- ``scripted``: canned replies for tests and demos (`adapters.llm.scripted`).

Loaders return the *raw* adapter; the composition root wraps it with
`adapters.llm.middleware.wrap_chat_model`, one model per role's choice
(`adapters.llm.roles.build_role_models`: the default model, the tiers, roles' own models).
Importing this package loads no SDK: the ``openai`` and ``boto3`` packages are imported on
the first request.
"""

from __future__ import annotations

from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
from unified_kg_rag.adapters.registry import CHAT_MODELS
from unified_kg_rag.config.models import LLMConfig
from unified_kg_rag.ports import ChatModel

__all__ = ["load_bedrock", "load_none", "load_openai", "load_scripted", "wrap_chat_model"]


def load_none(config: LLMConfig) -> ChatModel | None:
    """Return None: no language model is configured."""
    return None


def load_openai(config: LLMConfig) -> ChatModel:
    """Build an `OpenAIChatModel` from ``config.openai``."""
    from unified_kg_rag.adapters.llm.openai import OpenAIChatModel

    return OpenAIChatModel(config.openai)


def load_bedrock(config: LLMConfig) -> ChatModel:
    """Build a `BedrockChatModel` from ``config.bedrock`` (boto3 is imported at first call)."""
    from unified_kg_rag.adapters.llm.bedrock import BedrockChatModel

    return BedrockChatModel(config.bedrock)


def load_scripted(config: LLMConfig) -> ChatModel:
    """Build a `ScriptedChatModel` from ``config.scripted``."""
    from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel

    return ScriptedChatModel(config.scripted)


CHAT_MODELS.register("none", load_none)
CHAT_MODELS.register("openai", load_openai)
CHAT_MODELS.register("bedrock", load_bedrock)
CHAT_MODELS.register("scripted", load_scripted)
