"""`RAGChain` over the graph fixture: memory, sources = prompt, streaming, abstention, errors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.graph_fixture import GraphFixture, run_graph, unit
from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel
from unified_kg_rag.config.models import ScriptedLLMConfig, ScriptedReply
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.domain.models import Collection, RAGOutput
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.answer import answer_messages
from unified_kg_rag.retrieval.chain import PriorTurn, RAGInput
from unified_kg_rag.retrieval.memory import CONVERSATIONS_NAMESPACE, conversation_key
from unified_kg_rag.util.errors import (
    MethodologyNotIndexedError,
    StoreConnectionError,
    UsageError,
)

pytestmark = pytest.mark.integration


def scripted(*rules: tuple[str, str], default: str = "Warsaw [1].") -> ScriptedChatModel:
    return ScriptedChatModel(ScriptedLLMConfig(
        replies=[ScriptedReply(match=m, reply=r) for m, r in rules], default_reply=default))


def run_fx(tmp_path: Path, body: Any) -> Any:
    return run_graph(tmp_path / "p", body)


def test_sources_are_exactly_what_the_answer_prompt_contained(tmp_path: Path) -> None:
    model = scripted()

    async def body(fx: GraphFixture) -> RAGOutput:
        return await fx.chain(model).ainvoke("Where was Marie Curie born?", strategy="naive",
                                             top_k=3)

    out = run_fx(tmp_path, body)
    assert out.answer == "Warsaw [1]." and out.cited == (1,)
    assert out.sources[0].id == unit("marie") and len(out.sources) == 3
    expected = answer_messages(out.question, out.sources)
    assert model.prompts[-1] == expected[-1].content
    assert model.calls == 1
    for key in ("retrieve", "fuse", "pack", "answer", "total"):
        assert out.timings_ms[key] >= 0
    assert out.metadata["context_tokens"] > 0 and out.metadata["answer_style"] == "concise"


def test_conversation_memory_without_llm_carries_the_previous_question(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[Any, ...]:
        chain = fx.chain()
        first = await chain.ainvoke(RAGInput(question="Where was Marie Curie born?",
                                             conversation_id="c1", user_id="ann"))
        follow = await chain.retrieve(RAGInput(question="Who did she work with?",
                                               conversation_id="c1", user_id="ann"))
        other_user = await chain.retrieve(RAGInput(question="Who did she work with?",
                                                   conversation_id="c1", user_id="bob"))
        stored = await fx.app.index().records.get(CONVERSATIONS_NAMESPACE,
                                                  conversation_key("ann", "c1"))
        return first, follow, other_user, stored

    first, follow, other_user, stored = run_fx(tmp_path, body)
    assert first.metadata["rewrite"] == "none"
    assert follow.standalone_question == "Where was Marie Curie born? Who did she work with?"
    assert follow.metadata["rewrite"] == "fallback"
    assert other_user.standalone_question == "Who did she work with?"
    assert stored is not None and "Where was Marie Curie born?" in stored


def test_conversation_memory_with_llm_rewrites_the_follow_up(tmp_path: Path) -> None:
    model = scripted(("Rewrite the user's last question", "Who did Marie Curie work with?"))

    async def body(fx: GraphFixture) -> Any:
        chain = fx.chain(model)
        await chain.ainvoke(RAGInput(question="Where was Marie Curie born?", strategy="naive",
                                     conversation_id="c2"))
        return await chain.ainvoke(RAGInput(question="Who did she work with?",
                                            strategy="naive", conversation_id="c2"))

    out = run_fx(tmp_path, body)
    assert out.metadata["rewrite"] == "llm"
    rewrite_prompt = model.prompts[1]  # first answer, rewrite, second answer
    assert "User: Where was Marie Curie born?" in rewrite_prompt
    assert "Assistant: Warsaw [1]." in rewrite_prompt
    # the answer step is asked the standalone question
    assert model.prompts[-1].rstrip().endswith("Question: Who did Marie Curie work with?")


def test_turns_the_caller_keeps_are_rewritten_from_and_not_stored(tmp_path: Path) -> None:
    model = scripted(("Rewrite the user's last question", "Who did Marie Curie work with?"))
    turns = [PriorTurn(question="Where was Marie Curie born?", answer="Warsaw [1].")]

    async def body(fx: GraphFixture) -> tuple[Any, ...]:
        chain = fx.chain(model)
        out = await chain.ainvoke(RAGInput(question="Who did she work with?", strategy="naive",
                                           history=turns, user_id="ann"))
        plain = await fx.chain().retrieve(RAGInput(question="Who did she work with?",
                                                   history=turns))
        stored = await fx.app.index().records.count(CONVERSATIONS_NAMESPACE)
        with pytest.raises(UsageError, match="not both"):
            await chain.retrieve(RAGInput(question="x", history=turns, conversation_id="c"))
        return out, plain, stored

    out, plain, stored = run_fx(tmp_path, body)
    assert out.metadata["rewrite"] == "llm"
    assert "User: Where was Marie Curie born?\nAssistant: Warsaw [1]." in model.prompts[0]
    assert model.prompts[-1].rstrip().endswith("Question: Who did Marie Curie work with?")
    assert plain.standalone_question == "Where was Marie Curie born? Who did she work with?"
    assert stored == 0


def test_stream_yields_the_answer_then_the_output(tmp_path: Path) -> None:
    model = scripted(default="Marie Curie was born in Warsaw [1].")

    async def body(fx: GraphFixture) -> list[Any]:
        return [p async for p in fx.chain(model).stream("Where was Marie Curie born?",
                                                        strategy="naive")]

    pieces = run_fx(tmp_path, body)
    final = pieces[-1]
    assert isinstance(final, RAGOutput)
    text = "".join(p for p in pieces[:-1] if isinstance(p, str))
    assert len(pieces) > 2 and text.strip() == final.answer
    assert final.answer == "Marie Curie was born in Warsaw [1]."


def test_stream_holds_back_and_strips_the_decline_marker(tmp_path: Path) -> None:
    model = scripted(default="[NO_ANSWER] The sources do not say when she died.")

    async def body(fx: GraphFixture) -> list[Any]:
        chain = fx.chain(model, abstention={"mode": "mark"})
        return [p async for p in chain.stream("When did Marie Curie die?", strategy="naive")]

    pieces = run_fx(tmp_path, body)
    text = "".join(p for p in pieces[:-1] if isinstance(p, str))
    assert "NO_ANSWER" not in text
    assert pieces[-1].metadata["abstained"] is True
    assert pieces[-1].answer == "The sources do not say when she died."


def test_abstention_mark_mode(tmp_path: Path) -> None:
    model = scripted(default="[NO_ANSWER] Nothing about her death.")

    async def body(fx: GraphFixture) -> tuple[RAGOutput, RAGOutput]:
        marked = await fx.chain(model, abstention={"mode": "mark"}).ainvoke(
            "When did Marie Curie die?", strategy="naive")
        off = await fx.chain(model).ainvoke("When did Marie Curie die?", strategy="naive")
        return marked, off

    marked, off = run_fx(tmp_path, body)
    assert marked.metadata["abstained"] is True
    assert marked.metadata["abstention_reason"] == "marker"
    assert marked.answer == "Nothing about her death."
    assert marked.sources  # an abstained answer keeps the sources the model saw
    assert "abstained" not in off.metadata and off.answer.startswith("[NO_ANSWER]")


def test_missing_methodology_fails_before_any_model_call(tmp_path: Path) -> None:
    model = scripted()

    async def body(fx: GraphFixture) -> Exception:
        await fx.app.index().records.put(INDEX_NAMESPACE, METHODOLOGIES_KEY, "[]")
        with pytest.raises(MethodologyNotIndexedError) as info:
            await fx.chain(model).ainvoke("Where was Marie Curie born?", strategy="local")
        return info.value

    err = run_fx(tmp_path, body)
    assert "'graphrag'" in str(err) and "text units only" in str(err)
    assert model.calls == 0


class BrokenSearch:
    """A search index whose text-unit searches fail as an unreachable store would."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def search(self, collection: Collection, **kw: Any) -> Any:
        raise StoreConnectionError("database is locked")


