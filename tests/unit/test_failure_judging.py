"""Whose failure is it: `FailureJudge` (graph stages) and `write_isolating` (document batches)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence

import pytest

from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ingestion.document_failures import is_document_error, write_isolating
from unified_kg_rag.ingestion.graph.failures import FailureJudge, StageStoppedError, read_reply
from unified_kg_rag.util.errors import (
    EmbeddingMismatchError,
    LeaseLostError,
    ModelError,
    ModelOutputError,
    StoreError,
)

pytestmark = pytest.mark.unit


class ProbeChat:
    """A chat model that answers (or fails) the known-good request, counting calls."""

    model_id = "probe:test"

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls = 0

    async def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None,
                       temperature: float | None = None, stop: Sequence[str] | None = None,
                       json_schema: Mapping[str, object] | None = None) -> Completion:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return Completion(text="OK", finish_reason="stop")

    def stream(self, messages: Sequence[Message], *, max_tokens: int | None = None,
               temperature: float | None = None,
               stop: Sequence[str] | None = None) -> AsyncIterator[str]:
        raise NotImplementedError


TIMEOUT = ModelError("request to http://x timed out", transient=True)


def test_output_errors_are_the_items_own_without_a_probe() -> None:
    chat = ProbeChat()
    judge = FailureJudge(chat, concurrency=4, stage="extraction")
    reason = asyncio.run(judge.judge(ModelOutputError("no <entities> section")))
    assert reason == "no <entities> section" and chat.calls == 0 and judge.stop is None


def test_a_transient_failure_before_any_answer_is_judged_by_the_probe() -> None:
    chat = ProbeChat()
    judge = FailureJudge(chat, concurrency=2, stage="extraction")
    assert asyncio.run(judge.judge(TIMEOUT)) == "request to http://x timed out"
    assert chat.calls == 1 and judge.stop is None
    # the probe answered: two more in a row are the items' own, the third probes again
    asyncio.run(judge.judge(TIMEOUT))
    asyncio.run(judge.judge(TIMEOUT))
    assert chat.calls == 1
    asyncio.run(judge.judge(TIMEOUT))
    assert chat.calls == 2


def test_an_answered_call_resets_the_streak() -> None:
    chat = ProbeChat()
    judge = FailureJudge(chat, concurrency=1, stage="report")
    judge.answered()
    for _ in range(5):
        asyncio.run(judge.judge(TIMEOUT))
        asyncio.run(judge.judge(TIMEOUT))
        judge.answered()
    assert chat.calls == 0


def test_a_failed_probe_stops_the_stage_with_the_servers_error() -> None:
    down = ModelError("cannot connect to http://x: refused", transient=True)
    judge = FailureJudge(ProbeChat(down), concurrency=8, stage="extraction")
    with pytest.raises(StageStoppedError):
        asyncio.run(judge.judge(down))
    with pytest.raises(ModelError, match=r"cannot connect.*known-good request failed too"):
        judge.raise_if_stopped()
    with pytest.raises(StageStoppedError):
        judge.check()


@pytest.mark.parametrize(
    ("error", "probes"),
    [(ModelError("authentication failed", status_code=401), 0),
     (StoreError("disk full"), 0),
     (ModelError("model 'x' not found", status_code=404), 1)],
)
def test_errors_that_are_not_an_items_stop_the_stage(error: Exception, probes: int) -> None:
    chat = ProbeChat(error if probes else None)
    judge = FailureJudge(chat, concurrency=1, stage="summary")
    with pytest.raises(StageStoppedError):
        asyncio.run(judge.judge(error))
    assert chat.calls == probes and judge.stop is not None


def test_a_rejected_request_is_the_items_own_once_the_server_answered() -> None:
    chat = ProbeChat()
    judge = FailureJudge(chat, concurrency=1, stage="extraction")
    judge.answered()
    reason = asyncio.run(judge.judge(ModelError("context length exceeded", status_code=400)))
    assert reason == "context length exceeded" and chat.calls == 0


def test_an_unexpected_exception_fails_its_item_only() -> None:
    judge = FailureJudge(ProbeChat(), concurrency=1, stage="report")
    reason = asyncio.run(judge.judge(ValueError("bad value")))
    assert reason == "ValueError: bad value" and judge.stop is None


def test_read_reply_turns_a_parser_crash_into_an_output_error() -> None:
    def parse(text: str) -> int:
        raise RecursionError("maximum recursion depth exceeded")

    with pytest.raises(ModelOutputError, match="report reply could not be read"):
        read_reply(parse, "[[[[", "report")


def test_an_old_truncated_record_is_not_complete() -> None:
    old = ExtractionRecord.model_validate_json('{"fingerprint": "k", "truncated": true}')
    assert not old.complete
    assert ExtractionRecord.model_validate_json('{"fingerprint": "k"}').complete
    cut = ExtractionRecord(fingerprint="k", finish_reason="content_filter")
    assert not cut.complete
    unclosed = ExtractionRecord(fingerprint="k", truncated=True, finish_reason="stop")
    assert unclosed.complete  # the model stopped on its own: asking again gets the same


@pytest.mark.parametrize(
    ("error", "own"),
    [(ValueError("x"), True),
     (ModelError("input too long", status_code=400), True),
     (ModelError("busy", transient=True), False),
     (ModelError("bad key", status_code=401), False),
     (LeaseLostError("lost"), False),
     (EmbeddingMismatchError("other model"), False)],
)
def test_is_document_error(error: Exception, own: bool) -> None:
    assert is_document_error(error) is own


def test_write_isolating_records_each_culprit_with_its_own_error() -> None:
    written: list[str] = []
    failed: list[tuple[str, str]] = []

    async def write(items: Sequence[str]) -> None:
        bad = [i for i in items if i.startswith("bad")]
        if bad:
            raise ValueError(f"cannot write {bad[0]}")
        written.extend(items)

    async def fail(item: str, error: BaseException) -> None:
        failed.append((item, str(error)))

    asyncio.run(write_isolating(["a", "bad1", "b", "c", "bad2", "d"], write, fail))
    assert sorted(written) == ["a", "b", "c", "d"]
    assert failed == [("bad1", "cannot write bad1"), ("bad2", "cannot write bad2")]
