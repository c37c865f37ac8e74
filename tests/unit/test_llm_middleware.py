"""The middleware stack of adapters/llm/middleware.py, on in-memory inner models."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence

import pytest
from tenacity import RetryCallState
from tests.fakes import FakeRecordStore

from unified_kg_rag.adapters.llm.backoff import backoff_wait
from unified_kg_rag.adapters.llm.middleware import (
    CACHE_NAMESPACE,
    BoundedChatModel,
    CachingChatModel,
    MeteredChatModel,
    ReasoningStrippingChatModel,
    RetryingChatModel,
    cache_key,
    wrap_chat_model,
)
from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel
from unified_kg_rag.config.models import LLMConfig, ScriptedLLMConfig
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.util.errors import ModelError

pytestmark = pytest.mark.unit

MSGS = [Message(role="user", content="hello there")]


class Flaky:
    """Fails with the queued errors, then answers; counts attempts."""

    def __init__(self, errors: list[ModelError], reply: str = "fine") -> None:
        self.errors = list(errors)
        self.reply = reply
        self.attempts = 0
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def model_id(self) -> str:
        return "flaky"

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        self.attempts += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            if self.errors:
                raise self.errors.pop(0)
            return Completion(text=self.reply)
        finally:
            self.in_flight -= 1

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        for part in self.reply.split(" "):
            yield part + " "


def retrying(inner: Flaky, retries: int = 3) -> RetryingChatModel:
    return RetryingChatModel(inner, max_retries=retries, initial_s=0.0, max_s=0.0)


def test_transient_errors_are_retried_and_fatal_ones_are_not() -> None:
    inner = Flaky([ModelError("busy", transient=True), ModelError("busy", transient=True)])
    assert asyncio.run(retrying(inner).complete(MSGS)).text == "fine"
    assert inner.attempts == 3

    fatal = Flaky([ModelError("bad key", transient=False)])
    with pytest.raises(ModelError, match="bad key"):
        asyncio.run(retrying(fatal).complete(MSGS))
    assert fatal.attempts == 1


def test_retry_budget_is_max_retries_plus_one_attempt() -> None:
    inner = Flaky([ModelError(f"busy {i}", transient=True) for i in range(10)])
    with pytest.raises(ModelError, match="busy 2"):
        asyncio.run(retrying(inner, retries=2).complete(MSGS))
    assert inner.attempts == 3


def test_stream_retry_only_before_the_first_chunk() -> None:
    inner = Flaky([ModelError("busy", transient=True)], reply="a b c")

    async def collect() -> str:
        return "".join([c async for c in retrying(inner).stream(MSGS)])

    assert asyncio.run(collect()) == "a b c "
    assert inner.attempts == 2


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    wait = backoff_wait(1.0, 5.0)

    def state(n: int) -> RetryCallState:
        s = RetryCallState(None, None, (), {})
        s.attempt_number = n
        return s

    for n, low in [(1, 1.0), (2, 2.0), (3, 4.0)]:
        delays = [wait(state(n)) for _ in range(50)]
        assert all(low <= d <= min(low + 1.0, 5.0) for d in delays)
        assert len(set(delays)) > 1  # jitter
    assert wait(state(10)) == 5.0
    assert backoff_wait(0.0, 30.0)(state(4)) == 0.0


def test_bounded_limits_in_flight_calls_and_frees_slots_on_error() -> None:
    inner = Flaky([ModelError("x")] * 3)
    model = BoundedChatModel(inner, 2)

    async def run() -> list[Completion | BaseException]:
        return list(await asyncio.gather(*(model.complete(MSGS) for _ in range(8)),
                                         return_exceptions=True))

    results = asyncio.run(run())
    assert sum(isinstance(r, ModelError) for r in results) == 3
    assert sum(isinstance(r, Completion) for r in results) == 5
    assert inner.max_in_flight == 2


def test_cache_key_depends_on_every_parameter() -> None:
    base = {"max_tokens": 10, "temperature": 0.0, "stop": None, "json_schema": None}
    key = cache_key("m", MSGS, **base)  # type: ignore[arg-type]
    assert key == cache_key("m", list(MSGS), **base)  # type: ignore[arg-type]
    variants = [
        cache_key("other", MSGS, **base),  # type: ignore[arg-type]
        cache_key("m", [Message(role="system", content="hello there")], **base),  # type: ignore[arg-type]
        cache_key("m", MSGS, **{**base, "max_tokens": 11}),  # type: ignore[arg-type]
        cache_key("m", MSGS, **{**base, "temperature": 0.5}),  # type: ignore[arg-type]
        cache_key("m", MSGS, **{**base, "stop": ["x"]}),  # type: ignore[arg-type]
        cache_key("m", MSGS, **{**base, "json_schema": {"type": "object"}}),  # type: ignore[arg-type]
    ]
    assert len({key, *variants}) == 7


def test_unreadable_cache_entry_is_a_miss_and_is_replaced() -> None:
    store = FakeRecordStore()
    inner = Flaky([])
    model = CachingChatModel(inner, store)
    key = cache_key("flaky", MSGS, max_tokens=None, temperature=None, stop=None, json_schema=None)
    asyncio.run(store.put(CACHE_NAMESPACE, key, "not json"))
    assert asyncio.run(model.complete(MSGS)).cached is False
    assert asyncio.run(model.complete(MSGS)).cached is True
    assert inner.attempts == 1


def test_metering_counts_failed_calls_and_streams() -> None:
    model = MeteredChatModel(Flaky([ModelError("x")], reply="one two three"))

    async def run() -> None:
        with pytest.raises(ModelError):
            await model.complete(MSGS)
        await model.complete(MSGS)
        _ = [c async for c in model.stream(MSGS)]

    with usage_scope() as usage:
        asyncio.run(run())
    assert usage.calls == 3
    assert usage.cache_hits == 0
    assert usage.input_tokens == 2 * 3  # "hello there" estimated at 2 tokens, three times
    assert usage.output_tokens == 3 + 3  # estimated from the reply text (complete, stream)


def test_reasoning_stripping_keeps_other_fields() -> None:
    inner = Flaky([], reply="<think>hmm</think> yes")
    result = asyncio.run(ReasoningStrippingChatModel(inner).complete(MSGS))  # type: ignore[arg-type]
    assert result.text == "yes"


def test_wrap_builds_the_documented_order() -> None:
    raw = ScriptedChatModel(ScriptedLLMConfig())
    model = wrap_chat_model(raw, LLMConfig(kind="scripted"), FakeRecordStore())
    chain = []
    node: object = model
    while hasattr(node, "inner"):
        chain.append(type(node).__name__)
        node = node.inner
    assert chain == ["TracingChatModel", "MeteredChatModel", "QueryDeadlineChatModel",
                     "CachingChatModel",
                     "RetryingChatModel",
                     "BoundedChatModel", "ReasoningStrippingChatModel",
                     "UnicodeRepairingChatModel"]
    assert node is raw
    assert model.model_id == raw.model_id
    no_cache = wrap_chat_model(raw, LLMConfig(kind="scripted", cache=False), FakeRecordStore())
    assert "CachingChatModel" not in repr(
        type(no_cache.inner.inner.inner))  # type: ignore[attr-defined]


def test_scripted_model_through_the_stack_is_cached() -> None:
    raw = ScriptedChatModel(ScriptedLLMConfig(default_reply="<think>x</think>Answer."))
    model = wrap_chat_model(raw, LLMConfig(kind="scripted"), FakeRecordStore())
    first = asyncio.run(model.complete(MSGS))
    second = asyncio.run(model.complete(MSGS))
    assert (first.text, second.text, second.cached) == ("Answer.", "Answer.", True)
    assert raw.calls == 1
