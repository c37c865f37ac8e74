"""OpenAIChatModel and the middleware stack against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.fakes import FakeRecordStore
from tests.support.openai_server import FakeOpenAIServer, Scripted

from unified_kg_rag.adapters.llm.middleware import CACHE_NAMESPACE, wrap_chat_model
from unified_kg_rag.adapters.llm.openai import OpenAIChatModel
from unified_kg_rag.config.models import LLMConfig, OpenAIChatConfig
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import ModelError

pytestmark = pytest.mark.integration

QUESTION = [
    Message(role="system", content="You are terse."),
    Message(role="user", content="What is the capital of France?"),
]


@pytest.fixture
def server(openai_server: FakeOpenAIServer) -> FakeOpenAIServer:
    return openai_server  # the shared fixture of tests/support/fixtures.py


def llm_config(server: FakeOpenAIServer, **overrides: object) -> LLMConfig:
    openai = OpenAIChatConfig(
        base_url=server.base_url,
        api_key="test-key",  # type: ignore[arg-type]
        model="test-model",
        timeout_s=float(overrides.pop("timeout_s", 10.0)),  # type: ignore[arg-type]
    )
    fields: dict[str, object] = {
        "kind": "openai",
        "openai": openai,
        "max_retries": 2,
        "retry_initial_s": 0.0,
        "retry_max_s": 0.0,
    }
    fields.update(overrides)
    return LLMConfig.model_validate(fields)


def wrapped(server: FakeOpenAIServer, store: FakeRecordStore | None = None,
            **overrides: object) -> ChatModel:
    config = llm_config(server, **overrides)
    return wrap_chat_model(OpenAIChatModel(config.openai), config, store)


def complete(model: ChatModel, messages: list[Message] = QUESTION, **kw: object) -> Completion:
    return asyncio.run(model.complete(messages, **kw))  # type: ignore[arg-type]


def stream(model: ChatModel, messages: list[Message] = QUESTION) -> list[str]:
    async def collect() -> list[str]:
        return [chunk async for chunk in model.stream(messages)]

    return asyncio.run(collect())


def test_completion_round_trip_sends_the_parameters(server: FakeOpenAIServer) -> None:
    model = OpenAIChatModel(llm_config(server).openai)
    schema = {"title": "Answer", "type": "object", "properties": {"a": {"type": "string"}}}
    result = complete(model, max_tokens=50, temperature=0.3, stop=["\n\n"], json_schema=schema)
    assert result.text == "echo: What is the capital of France?"
    assert result.finish_reason == "stop"
    assert result.input_tokens == 9  # the server counts words of every message
    assert result.output_tokens == 7
    [request] = server.requests_to("/chat/completions")
    body = request.body
    assert body["model"] == "test-model"
    assert body["messages"][1] == {"role": "user", "content": "What is the capital of France?"}
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (50, 0.3, ["\n\n"])
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Answer"
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert request.headers["authorization"] == "Bearer test-key"
    assert model.model_id == f"openai:test-model@{server.base_url.rstrip('/')}"


def test_config_defaults_fill_max_tokens_and_temperature(server: FakeOpenAIServer) -> None:
    complete(OpenAIChatModel(llm_config(server).openai))
    body = server.requests[0].body
    assert (body["max_tokens"], body["temperature"]) == (1024, 0.0)
    assert "response_format" not in body


def test_streaming_yields_deltas_in_order(server: FakeOpenAIServer) -> None:
    chunks = stream(OpenAIChatModel(llm_config(server).openai))
    assert len(chunks) > 3
    assert "".join(chunks) == "echo: What is the capital of France?"
    assert server.requests[0].body["stream"] is True


@pytest.mark.parametrize(
    "reply",
    ["<think>The user asks about France.</think>\n\nParis.",
     "The template opened the block; reasoning here.\n</think>\nParis."],
)
def test_reasoning_is_stripped_on_complete_and_stream(server: FakeOpenAIServer,
                                                      reply: str) -> None:
    server.script(Scripted(reply=reply), Scripted(reply=reply))
    model = wrapped(server)
    assert complete(model).text == "Paris."
    assert "".join(stream(model)) == "Paris."


def test_transient_503_is_retried_until_success(server: FakeOpenAIServer) -> None:
    server.script(Scripted(status=503, message="overloaded"), Scripted(status=503))
    with usage_scope() as usage:
        result = complete(wrapped(server))
    assert result.text.startswith("echo:")
    assert len(server.requests) == 3
    assert usage.calls == 1  # one logical call, three attempts


def test_retries_give_up_after_max_retries(server: FakeOpenAIServer) -> None:
    server.script(*[Scripted(status=500, message="boom")] * 5)
    with pytest.raises(ModelError) as info:
        complete(wrapped(server, max_retries=1))
    assert info.value.transient is True
    assert info.value.status_code == 500
    assert "boom" in str(info.value)
    assert len(server.requests) == 2


def test_stream_is_retried_before_its_first_chunk(server: FakeOpenAIServer) -> None:
    server.script(Scripted(status=429, message="slow down"))
    assert "".join(stream(wrapped(server))).startswith("echo:")
    assert len(server.requests) == 2


def test_401_fails_at_once_naming_authentication_and_the_url(server: FakeOpenAIServer) -> None:
    server.script(Scripted(status=401, message="Incorrect API key provided"))
    with pytest.raises(ModelError) as info:
        complete(wrapped(server, max_retries=4))
    message = str(info.value)
    assert "authentication failed" in message
    assert server.base_url in message
    assert info.value.transient is False
    assert info.value.status_code == 401
    assert len(server.requests) == 1


def test_other_4xx_is_fatal_with_the_server_message(server: FakeOpenAIServer) -> None:
    server.script(Scripted(status=400, message="context length exceeded"))
    with pytest.raises(ModelError, match="context length exceeded") as info:
        complete(wrapped(server))
    assert info.value.transient is False
    assert len(server.requests) == 1


def test_timeout_is_transient_and_retried(server: FakeOpenAIServer) -> None:
    server.script(Scripted(delay_s=1.5), Scripted(delay_s=1.5))
    with pytest.raises(ModelError, match="timed out") as info:
        complete(wrapped(server, timeout_s=0.3, max_retries=1))
    assert info.value.transient is True
    assert len(server.requests) == 2


def test_cache_hit_makes_no_request_and_is_metered(server: FakeOpenAIServer) -> None:
    store = FakeRecordStore()
    model = wrapped(server, store)
    with usage_scope() as usage:
        first = complete(model)
        second = complete(model)
    assert len(server.requests) == 1
    assert second.cached is True
    assert first.cached is False
    assert second.text == first.text
    assert (usage.calls, usage.cache_hits) == (1, 1)
    assert asyncio.run(store.count(CACHE_NAMESPACE)) == 1
    # a different parameter is a different key
    complete(model, temperature=0.7)
    assert len(server.requests) == 2


def test_truncated_replies_are_not_cached(server: FakeOpenAIServer) -> None:
    server.script(Scripted(finish_reason="length"))
    store = FakeRecordStore()
    model = wrapped(server, store)
    assert complete(model).finish_reason == "length"
    assert complete(model).cached is False
    assert len(server.requests) == 2
    assert asyncio.run(store.count(CACHE_NAMESPACE)) == 1  # the second reply was complete


@pytest.mark.parametrize("reason", ["content_filter", "length", "abort"])
def test_replies_not_complete_are_never_cached(server: FakeOpenAIServer, reason: str) -> None:
    # Azure/OpenAI's filter cuts a reply that still carries text: it must be asked again
    server.script(Scripted(reply="<entities>partial", finish_reason=reason))
    store = FakeRecordStore()
    model = wrapped(server, store)
    first = complete(model)
    assert (first.text, first.finish_reason, first.complete) == ("<entities>partial", reason,
                                                                  False)
    second = complete(model)
    assert second.complete and second.cached is False
    assert len(server.requests) == 2
    assert asyncio.run(store.count(CACHE_NAMESPACE)) == 1  # only the complete reply


def test_an_incomplete_reply_stored_by_an_older_version_is_asked_again(
    server: FakeOpenAIServer,
) -> None:
    from unified_kg_rag.adapters.llm.caching import cache_key

    store = FakeRecordStore()
    model = wrapped(server, store)
    key = cache_key(model.model_id, QUESTION, max_tokens=None, temperature=None, stop=None,
                    json_schema=None)
    stale = Completion(text="cut", finish_reason="content_filter")
    asyncio.run(store.put(CACHE_NAMESPACE, key, stale.model_dump_json()))
    result = complete(model)
    assert result.text == "echo: What is the capital of France?" and not result.cached
    assert len(server.requests) == 1


@pytest.mark.parametrize(("sent", "read"), [("eos", "stop"), ("eos_token", "stop"),
                                            (None, "stop"), ("content_filter", "content_filter")])
def test_finish_reason_spellings(server: FakeOpenAIServer, sent: str | None, read: str) -> None:
    server.script(Scripted(finish_reason=sent))  # type: ignore[arg-type]
    assert complete(OpenAIChatModel(llm_config(server).openai)).finish_reason == read


@pytest.mark.parametrize("reason", ["stop", "length", "content_filter"])
def test_a_stream_records_its_finish_reason(server: FakeOpenAIServer, reason: str) -> None:
    from unified_kg_rag.domain.llm.finish import stream_finish

    server.script(Scripted(reply="Paris is the capital", finish_reason=reason))
    model = wrapped(server, FakeRecordStore())

    async def collect() -> tuple[str, str | None]:
        with stream_finish() as end:
            text = "".join([chunk async for chunk in model.stream(QUESTION)])
        return text, end.finish_reason

    assert asyncio.run(collect()) == ("Paris is the capital", reason)


def test_a_reply_holding_a_lone_surrogate_is_repaired_and_cached(server: FakeOpenAIServer) -> None:
    # the server sends the JSON escape of U+D83D alone: invalid Unicode that cannot be stored
    server.script(Scripted(reply="bad \ud83d char, good \ud83d\ude00 pair"))
    store = FakeRecordStore()
    result = complete(wrapped(server, store))
    assert result.text == "bad \ufffd char, good \U0001f600 pair"
    result.text.encode("utf-8")  # would raise on a lone surrogate
    assert asyncio.run(store.count(CACHE_NAMESPACE)) == 1


def test_a_streamed_surrogate_pair_split_across_chunks_is_joined(server: FakeOpenAIServer) -> None:
    server.stream_chunk_chars = 1  # one code point per chunk: the pair's halves arrive apart
    server.script(Scripted(reply="a\ud83d\ude00b\udc80"))
    assert "".join(stream(wrapped(server))) == "a\U0001f600b\ufffd"


def test_concurrency_is_bounded(server: FakeOpenAIServer) -> None:
    server.script(*[Scripted(delay_s=0.25) for _ in range(6)])
    model = wrapped(server, max_concurrency=2)

    async def many() -> list[Completion]:
        questions = [[Message(role="user", content=f"q{i}")] for i in range(6)]
        return list(await asyncio.gather(*(model.complete(q) for q in questions)))

    results = asyncio.run(many())
    assert [r.text for r in results] == [f"echo: q{i}" for i in range(6)]
    assert server.max_in_flight == 2


def test_failed_calls_free_their_slot(server: FakeOpenAIServer) -> None:
    server.script(*[Scripted(status=400) for _ in range(3)])
    model = wrapped(server, max_concurrency=1)

    async def run() -> Completion:
        for _ in range(3):
            with pytest.raises(ModelError):
                await model.complete(QUESTION)
        return await asyncio.wait_for(model.complete(QUESTION), timeout=5)

    assert asyncio.run(run()).text.startswith("echo:")


def test_usage_scope_counts_calls_and_tokens(server: FakeOpenAIServer) -> None:
    model = wrapped(server)
    with usage_scope() as outer:
        complete(model)
        with usage_scope() as inner:
            complete(model, [Message(role="user", content="one two three")])
            "".join(stream(model))
    assert inner.calls == 2
    assert outer.calls == 3
    estimate = sum(EstimateTokenCounter().count(m.content) for m in QUESTION)
    assert inner.input_tokens == 3 + estimate  # provider count, then the stream's estimate
    assert outer.input_tokens == 9 + inner.input_tokens
    assert outer.output_tokens > inner.output_tokens > 0
    assert outer.latency_s >= inner.latency_s > 0


# ----------------------------------------------------- replies of odd shape (break-it, issue 15)
# Each malformed reply is one ModelError line naming the endpoint and the field at fault, never
# a Python exception (AttributeError, TypeError, pydantic's ValidationError text).


def _completion_body(choice: dict[str, object]) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [choice]}).encode()


def _chunk(choice: dict[str, object]) -> str:
    return json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                       "choices": [choice]})


@pytest.mark.parametrize(
    ("choice", "field"),
    [({"index": 0, "finish_reason": "stop"}, "choices[0].message"),
     ({"index": 0, "finish_reason": ["stop"], "message": {"content": "Paris."}},
      "choices[0].finish_reason"),
     ({"index": 0, "finish_reason": 7, "message": {"content": "Paris."}},
      "choices[0].finish_reason"),
     ({"index": 0, "finish_reason": "stop", "message": {"content": ["Paris."]}},
      "choices[0].message.content")],
    ids=["no-message", "list-finish", "int-finish", "list-content"],
)
def test_a_malformed_reply_is_one_model_error_naming_the_endpoint_and_field(
    server: FakeOpenAIServer, choice: dict[str, object], field: str
) -> None:
    server.script(Scripted(raw_body=_completion_body(choice), times=None))
    with pytest.raises(ModelError) as info:
        complete(wrapped(server))
    message = str(info.value)
    assert type(info.value).__name__ == "ModelOutputError"  # the reply's own failure
    assert server.base_url in message and f"`{field}`" in message
    assert "\n" not in message and "pydantic" not in message and "Error" not in message


@pytest.mark.parametrize(("sent", "read"), [("STOP", "stop"), ("Stop", "stop"),
                                            ("EOS_TOKEN", "stop"), ("LENGTH", "length"),
                                            ("Content_Filter", "content_filter")])
def test_finish_reasons_compare_case_insensitively(server: FakeOpenAIServer, sent: str,
                                                   read: str) -> None:
    server.script(Scripted(finish_reason=sent), Scripted(finish_reason=sent))
    model = OpenAIChatModel(llm_config(server).openai)
    assert complete(model).finish_reason == read

    async def collect() -> str | None:
        from unified_kg_rag.domain.llm.finish import stream_finish

        with stream_finish() as end:
            [chunk async for chunk in model.stream(QUESTION)]
        return end.finish_reason

    assert asyncio.run(collect()) == read


@pytest.mark.parametrize(("finish", "field"), [(7, "finish_reason"), (["stop"], "finish_reason")])
def test_a_malformed_stream_chunk_is_one_model_error_naming_the_field(
    server: FakeOpenAIServer, finish: object, field: str
) -> None:
    server.script(Scripted(raw_events=[
        _chunk({"index": 0, "delta": {"content": "Paris."}, "finish_reason": None}),
        _chunk({"index": 0, "delta": {}, "finish_reason": finish}), "[DONE]"]))
    with pytest.raises(ModelError) as info:
        stream(OpenAIChatModel(llm_config(server).openai))
    assert server.base_url in str(info.value) and f"`choices[0].{field}`" in str(info.value)


def test_invalid_utf8_in_a_reply_reads_as_u_fffd(server: FakeOpenAIServer) -> None:
    body = _completion_body({"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Paris"}})
    server.script(Scripted(raw_body=body.replace(b'"Paris"', b'"\xff\xfeParis"')))
    result = complete(wrapped(server))
    assert result.text == "\ufffd\ufffdParis" and result.finish_reason == "stop"


def test_an_html_page_with_status_200_names_the_endpoint(server: FakeOpenAIServer) -> None:
    server.script(Scripted(raw_body=b"<html><h1>502 Bad Gateway</h1></html>",
                           content_type="text/html"))
    with pytest.raises(ModelError, match="did not answer with a chat completion") as info:
        complete(wrapped(server))
    assert server.base_url in str(info.value)


# A stream that ends without a finish reason: a non-streaming reply without one arrived whole
# (its JSON parsed), so it reads as finished; a stream's end is only known from its finish
# reason, and a connection cut by a proxy ends it just as cleanly. So its text is delivered,
# flagged incomplete (finish reason ``unfinished_stream``); a stream that delivered no text fails (transient).


def test_a_stream_with_text_but_no_finish_reason_delivers_its_text_flagged(
    server: FakeOpenAIServer,
) -> None:
    from unified_kg_rag.domain.llm.finish import stream_finish

    server.script(Scripted(raw_events=[
        _chunk({"index": 0, "delta": {"content": "Paris is"}, "finish_reason": None}),
        _chunk({"index": 0, "delta": {"content": " the capital."}, "finish_reason": None})]))
    model = wrapped(server)

    async def collect() -> tuple[str, str | None]:
        with stream_finish() as end:
            text = "".join([chunk async for chunk in model.stream(QUESTION)])
        return text, end.finish_reason

    assert asyncio.run(collect()) == ("Paris is the capital.", "unfinished_stream")
    assert len(server.requests) == 1


def test_a_stream_with_no_text_and_no_finish_reason_fails_transient(
    server: FakeOpenAIServer,
) -> None:
    server.script(Scripted(raw_events=["[DONE]"]))
    with pytest.raises(ModelError, match="no finish reason") as info:
        stream(OpenAIChatModel(llm_config(server).openai))
    assert info.value.transient