def test_store_failure_fails_the_query_not_empty_results(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> None:
        stores = fx.app.index()
        broken = IndexStores(name=stores.name, search=BrokenSearch(stores.search),  # type: ignore[arg-type]
                             graph=stores.graph, registry=stores.registry,
                             records=stores.records)
        chain = fx.chain()
        chain._stores = broken  # the chain reads its stores only through this attribute
        with pytest.raises(StoreConnectionError):
            await chain.ainvoke("Where was Marie Curie born?", strategy="naive")

    run_fx(tmp_path, body)


def test_invoke_is_synchronous_outside_an_event_loop(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Any:
        chain = fx.chain()
        with pytest.raises(UsageError, match="event loop"):
            chain.invoke("Where was Marie Curie born?")
        return chain

    chain = run_fx(tmp_path, body)
    assert chain is not None


def test_search_returns_ranked_results_per_type(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Any:
        return await fx.chain().search("Where was Marie Curie born?", strategy="naive",
                                       top_k=4)

    out = run_fx(tmp_path, body)
    assert list(out.results) == ["text_unit"]
    ranked = out.results["text_unit"]
    assert [s.n for s in ranked] == [1, 2, 3, 4] and ranked[0].id == unit("marie")
    assert out.metadata["buckets"] == {"naive": 4}


def test_filters_reach_the_strategy(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Sequence[Any]:
        out = await fx.chain().retrieve(RAGInput(question="Where was Marie Curie born?",
                                                 strategy="naive",
                                                 filters={"path": ["warsaw.txt", "pierre.txt"]}))
        return out.sources

    sources = run_fx(tmp_path, body)
    assert sorted(s.path for s in sources) == ["pierre.txt", "warsaw.txt"]


@pytest.mark.parametrize(
    "strategy", ["naive", "simple", "local", "global", "drift", "hybrid", "mix"]
)
def test_every_strategy_answers_from_exactly_its_sources(strategy: str, tmp_path: Path) -> None:
    """The answer prompt holds exactly the sources returned, in order, for every strategy."""
    model = scripted(default="Marie Curie was born in Warsaw [1].")

    async def body(fx: GraphFixture) -> RAGOutput:
        return await fx.chain(model).ainvoke("Where was Marie Curie born?", strategy=strategy)

    out = run_fx(tmp_path, body)
    assert out.strategy == strategy and out.sources
    style = out.metadata["answer_style"]
    assert style == ("comprehensive" if strategy == "global" else "concise")
    expected = answer_messages(out.question, out.sources, style=style)
    assert model.prompts[-1] == expected[-1].content
    assert [s.n for s in out.sources] == list(range(1, len(out.sources) + 1))
    if strategy == "global":  # reports only: the unreadable map reply let them pass through
        assert {s.kind for s in out.sources} == {"report"}
        assert out.metadata["degraded"]["global_map"]
        return
    # the Marie Curie passage leads the passages of every other strategy
    passages = [s.id for s in out.sources if s.kind == "text_unit"]
    assert passages and passages[0] == unit("marie")
