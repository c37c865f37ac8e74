"""The whole-query deadline (`query.deadline_s`): with a real OpenAI-compatible server on
127.0.0.1 answering slowly, a query returns within its deadline plus a small margin, with
`metadata.deadline_hit`, and its result is still a valid answer with sources.

Slow calls sleep 30 s on the server; the deadlines are 2-3 s. The margin (8 s) covers the
extractive answer (the real embedding model) on a loaded machine; it proves the query did
not wait for the model, it is not a speed assertion.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.answer_chain import lazy_chain, llm
from tests.support.graph_fixture import REPORT_TEXT, graph_app
from tests.support.openai_server import FakeOpenAIServer, Scripted
from typer.testing import CliRunner

from unified_kg_rag.cli.app import app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import RAGOutput

pytestmark = pytest.mark.integration

SLOW_S = 30.0
MARGIN_S = 8.0
QUESTION = "Where was Marie Curie born?"


def slow(n: int = 40, **fields: Any) -> list[Scripted]:
    return [Scripted(delay_s=SLOW_S, **fields) for _ in range(n)]


def timed_graph_query(
    tmp_path: Path, server: FakeOpenAIServer, *, stream: bool = False, query: dict[str, Any],
    **overrides: Any,
) -> tuple[RAGOutput, float, list[str]]:  # fmt: skip
    """Answer `QUESTION` on the graph fixture with the server's model; time the query alone."""

    async def main() -> tuple[RAGOutput, float, list[str]]:
        config = UkrConfig(llm=llm(server, max_concurrency=8), query=query)  # type: ignore[arg-type]
        async with graph_app(tmp_path, config) as fx:
            chain = fx.chain(fx.app.chat_model, **query)
            started = time.perf_counter()
            pieces: list[str] = []
            if stream:
                async for piece in chain.stream(QUESTION, **overrides):
                    if isinstance(piece, RAGOutput):
                        return piece, time.perf_counter() - started, pieces
                    pieces.append(piece)
                raise AssertionError("the stream gave no RAGOutput")
            out = await chain.ainvoke(QUESTION, **overrides)
            return out, time.perf_counter() - started, pieces

    return asyncio.run(main())


def assert_valid_answer(out: RAGOutput) -> None:
    assert out.sources and out.answer.strip()
    assert out.metadata["deadline_hit"] is True


