"""Strategies `hybrid`, `mix`, `simple` and the `auto` LLM router on the fixture graph.

Real SQLite, the real bundled embedder; the LLM is the scripted one, whose call count is
asserted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.graph_fixture import GraphFixture, ent, rel_id, run_graph, unit
from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel
from unified_kg_rag.config.models import ScriptedLLMConfig, ScriptedReply
from unified_kg_rag.domain.models import Collection, Completion, Message, SearchHit
from unified_kg_rag.ports import ChatModel, IndexStores, SearchIndex
from unified_kg_rag.retrieval.strategies.auto import (
    AutoStrategy,
    Route,
    routable_candidates,
    route_with_llm,
)
from unified_kg_rag.retrieval.strategies.base import (
    Candidate,
    QueryContext,
    StrategyResult,
    StrategySpec,
)
from unified_kg_rag.retrieval.strategies.lightrag import (
    HybridStrategy,
    MixStrategy,
    round_robin,
    weighted_polling,
)
from unified_kg_rag.retrieval.strategies.naive import NaiveStrategy
from unified_kg_rag.retrieval.strategies.simple import SimpleStrategy
from unified_kg_rag.util.errors import ModelError, StoreError

pytestmark = pytest.mark.integration

T = TypeVar("T")
BREAD = {unit("bread"), unit("starter")}
LINKED = ("entity_chunks", "relation_chunks", "linked_similarity")
HELD = ("graphrag", "lightrag")


_run = run_graph


def _ctx(
    fx: GraphFixture,
    question: str,
    model: ChatModel | None = None,
    stores: IndexStores | None = None,
    filters: dict[str, Any] | None = None,
    **lightrag: Any,
) -> QueryContext:
    config = fx.app.config.query
    config = config.model_copy(update={"lightrag": config.lightrag.model_copy(update=lightrag)})
    return QueryContext(
        question=question, stores=stores or fx.app.index(), embedder=fx.app.embedder,
        chat_model=model, config=config, filters=filters or {}, held=HELD,
    )  # fmt: skip


def _bucket(result: StrategyResult, name: str) -> list[Candidate]:
    return next(b.candidates for b in result.buckets if b.name == name)


def _ids(cands: Sequence[Candidate]) -> list[str]:
    return [c.id for c in cands]


def _scripted(*rules: tuple[str, str], default: str = "") -> ScriptedChatModel:
    return ScriptedChatModel(ScriptedLLMConfig(
        replies=[ScriptedReply(match=m, reply=r) for m, r in rules], default_reply=default,
    ))  # fmt: skip


class _FailingEntities:
    """A search index whose entity searches raise ``error``; everything else is delegated."""

    def __init__(self, inner: SearchIndex, error: Exception) -> None:
        self._inner = inner
        self._error = error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def search(self, collection: Collection, **kwargs: Any) -> list[SearchHit]:
        if collection is Collection.ENTITIES:
            raise self._error
        return await self._inner.search(collection, **kwargs)


# ------------------------------------------------------------------- helpers


@pytest.mark.unit
def test_weighted_polling_sums_votes_within_quotas_then_appends_the_rest() -> None:
    # quotas 2, 2, 1 (linear from 2 to 1, half up); item 0 orders b (cited twice) first
    ranked = weighted_polling([["a", "b", "c"], ["b"], ["d"]], max_per_item=2, rrf_k=0)
    assert ranked == [("b", 1.5), ("a", 1.0), ("d", pytest.approx(1 / 3)), ("c", 0.0)]
    assert weighted_polling([], max_per_item=5, rrf_k=10) == []
    assert [u for u, _ in weighted_polling([["x", "y"]], max_per_item=1, rrf_k=10)] == ["x", "y"]


@pytest.mark.unit
def test_round_robin_interleaves_and_drops_repeats() -> None:
    @dataclasses.dataclass
    class Item:
        id: str

    merged = round_robin([Item("a"), Item("b"), Item("c")], [Item("b"), Item("d")])
    assert [i.id for i in merged] == ["a", "b", "d", "c"]  # a b | b(seen) d | c


# ------------------------------------------------------------------- hybrid / mix


def test_hybrid_without_llm_follows_the_graph_to_the_cited_units(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?")
        hybrid = await HybridStrategy().retrieve(ctx)
        mix = await MixStrategy().retrieve(_ctx(fx, "Where was Marie Curie born?"))
        return hybrid, mix, ctx

    hybrid, mix, ctx = _run(tmp_path, body)
    meta = ctx.metadata["lightrag"]
    assert isinstance(meta, dict)
    assert meta["keywords"] == {"high": ["Where was Marie Curie born?"],
                                "low": ["Where was Marie Curie born?"], "source": "fallback"}
    assert "llm_calls" not in ctx.metadata
    assert [b.name for b in hybrid.buckets] == [*LINKED, "entities", "relationships"]
    assert [b.weight for b in hybrid.buckets] == [1.0, 0.5, 1.0, 1.0, 1.0]
    entity_chunks = _ids(_bucket(hybrid, "entity_chunks"))
    assert entity_chunks[0] == unit("marie")  # cited by Marie, Pierre, Polonium and Warsaw
    assert set(entity_chunks) == {unit(d) for d in ("marie", "pierre", "warsaw", "sorbonne")}
    # every unit the relationships cite was already picked by the entity side
    assert _bucket(hybrid, "relation_chunks") == []
    assert _ids(_bucket(hybrid, "linked_similarity"))[0] == unit("marie")
    entities = _bucket(hybrid, "entities")
    assert entities[0].id == ent("Marie Curie")
    assert entities[0].text.startswith("Marie Curie (PERSON): Physicist")
    assert entities[0].text_unit_ids == (unit("marie"),)
    assert entities[0].document_ids == (unit("marie"),)
    assert ent("Warsaw") in _ids(entities)
    assert ent("Sourdough") not in _ids(entities)  # below the cosine floor, no BM25 match
    relationships = _bucket(hybrid, "relationships")
    assert relationships[0].id == rel_id("Marie Curie", "Warsaw")
    assert relationships[0].text == "Marie Curie BORN_IN Warsaw: Marie Curie was born in Warsaw."
    assert relationships[0].metadata["found_by"] == "keywords"
    for name in LINKED:
        assert not set(_ids(_bucket(hybrid, name))) & BREAD
    # mix: the same graph buckets plus the direct chunk retrieval of `naive`
    assert [b.name for b in mix.buckets] == [*LINKED, "entities", "relationships", "chunks"]
    for name in (*LINKED, "entities", "relationships"):
        assert _ids(_bucket(mix, name)) == _ids(_bucket(hybrid, name))
    chunks = _bucket(mix, "chunks")
    assert chunks[0].id == unit("marie")
    assert len(chunks) == len(set(_ids(chunks))) == 7  # all seven units: k = 20 (chunks_per_side)


def test_mix_chunks_bucket_is_the_naive_ranking(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[list[Candidate], list[Candidate]]:
        q = "Which river flows through the capital of Poland?"
        mix = await MixStrategy().retrieve(_ctx(fx, q))
        naive = await NaiveStrategy().retrieve(_ctx(fx, q))
        return _bucket(mix, "chunks"), naive

    chunks, naive = _run(tmp_path, body)
    assert _ids(chunks)[: len(naive)] == _ids(naive)
    assert _ids(chunks)[:2] == [unit("warsaw"), unit("vistula")]


def test_llm_keywords_make_one_call_and_reach_both_indexes(tmp_path: Path) -> None:
    reply = json.dumps({"high_level_keywords": ["capital city"],
                        "low_level_keywords": ["Warsaw"]})  # fmt: skip
    model = _scripted(("high_level_keywords", reply))

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Which country has Warsaw as its capital city?", model)
        return await HybridStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert model.calls == 1
    assert ctx.metadata["llm_calls"] == 1
    assert "Which country has Warsaw as its capital city?" in model.prompts[0]
    meta = ctx.metadata["lightrag"]
    assert isinstance(meta, dict)
    assert meta["keywords"] == {"high": ["capital city"], "low": ["Warsaw"], "source": "llm"}
    relationships = _bucket(result, "relationships")
    assert relationships[0].id == rel_id("Warsaw", "Poland")  # "capital city" → CAPITAL_OF
    assert relationships[0].metadata["found_by"] == "keywords"
    # low "Warsaw": Poland ("whose capital is Warsaw") edges out Warsaw on both BM25 and MiniLM
    entities = _bucket(result, "entities")
    assert _ids(entities)[:2] == [ent("Poland"), ent("Warsaw")]
    assert entities[0].metadata["found_by"] == "keywords"
    assert _ids(_bucket(result, "entity_chunks"))[0] == unit("warsaw")


def test_relationship_side_never_repeats_an_entity_side_unit(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> StrategyResult:
        ctx = _ctx(fx, "Where was Marie Curie born?", chunks_per_side=1)
        return await HybridStrategy().retrieve(ctx)

    result = _run(tmp_path, body)
    assert _ids(_bucket(result, "entity_chunks")) == [unit("marie")]
    relation_chunks = _ids(_bucket(result, "relation_chunks"))
    assert len(relation_chunks) == 1
    assert relation_chunks[0] != unit("marie")
    assert relation_chunks[0] in {unit(d) for d in ("warsaw", "pierre", "sorbonne")}


def test_filters_restrict_units_and_the_graph_items_citing_them(tmp_path: Path) -> None:
    allowed = {unit("warsaw"), unit("vistula")}

    async def body(fx: GraphFixture) -> StrategyResult:
        ctx = _ctx(fx, "Where was Marie Curie born?", filters={"document_id": sorted(allowed)})
        return await MixStrategy().retrieve(ctx)

    result = _run(tmp_path, body)
    units = {c.id for b in result.buckets for c in b.candidates if c.kind == "text_unit"}
    assert units <= allowed
    assert unit("warsaw") in _ids(_bucket(result, "entity_chunks"))
    assert set(_ids(_bucket(result, "chunks"))) <= allowed
    entities = _ids(_bucket(result, "entities"))
    assert ent("Warsaw") in entities  # cites tu-warsaw
    assert ent("Marie Curie") not in entities  # cites only tu-marie
    assert rel_id("Marie Curie", "Warsaw") not in _ids(_bucket(result, "relationships"))


def test_failed_entity_search_degrades_only_its_side(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        stores = fx.app.index()
        failing = dataclasses.replace(
            stores, search=_FailingEntities(stores.search, RuntimeError("entities index gone"))
        )
        ctx = _ctx(fx, "Where was Marie Curie born?", stores=failing)
        return await MixStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert ctx.metadata["degraded"] == {"entities": "RuntimeError: entities index gone"}
    relationships = _bucket(result, "relationships")
    assert relationships[0].id == rel_id("Marie Curie", "Warsaw")
    assert all(c.metadata["found_by"] == "keywords" for c in relationships)  # no entity edges
    entities = _bucket(result, "entities")
    assert entities and all(c.metadata["found_by"] == "relationship endpoint" for c in entities)
    assert _ids(_bucket(result, "entity_chunks"))[0] == unit("marie")
    assert _bucket(result, "chunks")[0].id == unit("marie")


def test_store_error_in_a_side_fails_the_query(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> None:
        stores = fx.app.index()
        failing = dataclasses.replace(
            stores, search=_FailingEntities(stores.search, StoreError("database is locked"))
        )
        await HybridStrategy().retrieve(_ctx(fx, "Where was Marie Curie born?", stores=failing))

    with pytest.raises(StoreError, match="database is locked"):
        _run(tmp_path, body)


# ------------------------------------------------------------------- simple


def test_simple_sweeps_every_index_the_namespace_holds(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?")
        full = await SimpleStrategy().retrieve(ctx)
        stores = fx.app.index()
        reports = [c.community_id for c in await stores.graph.get_reports(
            list(fx.community_ids.values()))]  # fmt: skip
        await stores.search.delete(Collection.REPORTS, reports)
        return full, await SimpleStrategy().retrieve(_ctx(fx, "Where was Marie Curie born?")), ctx

    full, without_reports, ctx = _run(tmp_path, body)
    assert [b.name for b in full.buckets] == ["text_units", "entities", "relationships",
                                              "reports"]  # fmt: skip
    assert ctx.metadata["simple_swept"] == ["text_units", "entities", "relationships", "reports"]
    assert _ids(_bucket(full, "text_units"))[0] == unit("marie")
    entities = _bucket(full, "entities")
    assert entities[0].id == ent("Marie Curie")
    assert entities[0].kind == "entity"
    assert entities[0].text_unit_ids == (unit("marie"),)
    relationships = _bucket(full, "relationships")
    assert relationships[0].id == rel_id("Marie Curie", "Warsaw")
    assert relationships[0].kind == "relationship"
    reports = _bucket(full, "reports")
    assert reports[0].kind == "report"
    assert reports[0].title == "The Curies and the Sorbonne"
    assert len(reports) == 5  # query.quotas.report; the fixture holds five reports
    assert [b.name for b in without_reports.buckets] == ["text_units", "entities",
                                                         "relationships"]  # fmt: skip


def test_simple_filters_units_and_graph_items(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> StrategyResult:
        ctx = _ctx(fx, "Where was Marie Curie born?", filters={"document_id": unit("pierre")})
        return await SimpleStrategy().retrieve(ctx)

    result = _run(tmp_path, body)
    assert _ids(_bucket(result, "text_units")) == [unit("pierre")]
    entities = _ids(_bucket(result, "entities"))
    assert set(entities) == {ent("Pierre Curie"), ent("Sorbonne")}  # those citing tu-pierre
    assert _ids(_bucket(result, "relationships")) == [rel_id("Pierre Curie", "Sorbonne")]


# ------------------------------------------------------------------- auto router


def _spec(name: str, methodology: str | None) -> StrategySpec:
    return StrategySpec(name, methodology, NaiveStrategy, f"the {name} strategy")


CANDIDATES = [_spec("local", "graphrag"), _spec("mix", "lightrag"), _spec("global", "graphrag"),
              _spec("naive", None)]  # fmt: skip


def test_router_takes_the_first_candidate_the_reply_names() -> None:
    async def main() -> list[tuple[str, str]]:
        out = []
        for reply in ("global", "Mix. Or maybe local.", "  `local`\n"):
            model = _scripted(default=reply)
            chosen = await route_with_llm(model, "What are the main themes?", CANDIDATES)
            assert chosen.reason == f"the router model named it (reply {reply.strip()!r})"
            out.append((chosen.strategy, chosen.by))
            assert model.calls == 1
            prompt = model.prompts[0]
            assert "- global: the global strategy" in prompt
            assert "- naive: the naive strategy" in prompt
            assert "drift" not in prompt
            assert "What are the main themes?" in prompt
        return out

    assert asyncio.run(main()) == [("global", "llm"), ("mix", "llm"), ("local", "llm")]


def test_router_falls_back_to_the_rule_on_an_unknown_reply() -> None:
    async def main() -> tuple[Route, Route, int]:
        model = _scripted(default="I would use the drift search, probably.")
        picked = await route_with_llm(model, "Where was Marie Curie born?", CANDIDATES)
        # without naive among the candidates, the rule's pick gives way to the first one
        no_naive = await route_with_llm(model, "Where was Marie Curie born?", CANDIDATES[:3])
        return picked, no_naive, model.calls

    picked, no_naive, calls = asyncio.run(main())
    # held defaults to what the candidates read (graphrag, lightrag): the rule picks hybrid,
    # which is not a candidate, so the first one
    assert (picked.strategy, picked.by) == ("local", "rule")
    assert picked.reason.startswith("the router's reply named no candidate (")
    assert picked.reason.endswith("the rule's pick 'hybrid' is not a candidate, so the first "
                                  "candidate")  # fmt: skip
    assert (no_naive.strategy, no_naive.by) == ("local", "rule")
    assert calls == 2


def test_router_with_one_candidate_makes_no_call() -> None:
    model = _scripted(default="global")
    picked = asyncio.run(route_with_llm(model, "Anything?", [_spec("naive", None)]))
    assert picked == Route("naive", "rule", "the only strategy the index can serve")
    assert model.calls == 0


def test_router_model_failures() -> None:
    class Failing:
        model_id = "failing"

        def __init__(self, status: int) -> None:
            self.status = status
            self.calls = 0

        async def complete(self, messages: Sequence[Message], **_: Any) -> Completion:
            self.calls += 1
            raise ModelError("boom", status_code=self.status)

    flaky = Failing(500)
    chosen = asyncio.run(route_with_llm(flaky, "Where?", CANDIDATES))  # type: ignore[arg-type]
    assert (chosen.strategy, chosen.by, flaky.calls) == ("local", "rule", 1)  # hybrid: no candidate
    assert chosen.reason.startswith("the router call failed (ModelError); ")
    with pytest.raises(ModelError):
        asyncio.run(route_with_llm(Failing(401), "Where?", CANDIDATES))  # type: ignore[arg-type]


def test_auto_routes_with_the_llm_among_servable_strategies(tmp_path: Path) -> None:
    model = _scripted(("Reply with the name of one strategy", "mix"))

    async def body(fx: GraphFixture) -> tuple[list[Candidate] | StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?", model)
        ctx.config = ctx.config.model_copy(update={"llm_query_processing": False})
        return await AutoStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert ctx.metadata["route"] == {"strategy": "mix", "by": "llm",
                                     "reason": "the router model named it (reply 'mix')"}
    assert model.calls == 1
    assert ctx.metadata["llm_calls"] == 1
    assert isinstance(result, StrategyResult)
    assert _ids(_bucket(result, "entity_chunks"))[0] == unit("marie")
    names = [s.name for s in routable_candidates(HELD)]
    assert "mix" in names and "naive" in names
    assert "ppr" not in names  # needs hipporag or lazy
    assert [s.name for s in routable_candidates(())] == ["naive"]


# ------------------------------------------------------------------- through the chain


def test_chain_packs_mix_sources_from_the_fused_buckets(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> Any:
        return await fx.chain().retrieve("Where was Marie Curie born?", strategy="mix")

    out = _run(tmp_path, body)
    assert out.strategy == "mix"
    units = [s.id for s in out.sources if s.kind == "text_unit"]
    assert units[0] == unit("marie")
    assert set(out.metadata["buckets"]) >= {"entity_chunks", "chunks", "entities"}
    assert ent("Marie Curie") in [s.id for s in out.sources if s.kind == "entity"]
