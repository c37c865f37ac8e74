"""Every remote model call has a total deadline (`deadline_s`), against real HTTP servers on
127.0.0.1 that trickle their reply a few bytes at a time: chat (OpenAI-compatible and
Bedrock, whole and streamed), OpenAI-compatible embeddings (and the dimension probe), HTTP
rerank. `timeout_s` bounds each read, so a trickle never trips it; the deadline does.

Each test asserts the call ended (raised, or a stream ended flagged ``deadline``) and that it
took far less than the trickle would (a generous bound proving it did not run the trickle
out, not a speed assertion).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from tests.support.bedrock_server import BedrockScripted, FakeBedrockServer
from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.rerank_server import FakeRerankServer, ScriptedReply

from unified_kg_rag.adapters.embeddings.openai import OpenAIEmbedder
from unified_kg_rag.adapters.llm.bedrock import BedrockChatModel
from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
from unified_kg_rag.adapters.llm.openai import OpenAIChatModel
from unified_kg_rag.adapters.rerank.http import HttpReranker
from unified_kg_rag.config.models import (
    BedrockChatConfig,
    LLMConfig,
    OpenAIChatConfig,
    OpenAIEmbeddingsConfig,
)
from unified_kg_rag.domain.llm.finish import stream_finish
from unified_kg_rag.domain.models import Message
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import EmbeddingModelError, ModelError

pytestmark = pytest.mark.integration

T = TypeVar("T")
QUESTION = [Message(role="user", content="What is the capital of France?")]
LONG_REPLY = "Paris is the capital of France. " * 8  # ~260 characters, 65 stream deltas
DEADLINE_S = 1.0
TRICKLE_S = 0.25  # a 300-byte body trickled one byte at a time takes 75 s
DID_NOT_HANG_S = 15.0


def timed(work: Callable[[], T]) -> tuple[T | BaseException, float]:
    """Run ``work``; return its result (or the exception it raised) and the seconds taken."""
    started = time.perf_counter()
    try:
        value: T | BaseException = work()
    except Exception as exc:
        value = exc
    return value, time.perf_counter() - started


def openai_chat(server: FakeOpenAIServer, *, retries: int = 0) -> ChatModel:
    raw = OpenAIChatModel(OpenAIChatConfig(base_url=server.base_url, api_key="k",  # type: ignore[arg-type]
                                           timeout_s=30.0, deadline_s=DEADLINE_S))  # fmt: skip
    return wrap_chat_model(raw, LLMConfig(max_retries=retries, retry_initial_s=0.0), None)


def streamed(model: ChatModel) -> tuple[str, str | None]:
    async def collect() -> tuple[str, str | None]:
        with stream_finish() as finish:
            text = "".join([piece async for piece in model.stream(QUESTION)])
        return text, finish.finish_reason

    return asyncio.run(collect())


# ---------------------------------------------------------------- OpenAI-compatible chat


def test_openai_complete_past_its_deadline_fails_transient(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Scripted(reply=LONG_REPLY, trickle_s=TRICKLE_S))
    model = openai_chat(openai_server)
    error, elapsed = timed(lambda: asyncio.run(model.complete(QUESTION)))
    assert isinstance(error, ModelError) and error.transient
    assert "deadline of 1 s (llm.openai.deadline_s)" in str(error)
    assert elapsed < DID_NOT_HANG_S


def test_openai_call_past_its_deadline_is_retried_with_a_fresh_deadline(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.script(Scripted(reply=LONG_REPLY, trickle_s=TRICKLE_S))
    model = openai_chat(openai_server, retries=1)
    reply, elapsed = timed(lambda: asyncio.run(model.complete(QUESTION)))
    assert not isinstance(reply, BaseException)
    assert reply.text.startswith("echo: ")  # the retry got the server's normal reply
    assert len(openai_server.requests_to("/chat/completions")) == 2
    assert elapsed < DID_NOT_HANG_S


def test_openai_stream_past_its_deadline_before_any_delta_fails(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.script(Scripted(reply=LONG_REPLY, trickle_s=TRICKLE_S))
    result, elapsed = timed(lambda: streamed(openai_chat(openai_server)))
    assert isinstance(result, ModelError) and result.transient
    assert "llm.openai.deadline_s" in str(result)
    assert elapsed < DID_NOT_HANG_S


def test_openai_stream_past_its_deadline_after_deltas_ends_flagged(
    openai_server: FakeOpenAIServer,
) -> None:
    # the first ~6 events (role, 5 deltas of 4 characters) at once, then a byte every 0.25 s
    openai_server.script(Scripted(reply=LONG_REPLY, trickle_s=TRICKLE_S,
                                  trickle_after_bytes=1200))  # fmt: skip
    result, elapsed = timed(lambda: streamed(openai_chat(openai_server)))
    assert not isinstance(result, BaseException)
    text, reason = result
    assert reason == "deadline"
    assert text and LONG_REPLY.startswith(text) and len(text) < len(LONG_REPLY)
    assert elapsed < DID_NOT_HANG_S


# --------------------------------------------------------------------------------- Bedrock


@pytest.fixture
def bedrock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeBedrockServer]:
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTING")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with FakeBedrockServer() as running:
        yield running


def bedrock_chat(server: FakeBedrockServer) -> ChatModel:
    raw = BedrockChatModel(BedrockChatConfig(endpoint_url=server.endpoint_url,
                                             region="us-east-1", timeout_s=30.0,
                                             deadline_s=DEADLINE_S))  # fmt: skip
    return wrap_chat_model(raw, LLMConfig(max_retries=0), None)


def test_bedrock_converse_past_its_deadline_fails_transient(bedrock: FakeBedrockServer) -> None:
    bedrock.script(BedrockScripted(reply=LONG_REPLY, trickle_s=TRICKLE_S))
    model = bedrock_chat(bedrock)
    error, elapsed = timed(lambda: asyncio.run(model.complete(QUESTION)))
    assert isinstance(error, ModelError) and error.transient
    assert "llm.bedrock.deadline_s" in str(error)
    assert elapsed < DID_NOT_HANG_S  # asyncio.run returned: no thread held the loop's exit


def test_bedrock_stream_past_its_deadline_before_any_delta_fails(
    bedrock: FakeBedrockServer,
) -> None:
    bedrock.script(BedrockScripted(reply=LONG_REPLY, trickle_s=TRICKLE_S))
    result, elapsed = timed(lambda: streamed(bedrock_chat(bedrock)))
    assert isinstance(result, ModelError) and result.transient
    assert "llm.bedrock.deadline_s" in str(result)
    assert elapsed < DID_NOT_HANG_S


def test_bedrock_stream_past_its_deadline_after_deltas_ends_flagged(
    bedrock: FakeBedrockServer,
) -> None:
    # botocore reads an event stream 64 KiB at a time: the first 70,000 bytes (some 450
    # frames) come at once, the rest a byte every 0.25 s
    reply = LONG_REPLY * 12
    bedrock.script(BedrockScripted(reply=reply, trickle_s=TRICKLE_S,
                                   trickle_after_bytes=70_000))  # fmt: skip
    result, elapsed = timed(lambda: streamed(bedrock_chat(bedrock)))
    assert not isinstance(result, BaseException)
    text, reason = result
    assert reason == "deadline"
    assert text and reply.startswith(text) and len(text) < len(reply)
    assert elapsed < DID_NOT_HANG_S


# ---------------------------------------------------------------------- embeddings, rerank


def embedder(server: FakeOpenAIServer, **fields: object) -> OpenAIEmbedder:
    config = OpenAIEmbeddingsConfig.model_validate({
        "base_url": server.base_url, "api_key": "k", "timeout_s": 30.0,
        "deadline_s": DEADLINE_S, **fields})  # fmt: skip
    return OpenAIEmbedder(config, max_retries=0)


def test_embeddings_past_their_deadline_fail_transient(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Scripted(path="/embeddings", trickle_s=TRICKLE_S))
    model = embedder(openai_server, dimension=8)
    error, elapsed = timed(lambda: asyncio.run(model.embed_documents(["a passage"])))
    assert isinstance(error, EmbeddingModelError) and error.transient
    assert "embeddings.openai.deadline_s" in str(error)
    assert elapsed < DID_NOT_HANG_S


def test_the_blocking_dimension_probe_has_the_deadline_too(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.script(Scripted(path="/embeddings", trickle_s=TRICKLE_S))
    model = embedder(openai_server)  # no configured dimension: reading it probes
    error, elapsed = timed(lambda: model.dimension)
    assert isinstance(error, EmbeddingModelError) and error.transient
    assert "embeddings.openai.deadline_s" in str(error)
    assert elapsed < DID_NOT_HANG_S


def test_rerank_past_its_deadline_fails_transient() -> None:
    with FakeRerankServer(style="tei") as server:
        server.script(ScriptedReply(trickle_s=TRICKLE_S))
        reranker = HttpReranker(server.url, timeout_s=30.0, deadline_s=DEADLINE_S,
                                max_retries=0)  # fmt: skip
        texts = [f"passage {i} about owls and voles" for i in range(8)]
        error, elapsed = timed(lambda: asyncio.run(reranker.rerank("owls", texts)))
    assert isinstance(error, ModelError) and error.transient
    assert "query.rerank.deadline_s" in str(error)
    assert elapsed < DID_NOT_HANG_S


# ------------------------------------------------- the deadline bounds the call, not the setup
# A process's first call builds its client: importing the SDK, an HTTP pool, the lazily loaded
# API resources (1-2 s on a loaded machine, more under heavy load; boto3 likewise). That setup
# happened inside the deadline clock, so on a healthy server the first call of a run (a
# `--retry-quarantined` run's only extraction, say) timed out before any request was sent and
# counted as the item's own failure. The setup is slowed here (SLOW_SETUP_S, past the
# deadline) to stand for that machine.

SLOW_SETUP_S = 1.5


def _slow(factory: Callable[..., T]) -> Callable[..., T]:
    def build(*args: object, **kwargs: object) -> T:
        time.sleep(SLOW_SETUP_S)
        return factory(*args, **kwargs)

    return build


def test_openai_client_setup_does_not_count_against_the_call_deadline(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import unified_kg_rag.adapters.llm.openai as module

    monkeypatch.setattr(module, "make_async_client", _slow(module.make_async_client))
    model = openai_chat(openai_server)
    result = asyncio.run(model.complete(QUESTION))
    assert result.text == "echo: What is the capital of France?"
    assert len(openai_server.requests_to("/chat/completions")) == 1


def test_openai_stream_client_setup_does_not_count_against_the_call_deadline(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import unified_kg_rag.adapters.llm.openai as module

    monkeypatch.setattr(module, "make_async_client", _slow(module.make_async_client))
    assert streamed(openai_chat(openai_server)) == ("echo: What is the capital of France?", "stop")


def test_embeddings_client_setup_does_not_count_against_the_call_deadline(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import unified_kg_rag.adapters.embeddings.openai as module

    monkeypatch.setattr(module, "make_async_client", _slow(module.make_async_client))
    embedder = OpenAIEmbedder(OpenAIEmbeddingsConfig(base_url=openai_server.base_url, model="e",
                                                     deadline_s=DEADLINE_S), max_retries=0)  # fmt: skip
    vectors = asyncio.run(embedder.embed_documents(["a text"]))
    assert vectors.shape == (1, 8)
    assert len(openai_server.requests_to("/embeddings")) == 1


def test_bedrock_client_setup_does_not_count_against_the_call_deadline(
    bedrock: FakeBedrockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import unified_kg_rag.adapters.llm.bedrock as module

    monkeypatch.setattr(module, "_make_client", _slow(module._make_client))
    bedrock.script(BedrockScripted(reply="Paris."))
    model = bedrock_chat(bedrock)
    assert asyncio.run(model.complete(QUESTION)).text == "Paris."
    assert streamed(model)[1] == "stop"