def test_a_slow_answer_falls_back_to_the_extractive_answer(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(*slow())
    out, elapsed, _ = timed_graph_query(
        tmp_path, openai_server, query={"llm_router": False}, strategy="naive", deadline_s=2.0
    )
    assert elapsed < 2.0 + MARGIN_S
    assert_valid_answer(out)
    assert out.answer_kind == "extractive" and "[1]" in out.answer
    assert "extractive" in out.metadata["answer_fallback"]
    assert (out.metadata["answer_complete"], out.metadata["deadline_s"]) == (True, 2.0)


def test_every_step_falls_back_when_every_call_is_slow(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    # router, query processing (keywords) and the answer: the deadline set in the config
    openai_server.script(*slow())
    out, elapsed, _ = timed_graph_query(
        tmp_path, openai_server, query={"deadline_s": 2.0, "strategy": "auto"}
    )
    assert elapsed < 2.0 + MARGIN_S
    assert_valid_answer(out)
    assert out.metadata["route"]["by"] == "rule"
    assert out.metadata["route"]["reason"].startswith("the router call failed")
    assert out.metadata["deadline_cut_calls"] >= 2


def test_global_answers_from_the_map_replies_that_arrived(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    # one report per map batch; the batch holding the Curies' report answers at once
    curies = REPORT_TEXT["curies"][0]
    points = json.dumps({"points": [
        {"description": "Marie Curie was born in Warsaw", "score": 90, "reports": [1]}]})
    openai_server.script(Scripted(match=f"# {curies}\n", reply=points),
                         *slow(match="list the key points"), *slow())  # fmt: skip
    query = {"llm_router": False, "global_search": {"map_context_tokens": 60, "level": 1}}
    out, elapsed, _ = timed_graph_query(tmp_path, openai_server, query=query,
                                        strategy="global", deadline_s=3.0)  # fmt: skip
    assert elapsed < 3.0 + MARGIN_S
    assert_valid_answer(out)
    assert out.metadata["global_batches"] >= 3
    key_points = [s for s in out.sources if s.kind == "key_points"]
    assert key_points and "Marie Curie was born in Warsaw" in key_points[0].text
    assert "global_map" in out.metadata["degraded"]


def test_drift_stops_its_rounds_and_answers_from_the_primer(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(*slow())
    out, elapsed, _ = timed_graph_query(tmp_path, openai_server, query={"llm_router": False},
                                        strategy="drift", deadline_s=2.0)  # fmt: skip
    assert elapsed < 2.0 + MARGIN_S
    assert_valid_answer(out)
    assert "deadline" in out.metadata["drift_stopped"]
    assert {s.kind for s in out.sources} & {"report", "text_unit"}


def test_a_stream_cut_by_the_deadline_ends_flagged_incomplete(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    # the first deltas at once, then one byte every 0.5 s
    reply = "Marie Curie was born in Warsaw [1], the capital of Poland. " * 4
    openai_server.script(Scripted(reply=reply, trickle_s=0.5, trickle_after_bytes=1200))
    out, elapsed, pieces = timed_graph_query(
        tmp_path, openai_server, stream=True, query={"llm_router": False}, strategy="naive",
        deadline_s=3.0,
    )  # fmt: skip
    assert elapsed < 3.0 + MARGIN_S
    assert_valid_answer(out)
    assert out.answer_kind == "generative" and "".join(pieces).strip() == out.answer
    assert reply.startswith(out.answer) and len(out.answer) < len(reply.strip())
    assert (out.metadata["answer_complete"], out.metadata["finish_reason"]) == (False, "deadline")


def test_a_stream_with_no_text_by_the_deadline_is_answered_extractively(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(*slow())
    out, elapsed, pieces = timed_graph_query(
        tmp_path, openai_server, stream=True, query={"llm_router": False}, strategy="naive",
        deadline_s=2.0,
    )  # fmt: skip
    assert elapsed < 2.0 + MARGIN_S
    assert_valid_answer(out)
    assert out.answer_kind == "extractive" and pieces == [out.answer]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_deadline_fallback_says_the_model_did_not_answer_in_time(
    tmp_path: Path, openai_server: FakeOpenAIServer, stream: bool
) -> None:
    # a model is configured: the extractive answer's header must not say there is none
    openai_server.script(*slow())
    out, _, _ = timed_graph_query(
        tmp_path, openai_server, stream=stream, query={"llm_router": False}, strategy="naive",
        deadline_s=2.0,
    )  # fmt: skip
    assert out.answer_kind == "extractive"
    header = out.answer.splitlines()[0]
    assert "no language model is configured" not in header
    assert header.startswith("Extractive answer (the language model did not answer before the "
                             "query's deadline of 2 s)")  # fmt: skip


def test_lazy_tests_relevance_by_similarity_once_the_deadline_passed(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(*slow())

    async def main() -> tuple[RAGOutput, float]:
        application, chain = await lazy_chain(tmp_path, openai_server)
        async with application:
            started = time.perf_counter()
            out = await chain.ainvoke("What hunts voles?", strategy="lazy", deadline_s=2.0)
            return out, time.perf_counter() - started

    out, elapsed = asyncio.run(main())
    assert elapsed < 2.0 + MARGIN_S
    assert_valid_answer(out)
    assert "deadline" in out.metadata["lazy_fallback"]
    assert out.answer_kind == "extractive"


def test_no_deadline_no_flag(tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Scripted(reply="Warsaw [1]."))
    out, _, _ = timed_graph_query(tmp_path, openai_server, query={"llm_router": False},
                                  strategy="naive")  # fmt: skip
    assert out.metadata["deadline_hit"] is False and "deadline_s" not in out.metadata
    assert out.answer == "Warsaw [1]."


def test_ukr_query_deadline_option(tmp_path: Path, openai_server: FakeOpenAIServer,
                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    async def build() -> None:
        async with graph_app(tmp_path):
            pass

    asyncio.run(build())
    for key, value in {
        "UKR_LLM__KIND": "openai", "UKR_LLM__OPENAI__BASE_URL": openai_server.base_url,
        "UKR_LLM__OPENAI__API_KEY": "k", "UKR_LLM__MAX_RETRIES": "0",
        "UKR_QUERY__LLM_ROUTER": "false",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    openai_server.script(*slow(4))
    result = CliRunner().invoke(app, ["query", QUESTION, "-C", str(tmp_path), "-s", "naive",
                                      "--deadline", "2"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning: the query's deadline passed (query.deadline_s = 2 s)" in result.output
    assert "Extractive answer" in result.output
