"""BedrockChatModel (boto3, Converse API) against a real HTTP server on 127.0.0.1.

botocore signs and sends real requests (fake static credentials from the environment) and
parses real replies, including the binary event-stream framing of ``converse-stream``.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.bedrock_server import BedrockScripted, FakeBedrockServer

from unified_kg_rag.adapters.builtins import register_all
from unified_kg_rag.adapters.llm.bedrock import BedrockChatModel, finish_reason
from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
from unified_kg_rag.adapters.registry import CHAT_MODELS
from unified_kg_rag.config.models import BedrockChatConfig, LLMConfig
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import ConfigurationError, ModelError

pytestmark = pytest.mark.integration

QUESTION = [
    Message(role="system", content="You are terse."),
    Message(role="user", content="What is the capital of France?"),
]
MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake static credentials; no shared config files, no instance metadata lookups."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTING")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-testing")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def server() -> Iterator[FakeBedrockServer]:
    with FakeBedrockServer() as running:
        yield running


def config(server: FakeBedrockServer, **overrides: object) -> BedrockChatConfig:
    fields: dict[str, object] = {"endpoint_url": server.endpoint_url, "region": "us-east-1",
                                 "timeout_s": 5.0}
    fields.update(overrides)
    return BedrockChatConfig.model_validate(fields)


def complete(model: ChatModel, messages: list[Message] = QUESTION, **kw: object) -> Completion:
    return asyncio.run(model.complete(messages, **kw))  # type: ignore[arg-type]


def stream(model: ChatModel, messages: list[Message] = QUESTION) -> list[str]:
    async def collect() -> list[str]:
        return [chunk async for chunk in model.stream(messages)]

    return asyncio.run(collect())


def failure(model: ChatModel, *, streaming: bool = False) -> ModelError:
    with pytest.raises(ModelError) as info:
        stream(model) if streaming else complete(model)
    return info.value


def test_reply_usage_and_signed_request(server: FakeBedrockServer) -> None:
    model = BedrockChatModel(config(server))
    result = complete(model)
    assert result.text == "echo: What is the capital of France?"
    assert (result.finish_reason, result.input_tokens, result.output_tokens) == ("stop", 9, 7)
    assert model.model_id == f"bedrock:{MODEL}"
    [request] = server.requests
    assert (request.operation, request.model_id) == ("converse", MODEL)
    auth = request.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDTESTING/")
    assert "/us-east-1/bedrock/aws4_request" in auth
    assert request.headers["amz-sdk-request"] == "attempt=1; max=1"  # botocore retries off


def test_system_prompt_goes_to_system_blocks_and_turns_alternate(
    server: FakeBedrockServer,
) -> None:
    messages = [
        Message(role="system", content="You are terse."),
        Message(role="user", content="First part."),
        Message(role="user", content="Second part."),
        Message(role="assistant", content="Noted."),
        Message(role="user", content="Go on."),
    ]
    complete(BedrockChatModel(config(server)), messages)
    body = server.requests[0].body
    assert body["system"] == [{"text": "You are terse."}]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "First part."}, {"text": "Second part."}]},
        {"role": "assistant", "content": [{"text": "Noted."}]},
        {"role": "user", "content": [{"text": "Go on."}]},
    ]


def test_inference_config_from_arguments_and_defaults(server: FakeBedrockServer) -> None:
    model = BedrockChatModel(config(server, max_tokens=300, temperature=0.2))
    complete(model)
    complete(model, max_tokens=50, temperature=0.7, stop=["\n\n"])
    assert server.requests[0].body["inferenceConfig"] == {"maxTokens": 300, "temperature": 0.2}
    assert "system" in server.requests[0].body
    assert server.requests[1].body["inferenceConfig"] == {
        "maxTokens": 50, "temperature": 0.7, "stopSequences": ["\n\n"]}


def test_max_tokens_gives_finish_length(server: FakeBedrockServer) -> None:
    result = complete(BedrockChatModel(config(server)), max_tokens=3)
    assert result.text == "echo: What is"  # the server cut the reply at 3 words
    assert result.finish_reason == "length"


def test_stop_sequence_gives_finish_stop(server: FakeBedrockServer) -> None:
    server.script(BedrockScripted(reply="Paris.\n\nMore text"))
    result = complete(BedrockChatModel(config(server)), stop=["\n\n"])
    assert (result.text, result.finish_reason) == ("Paris.", "stop")


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"),
     ("guardrail_intervened", "content_filter"), ("something_new", "something_new"),
     (None, "stop")],
)
def test_finish_reason_mapping(stop_reason: str | None, expected: str) -> None:
    assert finish_reason(stop_reason) == expected


@pytest.mark.parametrize(("stop_reason", "expected"),
                         [("guardrail_intervened", "content_filter"),
                          ("content_filtered", "content_filter"), ("max_tokens", "length")])
def test_a_cut_reply_is_not_complete_streamed_or_not_and_never_cached(
    server: FakeBedrockServer, stop_reason: str, expected: str
) -> None:
    from tests.fakes import FakeRecordStore

    from unified_kg_rag.adapters.llm.middleware import CACHE_NAMESPACE, wrap_chat_model
    from unified_kg_rag.config.models import LLMConfig
    from unified_kg_rag.domain.llm.finish import stream_finish

    server.script(*[BedrockScripted(reply="partial answer", stop_reason=stop_reason)] * 3)
    llm = LLMConfig.model_validate({"kind": "bedrock", "bedrock": config(server),
                                    "retry_initial_s": 0.0, "retry_max_s": 0.0})
    store = FakeRecordStore()
    model = wrap_chat_model(BedrockChatModel(config(server)), llm, store)
    first, second = complete(model), complete(model)
    assert (first.finish_reason, first.complete) == (expected, False)
    assert second.cached is False
    assert asyncio.run(store.count(CACHE_NAMESPACE)) == 0

    async def streamed() -> tuple[str, str | None]:
        with stream_finish() as end:
            text = "".join([c async for c in model.stream(QUESTION)])
        return text, end.finish_reason

    assert asyncio.run(streamed()) == ("partial answer", expected)


def test_a_stream_without_message_stop_is_delivered_flagged_unfinished(
    server: FakeBedrockServer,
) -> None:
    # no messageStop: a cut connection ends the stream as cleanly (as for OpenAI streams)
    from unified_kg_rag.domain.llm.finish import stream_finish

    server.script(BedrockScripted(reply="Paris is the", omit_message_stop=True))
    model = BedrockChatModel(config(server))

    async def streamed() -> tuple[str, str | None]:
        with stream_finish() as end:
            text = "".join([c async for c in model.stream(QUESTION)])
        return text, end.finish_reason

    assert asyncio.run(streamed()) == ("Paris is the", "unfinished_stream")


def test_throttling_is_transient_and_sent_once(server: FakeBedrockServer) -> None:
    server.script(BedrockScripted(status=429, code="ThrottlingException", message="slow down"))
    error = failure(BedrockChatModel(config(server)))
    assert (error.transient, error.status_code) == (True, 429)
    assert "ThrottlingException" in str(error) and "slow down" in str(error)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "code"),
    [(503, "ServiceUnavailableException"), (500, "InternalServerException"),
     (408, "ModelTimeoutException")],
)
def test_server_side_failures_are_transient(server: FakeBedrockServer, status: int,
                                            code: str) -> None:
    server.script(BedrockScripted(status=status, code=code))
    error = failure(BedrockChatModel(config(server)))
    assert (error.transient, error.status_code) == (True, status)


@pytest.mark.parametrize(
    "code", ["AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException"]
)
def test_auth_errors_are_fatal(server: FakeBedrockServer, code: str) -> None:
    server.script(BedrockScripted(status=403, code=code, message="not allowed"))
    error = failure(BedrockChatModel(config(server)))
    assert (error.transient, error.status_code) == (False, 403)
    assert str(error).startswith(f"authentication failed for bedrock model {MODEL} ({code})")


def test_validation_error_is_not_transient(server: FakeBedrockServer) -> None:
    server.script(BedrockScripted(status=400, code="ValidationException",
                                  message="maxTokens too large"))
    error = failure(BedrockChatModel(config(server)))
    assert (error.transient, error.status_code) == (False, 400)
    assert "maxTokens too large" in str(error)


def test_timeout_is_transient(server: FakeBedrockServer) -> None:
    server.script(BedrockScripted(delay_s=2.0))
    error = failure(BedrockChatModel(config(server, timeout_s=0.3)))
    assert error.transient is True
    assert len(server.requests) == 1


def test_server_down_is_transient() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cfg = BedrockChatConfig(endpoint_url=f"http://127.0.0.1:{port}", region="us-east-1")
    error = failure(BedrockChatModel(cfg))
    assert error.transient is True
    assert "cannot reach bedrock model" in str(error)


def test_streaming_yields_deltas_in_order(server: FakeBedrockServer) -> None:
    chunks = stream(BedrockChatModel(config(server)))
    assert chunks == ["echo", ": Wh", "at i", "s th", "e ca", "pita", "l of", " Fra", "nce?"]
    [request] = server.requests
    assert request.operation == "converse-stream"
    assert request.body["system"] == [{"text": "You are terse."}]


def test_streaming_an_exception_event_is_translated(server: FakeBedrockServer) -> None:
    server.script(BedrockScripted(stream_error="throttlingException", message="slow"))
    error = failure(BedrockChatModel(config(server)), streaming=True)
    assert (error.transient, error.status_code) == (True, 429)
    server.script(BedrockScripted(stream_error="validationException", message="bad"))
    error = failure(BedrockChatModel(config(server)), streaming=True)
    assert (error.transient, error.status_code) == (False, 400)


def test_streaming_http_error_before_the_stream(server: FakeBedrockServer) -> None:
    server.script(BedrockScripted(status=403, code="AccessDeniedException"))
    error = failure(BedrockChatModel(config(server)), streaming=True)
    assert (error.transient, error.status_code) == (False, 403)


def test_registered_as_bedrock_and_retried_by_the_middleware(server: FakeBedrockServer) -> None:
    register_all()
    llm = LLMConfig.model_validate({
        "kind": "bedrock", "bedrock": config(server).model_dump(), "max_retries": 2,
        "retry_initial_s": 0.0, "retry_max_s": 0.0, "cache": False,
    })
    raw = CHAT_MODELS.get("bedrock")(llm)
    assert isinstance(raw, BedrockChatModel)
    server.script(BedrockScripted(status=429, code="ThrottlingException"))
    result = complete(wrap_chat_model(raw, llm, None))
    assert result.text == "echo: What is the capital of France?"
    assert len(server.requests) == 2  # one retry, by the middleware alone


def test_missing_boto3_names_the_aws_extra(server: FakeBedrockServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # makes `import boto3` raise ImportError
    with pytest.raises(ConfigurationError, match=r"unified-kg-rag\[aws\]"):
        complete(BedrockChatModel(config(server)))
    assert server.requests == []


def test_unknown_profile_is_a_configuration_error(server: FakeBedrockServer) -> None:
    with pytest.raises(ConfigurationError, match=r"llm\.bedrock\.profile"):
        complete(BedrockChatModel(config(server, profile="no-such-profile")))
