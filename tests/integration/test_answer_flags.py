"""Answers flagged for what the user must know: cut replies (`answer_complete`,
`finish_reason`) and citation labels that name no source (`invalid_citations`), through the
library API with a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.support.answer_chain import lazy_chain, llm
from tests.support.graph_fixture import graph_app
from tests.support.openai_server import FakeOpenAIServer, Scripted

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import RAGOutput

pytestmark = pytest.mark.integration

LAZY_MAP = "List the facts in the numbered sources below"


def ask(project: Path, server: FakeOpenAIServer, question: str, *, stream: bool = False,
        **overrides: Any) -> tuple[RAGOutput, list[str]]:  # fmt: skip
    """Answer through `ainvoke` (or `stream`); return the output and the streamed pieces."""

    async def main() -> tuple[RAGOutput, list[str]]:
        app, chain = await lazy_chain(project, server)
        async with app:
            if not stream:
                return await chain.ainvoke(question, **overrides), []
            pieces: list[str] = []
            final: RAGOutput | None = None
            async for piece in chain.stream(question, **overrides):
                if isinstance(piece, RAGOutput):
                    final = piece
                else:
                    pieces.append(piece)
            assert final is not None
            return final, pieces

    return asyncio.run(main())


# ----------------------------------------------------------------------- item 2: cut answers


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_a_cut_answer_is_flagged_incomplete(
    tmp_path: Path, openai_server: FakeOpenAIServer, reason: str, stream: bool
) -> None:
    openai_server.script(Scripted(reply="Barn owls hunt voles [1] and", finish_reason=reason))
    out, pieces = ask(tmp_path, openai_server, "What do barn owls hunt?", stream=stream,
                      strategy="naive")  # fmt: skip
    assert out.answer == "Barn owls hunt voles [1] and"  # delivered as the model wrote it
    if stream:
        assert "".join(pieces) == out.answer
    assert out.answer_kind == "generative"
    assert out.metadata["answer_complete"] is False
    assert out.metadata["finish_reason"] == reason
    assert '"answer_complete":false' in out.model_dump_json()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_answer_without_a_finish_reason_is_delivered(
    tmp_path: Path, openai_server: FakeOpenAIServer, stream: bool
) -> None:
    # a whole reply arrived whole (its JSON parsed): finished; a stream's end is known only
    # from its finish reason (a cut connection ends it as cleanly): delivered, flagged
    openai_server.script(Scripted(reply="Barn owls hunt voles [1].", finish_reason=None))  # type: ignore[arg-type]
    out, pieces = ask(tmp_path, openai_server, "What do barn owls hunt?", stream=stream,
                      strategy="naive")  # fmt: skip
    assert out.answer == "Barn owls hunt voles [1]." and out.answer_kind == "generative"
    if stream:
        assert "".join(pieces) == out.answer
        assert out.metadata["answer_complete"] is False
        assert out.metadata["finish_reason"] == "unfinished_stream"
    else:
        assert (out.metadata["answer_complete"], out.metadata["finish_reason"]) == (True, "stop")
    assert len(openai_server.requests_to("/chat/completions")) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_complete_answer_is_flagged_complete(
    tmp_path: Path, openai_server: FakeOpenAIServer, stream: bool
) -> None:
    openai_server.script(Scripted(reply="Barn owls hunt voles [1]."))
    out, _ = ask(tmp_path, openai_server, "What do barn owls hunt?", stream=stream,
                 strategy="naive")  # fmt: skip
    assert (out.metadata["answer_complete"], out.metadata["finish_reason"]) == (True, "stop")


def test_an_extractive_or_cannot_answer_is_complete_without_a_finish_reason(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    out, _ = ask(tmp_path, openai_server, "zyzzyva quux", strategy="naive",
                 search_mode="lexical")  # fmt: skip
    assert out.answer_kind == "cannot_answer"
    assert (out.metadata["answer_complete"], out.metadata["finish_reason"]) == (True, None)


def test_lazy_map_reduce_reports_a_cut_map_reply(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(
        Scripted(match=LAZY_MAP, reply="- Barn owls hunt voles [1]", finish_reason="length"),
        Scripted(match="Answer the question from these notes only",
                 reply="Owls hunt voles [1]", finish_reason="length"),
    )  # fmt: skip
    out, _ = ask(tmp_path, openai_server, "What hunts voles?", strategy="lazy")
    assert len(out.sources) > 4  # more than one map batch: the map-reduce answer ran
    assert out.answer == "Owls hunt voles [1]"
    assert (out.metadata["answer_complete"], out.metadata["finish_reason"]) == (False, "length")
    assert out.metadata["incomplete_replies"] == {"lazy_map.1": "length"}


def test_global_and_drift_report_cut_intermediate_replies(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    points = '{"points": [{"description": "Marie Curie was born in Warsaw", "score": 90, "reports": [1]}]}'
    drift = '{"answer": "Warsaw", "score": 80, "follow_up_queries": []}'
    openai_server.script(
        Scripted(match="list the key points", reply=points, finish_reason="length"),
    )

    async def main() -> tuple[RAGOutput, RAGOutput]:
        async with graph_app(tmp_path, UkrConfig(llm=llm(openai_server))) as fx:  # type: ignore[arg-type]
            chain = fx.chain(fx.app.chat_model, llm_router=False)
            out_global = await chain.ainvoke("Where was Marie Curie born?", strategy="global")
            openai_server.script(
                Scripted(match="DRIFT search, step 2", reply=drift, finish_reason="content_filter"),
            )
            out_drift = await chain.ainvoke("Where was Marie Curie born?", strategy="drift")
            return out_global, out_drift

    out_global, out_drift = asyncio.run(main())
    assert out_global.metadata["incomplete_replies"] == {"global_map.1": "length"}
    cut = out_drift.metadata["incomplete_replies"]
    assert set(cut.values()) == {"content_filter"}
    assert all(step.startswith("drift.") for step in cut)


# ------------------------------------------------------------ item 7: bogus citation labels


def test_labels_naming_no_source_are_reported_and_never_cited(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    answer = "Barn owls hunt voles [1][42]. Bees [0] lay eggs [3.7], see [2-9]."
    openai_server.script(Scripted(reply=answer))
    out, _ = ask(tmp_path, openai_server, "What do barn owls hunt?", strategy="naive", top_k=3)
    assert len(out.sources) == 3
    assert out.answer == answer  # the model's text is kept
    assert out.cited == (1, 2, 3)  # [2-9] covers 2 and 3; [3.7] cites nothing
    assert out.metadata["invalid_citations"] == ["[42]", "[0]", "[3.7]", "[2-9]"]


def test_an_answer_citing_only_real_sources_reports_no_invalid_label(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(Scripted(reply="Barn owls hunt voles [1, 2]."))
    out, _ = ask(tmp_path, openai_server, "What do barn owls hunt?", strategy="naive", top_k=3)
    assert out.metadata["invalid_citations"] == []
    assert out.cited == (1, 2)


# ------------------------------------------- item 6: a query-time JSON reply with a lone escape


def test_a_lone_surrogate_escape_in_a_global_map_reply_reads_as_u_fffd(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    # the reply's text is valid (ASCII), but its JSON string escapes U+D800 alone: decoded,
    # the key point would be a string that no UTF-8 writer (--json, a terminal) accepts
    points = ('{"points": [{"description": "Marie Curie was born in Warsaw \\ud800", '
              '"score": 90, "reports": [1]}]}')
    openai_server.script(Scripted(match="list the key points", reply=points))

    async def main() -> RAGOutput:
        async with graph_app(tmp_path, UkrConfig(llm=llm(openai_server))) as fx:  # type: ignore[arg-type]
            chain = fx.chain(fx.app.chat_model, llm_router=False)
            return await chain.ainvoke("Where was Marie Curie born?", strategy="global")

    out = asyncio.run(main())
    dumped = out.model_dump_json()  # raised PydanticSerializationError on a lone surrogate
    assert "\\ud800" not in dumped
    reduce_prompts = [r.body["messages"][-1]["content"] for r in openai_server.requests_to(
        "/chat/completions") if "Warsaw" in r.body["messages"][-1]["content"]
        and "list the key points" not in r.body["messages"][-1]["content"]]
    assert reduce_prompts and all("\ufffd" in p for p in reduce_prompts)
