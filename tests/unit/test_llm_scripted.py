"""The scripted chat model (adapters/llm/scripted.py) and the llm provider registry."""

from __future__ import annotations

import asyncio

import pytest

import unified_kg_rag.adapters.llm  # noqa: F401  (registers the providers)
from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel
from unified_kg_rag.adapters.registry import CHAT_MODELS
from unified_kg_rag.config.models import LLMConfig, ScriptedLLMConfig, ScriptedReply
from unified_kg_rag.domain.models import Message
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit

CONFIG = ScriptedLLMConfig(
    replies=[
        ScriptedReply(match="capital of France", reply="Paris is the capital of France."),
        ScriptedReply(match="France", reply="A country in Europe."),
    ],
    default_reply="I cannot answer.",
)


def ask(model: ScriptedChatModel, *contents: str) -> str:
    messages = [Message(role="system", content="You answer questions. France.")]
    messages += [Message(role="user", content=c) for c in contents]
    return asyncio.run(model.complete(messages)).text


def test_first_matching_rule_on_the_last_user_message_answers() -> None:
    model = ScriptedChatModel(CONFIG)
    assert ask(model, "What is the capital of France?") == "Paris is the capital of France."
    assert ask(model, "Tell me about France") == "A country in Europe."
    # only the last user message counts (not the system prompt, not earlier turns)
    assert ask(model, "capital of France?", "And of Peru?") == "I cannot answer."
    assert model.calls == 3
    assert model.prompts[-1] == "And of Peru?"


def test_max_tokens_cuts_and_reports_length() -> None:
    model = ScriptedChatModel(CONFIG)
    result = asyncio.run(
        model.complete([Message(role="user", content="capital of France")], max_tokens=2)
    )
    assert result.finish_reason == "length"
    assert result.text == "Paris is"


def test_stream_yields_the_reply_in_chunks_and_counts_one_call() -> None:
    model = ScriptedChatModel(CONFIG)

    async def collect() -> list[str]:
        msgs = [Message(role="user", content="the capital of France")]
        return [chunk async for chunk in model.stream(msgs)]

    chunks = asyncio.run(collect())
    assert len(chunks) == 3
    assert "".join(chunks) == "Paris is the capital of France."
    assert model.calls == 1


def test_model_id_changes_with_the_rules() -> None:
    other = ScriptedLLMConfig(replies=[ScriptedReply(match="x", reply="y")])
    assert ScriptedChatModel(CONFIG).model_id == ScriptedChatModel(CONFIG).model_id
    assert ScriptedChatModel(CONFIG).model_id != ScriptedChatModel(other).model_id


def test_registry_builds_each_kind() -> None:
    assert CHAT_MODELS.get("none")(LLMConfig()) is None
    scripted = CHAT_MODELS.get("scripted")(LLMConfig(kind="scripted", scripted=CONFIG))
    assert isinstance(scripted, ScriptedChatModel)
    openai_model = CHAT_MODELS.get("openai")(LLMConfig(kind="openai"))
    assert openai_model is not None
    assert openai_model.model_id == "openai:gpt-4o-mini@https://api.openai.com/v1"
    with pytest.raises(ConfigurationError, match=r"registered: .*none, openai, scripted"):
        CHAT_MODELS.get("nonesuch")
