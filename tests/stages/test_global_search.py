"""Strategy `global` (GraphRAG global search) on the graph fixture (real SQLite, real embedder).

The fixture's hierarchy: three top communities (``science``, ``poland``, ``bread``), the first
split into ``curies`` and ``sorbonne``; so the cut at level 0 holds 3 reports and the cut at
level 1 holds 4 (``curies``, ``sorbonne`` and the leaves ``poland``, ``bread``). Model replies
are scripted by the report titles each prompt holds, so each test knows which batch or report
a reply answers.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.graph_fixture import REPORT_TEXT, GraphFixture, graph_app
from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel
from unified_kg_rag.config.models import ScriptedLLMConfig, ScriptedReply
from unified_kg_rag.config.search import GlobalSearchConfig
from unified_kg_rag.domain.models import Collection, Completion, Message
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.retrieval.strategies.base import QueryContext, StrategyResult
from unified_kg_rag.retrieval.strategies.global_search import (
    NO_LLM_FALLBACK,
    NO_RELEVANT_POINT,
    GlobalSearchStrategy,
)
from unified_kg_rag.util.errors import ModelError

pytestmark = pytest.mark.integration

QUESTION = "What are the main themes of the collection?"
MAP_HEADER = re.compile(r"^----- Report (\d+) -----$", re.M)


def title(name: str) -> str:
    return REPORT_TEXT[name][0]


def in_batch(name: str) -> str:
    """Text that only a map prompt holding report ``name`` contains (any ordinal)."""
    return f"-----\n# {title(name)}\n"


def in_rating(name: str) -> str:
    """Text that only the rating prompt of report ``name`` contains."""
    return f"Report:\n# {title(name)}\n"


def points(*items: tuple[str, float, Sequence[int]]) -> str:
    return json.dumps(
        {"points": [{"description": d, "score": s, "reports": list(r)} for d, s, r in items]}
    )


def scripted(rules: Mapping[str, str], default: str = '{"points": []}') -> ScriptedChatModel:
    replies = [ScriptedReply(match=m, reply=r) for m, r in rules.items()]
    return ScriptedChatModel(ScriptedLLMConfig(replies=replies, default_reply=default))


def context(
    fx: GraphFixture, model: ChatModel | None, question: str = QUESTION, **overrides: Any
) -> QueryContext:
    query = fx.app.config.query
    section = GlobalSearchConfig.model_validate({**query.global_search.model_dump(), **overrides})
    return QueryContext(
        question=question, stores=fx.app.index(), embedder=fx.app.embedder, chat_model=model,
        config=query.model_copy(update={"global_search": section}), held=("graphrag",),
    )  # fmt: skip


async def run(ctx: QueryContext) -> StrategyResult:
    return await GlobalSearchStrategy().retrieve(ctx)


def map_prompts(model: ScriptedChatModel) -> list[str]:
    return [p for p in model.prompts if "----- Report 1 -----" in p]


def batch_section(prompt: str) -> str:
    return prompt[prompt.index("----- Report 1 -----") :]


async def lineage(fx: GraphFixture, name: str) -> tuple[str, ...]:
    [report] = await fx.app.index().graph.get_reports([fx.community_ids[name]])
    return report.text_unit_ids



# --- the map step ---------------------------------------------------------------------------


def test_one_map_call_per_batch_and_cited_reports_in_point_order(tmp_path: Path) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            ids = fx.community_ids
            model = scripted({
                in_batch("science"): points(("Pierre Curie taught at the Sorbonne.", 60, [1])),
                in_batch("poland"): points(("Warsaw is the capital of Poland.", 90, [1]),
                                           ("Nothing useful.", 0, [1])),
            })  # fmt: skip
            ctx = context(fx, model, level=0, map_context_tokens=60)
            result = await run(ctx)

            # level 0: three reports of 41-51 tokens with their headers: one per 60-token batch
            prompts = map_prompts(model)
            assert model.calls == len(prompts) == ctx.metadata["llm_calls"] == 3
            assert ctx.metadata["global_batches"] == 3
            counter = EstimateTokenCounter()
            for prompt in prompts:
                assert len(MAP_HEADER.findall(prompt)) == 1
                assert QUESTION in prompt
                assert counter.count(batch_section(prompt)) <= 60
            assert ctx.metadata["global_selection"] == "fixed"
            assert ctx.metadata["global_level"] == 0
            # a fixed cut is mapped by rank: science 8, poland 6, bread 3
            assert ctx.metadata["global_reports"] == [ids["science"], ids["poland"], ids["bread"]]

            assert result.answer_style == "comprehensive" and result.cannot_answer is None
            [key_points] = result.synthesized
            assert key_points.kind == "key_points"
            lines = key_points.text.splitlines()[1:]
            assert len(lines) == 2  # the score-0 point is at the threshold: dropped
            assert lines[0].startswith("1. (importance 90) Warsaw is the capital of Poland.")
            assert lines[1].startswith("2. (importance 60) Pierre Curie taught")
            assert title("poland") in lines[0] and title("science") in lines[1]
            [bucket] = result.buckets
            assert [c.id for c in bucket.candidates] == [ids["poland"], ids["science"]]
            assert [c.kind for c in bucket.candidates] == ["report", "report"]
            assert [c.score for c in bucket.candidates] == [90.0, 60.0]
            poland, science = await lineage(fx, "poland"), await lineage(fx, "science")
            assert bucket.candidates[0].text_unit_ids == poland
            assert set(key_points.text_unit_ids) == set(poland) | set(science)
            assert set(key_points.document_ids) == set(poland) | set(science)  # unit = doc
            assert key_points.metadata["community_ids"] == f"{ids['poland']},{ids['science']}"
            assert ctx.metadata["global_points"] == 2
            assert "degraded" not in ctx.metadata

    asyncio.run(go())


def test_ordinals_map_back_to_their_batch_and_an_invalid_one_credits_the_batch(
    tmp_path: Path,
) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            ids = fx.community_ids
            model = scripted({
                in_batch("curies"): points(("Second report of the first batch.", 50, [2])),
                in_batch("sorbonne"): points(("Cites no report of its batch.", 70, [9])),
            })  # fmt: skip
            # level None: the deepest cut (level 1, 4 reports) fits the default cap
            ctx = context(fx, model, map_context_tokens=100)
            result = await run(ctx)
            assert ctx.metadata["global_level"] == 1
            prompts = map_prompts(model)
            assert model.calls == len(prompts) == 2
            first = next(p for p in prompts if in_batch("curies") in p)
            second = next(p for p in prompts if in_batch("sorbonne") in p)
            # batches follow rank order: curies 7, poland 6 | sorbonne 5, bread 3
            assert f"----- Report 2 -----\n# {title('poland')}" in first
            assert f"----- Report 2 -----\n# {title('bread')}" in second
            [bucket] = result.buckets
            assert [c.id for c in bucket.candidates] == [
                ids["sorbonne"], ids["bread"], ids["poland"]
            ]

    asyncio.run(go())


def test_every_point_rejected_means_cannot_answer(tmp_path: Path) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            model = scripted({}, default=points(("Barely related.", 50, [1])))
            ctx = context(fx, model, relevance_threshold=50)
            result = await run(ctx)
            assert result.cannot_answer == NO_RELEVANT_POINT
            assert result.buckets == [] and result.synthesized == []
            assert model.calls == ctx.metadata["llm_calls"] == 1
            assert ctx.metadata["global_points"] == 0

    asyncio.run(go())


def test_an_unreadable_batch_is_unrated_and_the_others_are_used(tmp_path: Path) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            ids = fx.community_ids
            rules = {
                in_batch("science"): points(("The Curies worked in Paris.", 40, [1])),
                in_batch("poland"): points(("Warsaw lies on the Vistula.", 80, [1])),
                in_batch("bread"): "Sorry, I would rather talk about bread.",
            }
            model = scripted(rules)
            ctx = context(fx, model, level=0, map_context_tokens=60)
            result = await run(ctx)
            assert model.calls == 3
            degraded = ctx.metadata["degraded"]
            assert isinstance(degraded, dict)
            assert degraded["global_map"].startswith("1 of 3 map batches unrated (1 reports)")
            assert ctx.metadata["global_unrated_reports"] == 1
            assert [c.id for c in result.buckets[0].candidates] == [ids["poland"], ids["science"]]

            # no point passes: the never-rated report passes through, no key points
            model = scripted({**rules, in_batch("science"): points(("Meh.", 0, [1])),
                              in_batch("poland"): '{"points": []}'})  # fmt: skip
            ctx = context(fx, model, level=0, map_context_tokens=60)
            result = await run(ctx)
            assert result.cannot_answer is None and result.synthesized == []
            assert [c.id for c in result.buckets[0].candidates] == [ids["bread"]]
            assert result.buckets[0].candidates[0].text_unit_ids == await lineage(fx, "bread")

    asyncio.run(go())


class FailingModel:
    """Fails the map calls whose prompt holds ``fail_on`` (all when None), else replies."""

    def __init__(self, error: ModelError, fail_on: str | None = None, reply: str = "") -> None:
        self.error, self.fail_on, self.reply, self.calls = error, fail_on, reply, 0

    @property
    def model_id(self) -> str:
        return "failing"

    async def complete(self, messages: Sequence[Message], **_: Any) -> Completion:
        self.calls += 1
        if self.fail_on is None or self.fail_on in messages[-1].content:
            raise self.error
        return Completion(text=self.reply, finish_reason="stop")

    def stream(self, messages: Sequence[Message], **_: Any) -> Any:
        raise NotImplementedError


def test_failed_calls_raise_when_all_fail_or_access_is_denied(tmp_path: Path) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            boom = ModelError("upstream exploded", transient=True, status_code=500)
            model = FailingModel(boom)
            ctx = context(fx, model, level=0, map_context_tokens=60)
            with pytest.raises(ModelError, match="upstream exploded"):
                await run(ctx)
            assert model.calls == ctx.metadata["llm_calls"] == 3

            # one failed call among rated batches: degraded only
            good = points(("Warsaw is the capital.", 70, [1]))
            model = FailingModel(boom, fail_on=in_batch("bread"), reply=good)
            ctx = context(fx, model, level=0, map_context_tokens=60)
            result = await run(ctx)
            assert result.synthesized and "ModelError: upstream exploded" in str(
                ctx.metadata["degraded"]
            )

            # access denied is fatal even when the other batches succeed
            denied = ModelError("invalid api key", status_code=401)
            model = FailingModel(denied, fail_on=in_batch("bread"), reply=good)
            with pytest.raises(ModelError, match="invalid api key"):
                await run(context(fx, model, level=0, map_context_tokens=60))

            # every reply unreadable (the calls worked): all reports pass through
            model = FailingModel(boom, fail_on="no prompt holds this", reply="no JSON here")
            ctx = context(fx, model, level=0, map_context_tokens=60)
            result = await run(ctx)
            assert len(result.buckets[0].candidates) == 3 and result.synthesized == []
            assert ctx.metadata["global_unrated_reports"] == 3

    asyncio.run(go())


# --- report selection -----------------------------------------------------------------------


def test_cut_selection_cap_and_similarity_fallback(tmp_path: Path) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            ids = fx.community_ids
            # a configured cut over the cap gives way to the shallower cut
            model = scripted({}, default=points(("x", 10, [1])))
            ctx = context(fx, model, level=1, max_reports=3)
            await run(ctx)
            assert ctx.metadata["global_level"] == 0
            assert ctx.metadata["global_selection"] == "fixed"
            assert len(ctx.metadata["global_reports"]) == 3  # type: ignore[arg-type]

            # not even the top cut fits: the most similar reports of it
            question = "How is sourdough bread leavened?"
            model = scripted({}, default=points(("x", 10, [1])))
            ctx = context(fx, model, question, max_reports=2)
            await run(ctx)
            assert ctx.metadata["global_selection"] == "capped_similarity"
            assert ctx.metadata["global_level"] == 0
            selected = ctx.metadata["global_reports"]
            assert isinstance(selected, list) and len(selected) == 2
            assert selected[0] == ids["bread"]
            assert set(selected) <= {ids["science"], ids["poland"], ids["bread"]}
            [prompt] = map_prompts(model)
            assert len(MAP_HEADER.findall(prompt)) == 2 and in_batch("bread") in prompt

    asyncio.run(go())


def test_dynamic_selection_rates_top_down(tmp_path: Path) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            ids = fx.community_ids
            ratings = {"science": "8", "poland": "Rating: 3", "bread": "2",
                       "curies": "9/10", "sorbonne": "4"}  # fmt: skip
            rules = {in_rating(n): r for n, r in ratings.items()}
            rules[in_batch("curies")] = points(("Marie and Pierre found polonium.", 75, [1]))
            model = scripted(rules)
            ctx = context(fx, model, dynamic_selection=True, dynamic_threshold=5)
            result = await run(ctx)
            # 3 top ratings + 2 children of science, then one map call for `curies`
            assert model.calls == ctx.metadata["llm_calls"] == 6
            assert len(map_prompts(model)) == 1
            assert ctx.metadata["global_selection"] == "dynamic"
            assert ctx.metadata["global_reports"] == [ids["curies"]]
            assert ctx.metadata["global_rated_reports"] == 5
            assert [c.id for c in result.buckets[0].candidates] == [ids["curies"]]

            # nothing relevant at the top: the whole next level is rated
            rules.update({in_rating("science"): "1", in_rating("curies"): "6"})
            model = scripted(rules)
            ctx = context(fx, model, dynamic_selection=True, dynamic_threshold=5)
            await run(ctx)
            assert model.calls == 3 + 2 + 1
            assert ctx.metadata["global_reports"] == [ids["curies"]]

            # an unreadable rating keeps its report, unrated, and is recorded
            rules.update({in_rating("science"): "8", in_rating("poland"): "no idea"})
            model = scripted(rules)
            ctx = context(fx, model, dynamic_selection=True, dynamic_threshold=5)
            await run(ctx)
            assert ctx.metadata["global_reports"] == [ids["curies"], ids["poland"]]
            assert "1 of 5 reports unrated" in str(ctx.metadata["degraded"])
            assert model.calls == 5 + 1  # both kept reports fit one map batch

            # nothing rated relevant anywhere: cannot answer, no map call
            model = scripted({}, default="1")
            ctx = context(fx, model, dynamic_selection=True)
            result = await run(ctx)
            assert result.cannot_answer is not None and model.calls == 5

    asyncio.run(go())


def test_without_llm_the_cut_is_ranked_by_similarity(tmp_path: Path) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            ids = fx.community_ids
            ctx = context(fx, None, "Where is the Sorbonne university?")
            result = await run(ctx)
            assert ctx.metadata["fallback"] == NO_LLM_FALLBACK
            assert "llm_calls" not in ctx.metadata
            assert result.answer_style == "comprehensive" and result.synthesized == []
            [bucket] = result.buckets
            cut = {ids["curies"], ids["sorbonne"], ids["poland"], ids["bread"]}
            assert {c.id for c in bucket.candidates} == cut
            assert bucket.candidates[0].id == ids["sorbonne"]
            assert all(c.kind == "report" for c in bucket.candidates)
            scores = [c.score for c in bucket.candidates]
            assert scores == sorted(scores, reverse=True)
            [record] = await fx.app.index().search.get(Collection.REPORTS, [ids["sorbonne"]])
            assert bucket.candidates[0].text == record.text
            assert bucket.candidates[0].text_unit_ids == await lineage(fx, "sorbonne")

    asyncio.run(go())


# --- through the RAG chain ------------------------------------------------------------------


def test_through_the_chain_the_answer_reads_the_points_then_the_cited_reports(
    tmp_path: Path,
) -> None:
    async def go() -> None:
        async with graph_app(tmp_path) as fx:
            rules = {
                in_batch("poland"): points(("Warsaw is the capital of Poland.", 90, [2])),
                "list the key points that help answer": '{"points": []}',
            }
            model = scripted(rules, default="The collection is about Warsaw [1].")
            out = await fx.chain(model).ainvoke(QUESTION, strategy="global")
            assert out.metadata["answer_style"] == "comprehensive"
            kinds = [s.kind for s in out.sources]
            assert kinds[0] == "key_points" and kinds.count("key_points") == 1
            reports = [s for s in out.sources if s.kind == "report"]
            assert reports and reports[0].id == fx.community_ids["poland"]
            assert model.calls == 2  # one map batch, one answer
            answer_prompt = model.prompts[-1]
            point = answer_prompt.index("Warsaw is the capital of Poland.")
            assert point < answer_prompt.index(REPORT_TEXT["poland"][1], point)

            # every point rejected: the chain says it cannot answer, without an answer call
            model = scripted({}, default='{"points": []}')
            out = await fx.chain(model).ainvoke(QUESTION, strategy="global")
            assert NO_RELEVANT_POINT in out.answer and model.calls == 1

    asyncio.run(go())
