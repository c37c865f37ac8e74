"""Edge cases of the chain found by a break-it run: filters on reports, memory keys, limits."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.stages.test_chain import run_fx, scripted
from tests.support.graph_fixture import GraphFixture
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.retrieval.chain import DECLINED, MAX_QUESTION_CHARS, RAGInput
from unified_kg_rag.retrieval.memory import conversation_key
from unified_kg_rag.util.errors import MethodologyNotIndexedError, ModelError, UsageError

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("strategy", ["global", "drift"])
def test_report_strategies_apply_filters(strategy: str, tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Any:
        return await fx.chain().retrieve(RAGInput(
            question="Where was Marie Curie born?", strategy=strategy,
            filters={"path": "bread.txt"}))

    out = run_fx(tmp_path, body)
    reports = [s for s in out.sources if s.kind == "report"]
    # only the bread community's report cites bread.txt
    assert [s.title for s in reports] == ["Sourdough baking"]
    assert all(s.path in (None, "bread.txt") for s in out.sources)


def test_conversation_keys_cannot_collide() -> None:
    assert conversation_key("alice", "x\x1fy") != conversation_key("alice\x1fx", "y")


def test_rewrite_never_runs_before_the_methodology_check(tmp_path: Path) -> None:
    model = scripted()

    async def body(fx: GraphFixture) -> None:
        await fx.chain(model).ainvoke(RAGInput(question="Where was Marie Curie born?",
                                               strategy="naive", conversation_id="k"))
        await fx.app.index().records.put(INDEX_NAMESPACE, METHODOLOGIES_KEY, "[]")
        calls = model.calls
        with pytest.raises(MethodologyNotIndexedError):
            await fx.chain(model).ainvoke(RAGInput(question="Where did she work?",
                                                   strategy="local", conversation_id="k"))
        assert model.calls == calls

    run_fx(tmp_path, body)


def test_fallback_rewrite_prefixes_only_the_last_question(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Any:
        chain = fx.chain()
        for q in ("Where was Marie Curie born?", "Who taught at the Sorbonne?"):
            await chain.ainvoke(RAGInput(question=q, strategy="naive", conversation_id="c"))
        return await chain.retrieve(RAGInput(question="How is sourdough bread leavened?",
                                             strategy="naive", conversation_id="c"))

    out = run_fx(tmp_path, body)
    assert out.standalone_question == (
        "Who taught at the Sorbonne? How is sourdough bread leavened?"
    )


def test_limits_and_refused_overrides(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> None:
        chain = fx.chain()
        with pytest.raises(UsageError, match="limit is"):
            await chain.retrieve("x" * (MAX_QUESTION_CHARS + 1))
        with pytest.raises(UsageError, match="rerank cannot change"):
            await chain.retrieve("Where?", rerank={"kind": "none"})
        # call keywords win over the request's own strategy
        out = await chain.retrieve(RAGInput(question="Where was Marie Curie born?",
                                            strategy="naive"), strategy="simple")
        assert out.strategy == "simple"

    run_fx(tmp_path, body)


def test_graph_sections_are_labelled_by_name(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Any:
        return await fx.chain().retrieve("Where was Marie Curie born?", strategy="local")

    out = run_fx(tmp_path, body)
    first = {kind: next(s.title for s in out.sources if s.kind == kind)
             for kind in ("entity", "relationship")}
    assert first == {"entity": "Marie Curie (PERSON)",
                     "relationship": "Marie Curie BORN_IN Warsaw"}


def test_empty_stream_and_bare_marker(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Any:
        with pytest.raises(ModelError, match="empty answer"):
            async for _ in fx.chain(scripted(default="")).stream(
                    "Where was Marie Curie born?", strategy="naive"):
                pass
        return await fx.chain(scripted(default="[NO_ANSWER]"),
                              abstention={"mode": "mark"}).ainvoke(
            "When did she die?", strategy="naive")

    out = run_fx(tmp_path, body)
    assert out.answer == DECLINED and out.metadata["abstained"] is True


def test_parse_json_object_is_linear_and_lenient() -> None:
    started = time.perf_counter()
    assert parse_json_object('{"entities": ["' + "x}" * 40000) is None
    assert time.perf_counter() - started < 1.0
    assert parse_json_object('Sure:\n```json\n{"a": [1, {"b": 2}]}\n```') == {"a": [1, {"b": 2}]}
    assert parse_json_object('x {bad} {"ok": 1}') == {"ok": 1}
    assert parse_json_object("[1, 2]") is None


def test_nan_scores_count_as_zero() -> None:
    from unified_kg_rag.retrieval.strategies.drift import _parse

    answer = _parse('{"answer": "a", "score": "NaN", "follow_up_queries": ["q"]}', "q0",
                    "action")
    assert answer.score == 0.0
