"""Strategies `local` and `drift` on the fixture graph (real SQLite, real bundled embedder).

`local` runs without an LLM (query entities by name) and with a scripted one; `drift` runs with
a scripted model whose number of calls is asserted against what its settings imply.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.graph_fixture import GraphFixture, ent, rel_id, run_graph, unit
from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel
from unified_kg_rag.config.models import ScriptedLLMConfig, ScriptedReply
from unified_kg_rag.domain.models import Collection, Completion, Message, RAGOutput, SearchMode
from unified_kg_rag.ports import ChatModel, IndexStores
from unified_kg_rag.retrieval.answer import answer_messages
from unified_kg_rag.retrieval.chain import RetrievalOutput
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
)
from unified_kg_rag.retrieval.strategies.base import fuse as fuse_buckets
from unified_kg_rag.retrieval.strategies.drift import DriftStrategy
from unified_kg_rag.retrieval.strategies.local import LocalStrategy, seed_floor, seed_shares
from unified_kg_rag.util.errors import ModelError, StoreError

pytestmark = pytest.mark.integration

T = TypeVar("T")
BREAD = {unit("bread"), unit("starter")}


_run = run_graph


def _ctx(
    fx: GraphFixture,
    question: str,
    model: ChatModel | None = None,
    stores: IndexStores | None = None,
    filters: dict[str, Any] | None = None,
    **query: Any,
) -> QueryContext:
    config = fx.app.config.query
    for section, values in query.items():
        config = config.model_copy(
            update={section: getattr(config, section).model_copy(update=values)}
        )
    return QueryContext(
        question=question, stores=stores or fx.app.index(), embedder=fx.app.embedder,
        chat_model=model, config=config, filters=filters or {}, held=("graphrag", "lightrag"),
    )  # fmt: skip


def _bucket(result: StrategyResult, name: str) -> list[Candidate]:
    return next(b.candidates for b in result.buckets if b.name == name)


def _ids(cands: Sequence[Candidate], kind: str | None = None) -> list[str]:
    return [c.id for c in cands if kind is None or c.kind == kind]


def _scripted(*rules: tuple[str, str], default: str = "") -> ScriptedChatModel:
    return ScriptedChatModel(ScriptedLLMConfig(
        replies=[ScriptedReply(match=m, reply=r) for m, r in rules], default_reply=default,
    ))  # fmt: skip


def _reply(answer: str, score: int, follow_ups: Sequence[str] = ()) -> str:
    return json.dumps({"answer": answer, "score": score, "follow_up_queries": list(follow_ups)})


# ------------------------------------------------------------------- helpers


@pytest.mark.unit
def test_seed_floor_rescales_hybrid_ratio_so_half_lands_on_the_vector_only_cap() -> None:
    kw = {"mode": SearchMode.HYBRID, "lexical_weight": 0.7, "vector_weight": 1.0}
    assert seed_floor(2.0, 0.5, **kw) == pytest.approx(2.0 / 1.7)
    assert seed_floor(2.0, 1.0, **kw) == pytest.approx(2.0)
    assert seed_floor(2.0, 0.25, **kw) == pytest.approx(1.0 / 1.7)
    assert seed_floor(2.0, 0.6, mode=SearchMode.VECTOR, lexical_weight=0.7,
                      vector_weight=1.0) == pytest.approx(1.2)  # fmt: skip


@pytest.mark.unit
def test_seed_shares_are_proportional_with_at_least_one_each() -> None:
    assert seed_shares([3.0, 1.0], 20) == [15, 5]
    assert seed_shares([1.0, 0.001], 10) == [10, 1]
    assert seed_shares([0.0, 0.0], 10) == [5, 5]
    assert seed_shares([], 10) == []


# --------------------------------------------------------------------- local


def test_local_without_llm_seeds_by_name_and_ranks_the_cited_units(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?", local_search={"max_hops": 2})
        return await LocalStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert ctx.metadata["query_entities"] == ["Marie Curie"]
    # the question's own lookup finds Marie Curie too: one seed
    assert ctx.metadata["seed_entities"] == [ent("Marie Curie")]
    assert ctx.metadata["report_selection"] == "membership"
    assert "llm_calls" not in ctx.metadata
    # support: Marie's own unit (cited by her, her three neighbours and three edges), then
    # the units of Warsaw and Pierre Curie (edge weight 9 before 8), then those only 2-hop
    # entities cite (Vistula's, then the Sorbonne's); Paris (3 hops) adds nothing
    assert _ids(_bucket(result, "support")) == [
        unit(d) for d in ("marie", "warsaw", "pierre", "vistula", "sorbonne")
    ]
    assert _ids(_bucket(result, "similarity"))[0] == unit("marie")
    assert set(_ids(_bucket(result, "similarity"))) == set(_ids(_bucket(result, "support")))
    fused = fuse_buckets([b for b in result.buckets if b.name in ("support", "similarity")], 10)
    assert _ids(fused)[:2] == [unit("marie"), unit("pierre")]
    entities = _bucket(result, "entities")
    assert _ids(entities) == [ent(n) for n in ("Marie Curie", "Warsaw", "Pierre Curie",
                                               "Polonium", "Poland", "Sorbonne", "Vistula")]
    assert [round(c.score / entities[0].score, 3) for c in entities] == [1, .5, .5, .5, .25,
                                                                        .25, .25]
    assert entities[0].text.startswith("Marie Curie (PERSON): Physicist")
    assert entities[0].text_unit_ids == (unit("marie"),)
    assert entities[1].document_ids == (unit("marie"), unit("warsaw"))
    relationships = _bucket(result, "relationships")
    assert _ids(relationships)[:3] == [rel_id("Marie Curie", t)
                                       for t in ("Warsaw", "Pierre Curie", "Polonium")]
    assert relationships[0].text == (
        "Marie Curie BORN_IN Warsaw: Marie Curie was born in Warsaw."
    )
    all_units = {c.id for b in result.buckets for c in b.candidates if c.kind == "text_unit"}
    assert not all_units & BREAD
    reports = _bucket(result, "reports")
    assert len(reports) == 5  # query.quotas.report; the fixture holds five reports
    assert reports[0].title == "Marie and Pierre Curie"  # her own (deepest) community's


def test_local_puts_the_edge_between_two_seeds_first(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Did Marie Curie work with Pierre Curie?")
        return await LocalStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert set(ctx.metadata["seed_entities"]) == {ent("Marie Curie"), ent("Pierre Curie")}
    rels = _ids(_bucket(result, "relationships"))
    # WORKED_WITH (weight 8, seed-seed) before BORN_IN (9, seed-reached)
    assert rels[0] == rel_id("Marie Curie", "Pierre Curie")
    assert rels.index(rel_id("Marie Curie", "Warsaw")) > 0
    assert set(_ids(_bucket(result, "entities"))[:2]) == {ent("Marie Curie"), ent("Pierre Curie")}
    # tu-marie is cited by both seeds and the bridge edge
    assert _ids(_bucket(result, "support"))[0] == unit("marie")


def test_local_with_llm_seeds_the_named_entities_with_one_model_call(tmp_path: Path) -> None:
    model = _scripted(("List the named entities", '{"entities": ["Pierre Curie"]}'))

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?", model,
                   local_search={"question_lookup": False, "max_hops": 1})  # fmt: skip
        return await LocalStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert model.calls == 1
    assert ctx.metadata["llm_calls"] == 1
    assert ctx.metadata["seed_entities"] == [ent("Pierre Curie")]
    assert _ids(_bucket(result, "entities"))[0] == ent("Pierre Curie")
    # Pierre cites tu-marie and tu-pierre (each 1/sqrt(2) of his weight); tu-marie adds all
    # of Marie's (her only unit) and the WORKED_WITH edge, tu-pierre the Sorbonne's share
    # and the TAUGHT_AT edge; tu-sorbonne only the Sorbonne's share
    assert _ids(_bucket(result, "support")) == [unit("marie"), unit("pierre"), unit("sorbonne")]


def test_local_filters_keep_only_matching_units(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> StrategyResult:
        ctx = _ctx(fx, "Where was Marie Curie born?", filters={"path": "warsaw.txt"})
        return await LocalStrategy().retrieve(ctx)

    result = _run(tmp_path, body)
    units = [c for b in result.buckets for c in b.candidates if c.kind == "text_unit"]
    assert units and {c.id for c in units} == {unit("warsaw")}
    assert all(c.path == "warsaw.txt" for c in units)
    # graph items none of whose cited units pass the filter are left out
    entities = _ids(_bucket(result, "entities"))
    assert ent("Warsaw") in entities and ent("Marie Curie") not in entities
    assert all(unit("warsaw") in c.text_unit_ids for b in result.buckets for c in b.candidates)


class _FailingReports:
    """A search index whose reports search raises ``error``; everything else delegates."""

    def __init__(self, inner: Any, error: Exception) -> None:
        self._inner, self._error = inner, error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def search(self, collection: Collection, **kw: Any) -> Any:
        if collection is Collection.REPORTS:
            raise self._error
        return await self._inner.search(collection, **kw)


def test_local_degrades_only_a_failed_section(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        stores = fx.app.index()
        broken = dataclasses.replace(
            stores, search=_FailingReports(stores.search, RuntimeError("reports down"))
        )
        ctx = _ctx(fx, "Where was Marie Curie born?", stores=broken)
        return await LocalStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert ctx.metadata["degraded"] == {"reports": "RuntimeError: reports down"}
    assert [b.name for b in result.buckets] == ["support", "similarity", "entities",
                                                "relationships"]  # fmt: skip
    assert _ids(_bucket(result, "support"))[0] == unit("marie")
    assert _ids(_bucket(result, "entities"))[0] == ent("Marie Curie")


def test_local_store_error_fails_the_query(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> None:
        stores = fx.app.index()
        broken = dataclasses.replace(
            stores, search=_FailingReports(stores.search, StoreError("database is locked"))
        )
        await LocalStrategy().retrieve(_ctx(fx, "Where was Marie Curie born?", stores=broken))

    with pytest.raises(StoreError, match="database is locked"):
        _run(tmp_path, body)


def test_local_membership_reports_follow_the_deepest_communities(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext, dict[str, str]]:
        ctx = _ctx(fx, "Where was Marie Curie born?",
                   local_search={"report_selection": "membership", "max_hops": 2})  # fmt: skip
        return await LocalStrategy().retrieve(ctx), ctx, fx.community_ids

    result, ctx, ids = _run(tmp_path, body)
    assert ctx.metadata["report_selection"] == "membership"
    # deepest communities of the expanded entities: Marie, Pierre, Polonium -> level-1
    # "curies"; Warsaw, Poland, Vistula -> "poland" (not split); Sorbonne -> "sorbonne".
    # Three matches each for the first two: the higher report rank (7 > 6) first; then the
    # parent "science"; the bread report (no expanded entity) only fills the quota
    assert _ids(_bucket(result, "reports")) == [ids["curies"], ids["poland"], ids["sorbonne"],
                                                ids["science"], ids["bread"]]  # fmt: skip


# Reports whose text shares no word with "Where was Marie Curie born?" for the communities
# Marie Curie belongs to, and a bread report that shares several ("where", "was", "born",
# "Marie") although no expanded entity belongs to its community.
WORDLESS_REPORTS = {
    "curies": ("Radioactivity research", "Two radioactive elements were isolated in a "
               "laboratory around 1898.", 7.0),
    "science": ("Physics and chemistry in France", "Laboratory work on radioactive elements "
                "and university teaching in France.", 8.0),
    "bread": ("Where sourdough was born", "Where was sourdough born? Marie, a baker, says "
              "it was born in ancient Egypt.", 3.0),
}  # fmt: skip


def test_local_puts_the_selected_entities_own_community_reports_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15, item 8: with the default selection, the reports of the communities the
    selected entities belong to come first (deepest, then parents), even when their text does
    not share a word with the question; similarity only fills the rest of the quota."""
    from tests.support import graph_fixture

    for name, report in WORDLESS_REPORTS.items():
        monkeypatch.setitem(graph_fixture.REPORT_TEXT, name, report)

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext, RetrievalOutput,
                                              dict[str, str]]:  # fmt: skip
        ctx = _ctx(fx, "Where was Marie Curie born?")
        result = await LocalStrategy().retrieve(ctx)
        # room for two reports: the similarity ranking alone would give the Sorbonne's and
        # the bread report (see the next test), not Marie Curie's own
        out = await fx.chain(quotas={"report": 2}).retrieve("Where was Marie Curie born?",
                                                            strategy="local")  # fmt: skip
        return result, ctx, out, fx.community_ids

    result, ctx, out, ids = _run(tmp_path, body)
    assert ctx.metadata["report_selection"] == "membership"
    # deepest communities of the expanded entities (Marie, Pierre, Polonium -> "curies";
    # Warsaw, Poland, Vistula -> "poland"; Sorbonne -> "sorbonne"), three matches before one
    # and report rank 7 before 6 at three; then their parent "science"; then the most similar
    # report fills the quota of 5
    assert _ids(_bucket(result, "reports")) == [
        ids["curies"], ids["poland"], ids["sorbonne"], ids["science"], ids["bread"]]
    assert ctx.metadata["member_reports"] == 4
    assert [s.id for s in out.sources if s.kind == "report"] == [ids["curies"], ids["poland"]]


def test_local_similarity_selection_is_kept_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support import graph_fixture

    for name, report in WORDLESS_REPORTS.items():
        monkeypatch.setitem(graph_fixture.REPORT_TEXT, name, report)

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext, dict[str, str]]:
        ctx = _ctx(fx, "Where was Marie Curie born?", quotas={"report": 2},
                   local_search={"report_selection": "similarity"})  # fmt: skip
        return await LocalStrategy().retrieve(ctx), ctx, fx.community_ids

    result, ctx, ids = _run(tmp_path, body)
    assert ctx.metadata["report_selection"] == "similarity"
    assert "member_reports" not in ctx.metadata
    # the reports sharing words with the query win, Marie Curie's own community's is left out
    assert _ids(_bucket(result, "reports")) == [ids["sorbonne"], ids["bread"]]


# --------------------------------------------------------------------- drift

DRIFT = {"k_followups": 4, "primer_folds": 2, "n_depth": 2, "followups_per_round": 2}
HYDE = ("step 1", "# Marie Curie\n\nMarie Curie, the physicist, was born in Warsaw.")


def test_drift_makes_exactly_the_calls_its_settings_imply(tmp_path: Path) -> None:
    model = _scripted(
        HYDE,
        ("step 2", _reply("The reports say Warsaw.", 60,
                          ["Where is Warsaw?", "Who was Pierre Curie?"])),
        ("Follow-up query: Where is Warsaw?", _reply("Warsaw is in Poland.", 80,
                                                     ["Which river flows through Warsaw?"])),
        ("step 3", _reply("Not about the birthplace.", 30, ["Where did Pierre Curie teach?"])),
    )  # fmt: skip

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?", model, drift_search=DRIFT)
        return await DriftStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert model.calls == 7 == ctx.metadata["llm_calls"] == ctx.metadata["llm_calls_bound"]
    assert [p.split(":")[0] for p in model.prompts] == (
        ["DRIFT search, step 1"] + ["DRIFT search, step 2"] * 2 + ["DRIFT search, step 3"] * 4
    )
    asked = [p.split("Follow-up query: ")[1].splitlines()[0] for p in model.prompts[3:]]
    assert sorted(asked[:2]) == ["Where is Warsaw?", "Who was Pierre Curie?"]
    assert sorted(asked[2:]) == ["Where did Pierre Curie teach?",
                                 "Which river flows through Warsaw?"]  # fmt: skip
    assert ctx.metadata["drift_rounds"] == 2
    [notes] = result.synthesized
    assert notes.kind == "notes"
    order = [notes.text.index(s) for s in ("Warsaw is in Poland.", "The reports say Warsaw.",
                                           "Not about the birthplace.")]  # fmt: skip
    assert order == sorted(order)
    assert notes.text.startswith("[score 80] Where is Warsaw?")
    names = [b.name for b in result.buckets]
    assert names == ["drift_primer", "drift.action.1.1", "drift.action.1.2",
                     "drift.action.2.1", "drift.action.2.2"]  # fmt: skip
    assert len(_bucket(result, "drift_primer")) == 4
    assert {c.kind for c in _bucket(result, "drift_primer")} == {"report"}
    warsaw = _bucket(result, "drift.action.1.1")
    assert {"text_unit", "entity", "relationship"} <= {c.kind for c in warsaw}
    assert ent("Warsaw") in [c.id for c in warsaw if c.kind == "entity"][:2]  # a seed
    weights = {b.name: b.weight for b in result.buckets}
    assert weights["drift.action.1.1"] == pytest.approx(0.9)  # score 80
    assert weights["drift.action.1.2"] == pytest.approx(0.65)  # score 30


def test_drift_without_primer_follow_ups_asks_the_question_once(tmp_path: Path) -> None:
    model = _scripted(
        HYDE,
        ("step 2", _reply("The reports name Warsaw.", 50)),
        ("step 3", _reply("Marie Curie was born in Warsaw.", 95)),
    )

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?", model, drift_search=DRIFT)
        return await DriftStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert model.calls == 4 == ctx.metadata["llm_calls"]  # 1 + 2 primer + the question
    assert "Follow-up query: Where was Marie Curie born?" in model.prompts[3]
    assert "the question itself is the one follow-up" in str(ctx.metadata["fallback"])
    assert ctx.metadata["drift_rounds"] == 1
    assert result.synthesized[0].text.startswith("[score 95] Where was Marie Curie born?")


def test_drift_failed_primer_calls_degrade_only_themselves(tmp_path: Path) -> None:
    model = _scripted(HYDE, ("step 2", "I cannot produce JSON today."),
                      ("step 3", _reply("Born in Warsaw.", 90)))  # fmt: skip

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?", model, drift_search=DRIFT)
        return await DriftStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert model.calls == 4
    degraded = ctx.metadata["degraded"]
    assert isinstance(degraded, dict)
    assert set(degraded) == {"drift.primer.1", "drift.primer.2"}
    assert "ModelOutputError" in degraded["drift.primer.1"]
    assert result.synthesized[0].text == "[score 90] Where was Marie Curie born?\nBorn in Warsaw."


class _Denied:
    """A chat model whose every call is refused with HTTP 401."""

    calls = 0

    async def complete(self, messages: Sequence[Message], **kw: Any) -> Completion:
        self.calls += 1
        raise ModelError("invalid api key", status_code=401)


def test_drift_authentication_failure_fails_the_query(tmp_path: Path) -> None:
    model = _Denied()

    async def body(fx: GraphFixture) -> None:
        denied: Any = model
        await DriftStrategy().retrieve(
            _ctx(fx, "Where was Marie Curie born?", denied, drift_search=DRIFT)
        )

    with pytest.raises(ModelError, match="invalid api key"):
        _run(tmp_path, body)
    assert model.calls == 1


def test_drift_without_llm_runs_one_local_search(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> tuple[StrategyResult, StrategyResult, QueryContext]:
        ctx = _ctx(fx, "Where was Marie Curie born?", drift_search=DRIFT)
        drift = await DriftStrategy().retrieve(ctx)
        local = await LocalStrategy().retrieve(_ctx(fx, "Where was Marie Curie born?"))
        return drift, local, ctx

    drift, local, ctx = _run(tmp_path, body)
    assert "DRIFT needs an LLM" in str(ctx.metadata["fallback"])
    assert ctx.metadata["llm_calls"] == 0
    assert drift.synthesized == []
    assert [(b.name, _ids(b.candidates)) for b in drift.buckets] == [
        (b.name, _ids(b.candidates)) for b in local.buckets
    ]
    assert _ids(_bucket(drift, "support"))[0] == unit("marie")


def test_drift_on_an_index_without_reports_asks_the_question(tmp_path: Path) -> None:
    model = _scripted(("step 3", _reply("Born in Warsaw.", 90)))

    async def body(fx: GraphFixture) -> tuple[StrategyResult, QueryContext]:
        stores = fx.app.index()
        deleted = await stores.search.delete(Collection.REPORTS, list(fx.community_ids.values()))
        assert deleted == 5 and await stores.search.count(Collection.REPORTS) == 0
        ctx = _ctx(fx, "Where was Marie Curie born?", model, drift_search=DRIFT)
        return await DriftStrategy().retrieve(ctx), ctx

    result, ctx = _run(tmp_path, body)
    assert model.calls == 1
    assert "no community reports" in str(ctx.metadata["fallback"])
    assert [b.name for b in result.buckets] == ["drift.action.1.1"]


def test_fuse_buckets_merges_a_candidate_found_twice() -> None:
    a = Candidate(kind="text_unit", id="u1", text="one", score=1.0)
    b = Candidate(kind="text_unit", id="u2", text="two", score=1.0)
    e = Candidate(kind="entity", id="u1", text="an entity sharing the id", score=1.0)
    fused = fuse_buckets([Bucket("x", [b, a]), Bucket("y", [a, e], weight=2.0)], 10)
    assert [(c.kind, c.id) for c in fused] == [("text_unit", "u1"), ("entity", "u1"),
                                               ("text_unit", "u2")]  # fmt: skip
    assert fused[0].score == pytest.approx(1 / 12 + 2 / 11)


# ---------------------------------------------------------------- the chain


def test_chain_local_packs_graph_sections_then_passages(tmp_path: Path) -> None:
    async def body(fx: GraphFixture) -> RetrievalOutput:
        return await fx.chain().retrieve("Where was Marie Curie born?", strategy="local",
                                         top_k=3)  # fmt: skip

    out = _run(tmp_path, body)
    kinds = [s.kind for s in out.sources]
    assert kinds == sorted(kinds, key=["report", "entity", "relationship", "text_unit"].index)
    units = [s.id for s in out.sources if s.kind == "text_unit"]
    assert units[0] == unit("marie") and len(units) == 3 and not set(units) & BREAD
    assert next(s.id for s in out.sources if s.kind == "entity") == ent("Marie Curie")
    assert rel_id("Marie Curie", "Warsaw") in [s.id for s in out.sources
                                               if s.kind == "relationship"][:3]
    assert out.metadata["report_selection"] == "membership"


def test_chain_drift_answer_sees_the_notes_and_makes_one_more_call(tmp_path: Path) -> None:
    model = _scripted(
        HYDE,
        ("step 2", _reply("The reports say Warsaw.", 60, ["Where is Warsaw?"])),
        ("step 3", _reply("Warsaw is the capital of Poland.", 80)),
        default="Warsaw [1].",
    )

    async def body(fx: GraphFixture) -> RAGOutput:
        chain = fx.chain(model, drift_search=fx.app.config.query.drift_search.model_copy(
            update=DRIFT))  # fmt: skip
        return await chain.ainvoke("Where was Marie Curie born?", strategy="drift")

    out = _run(tmp_path, body)
    # 1 HyDE + 2 primer folds + 1 action (the one follow-up) + the answer
    assert model.calls == 5
    assert out.metadata["llm_calls"] == 4 and out.metadata["llm_calls_bound"] == 7
    assert out.sources[0].kind == "notes"
    assert out.sources[0].text.startswith("[score 80] Where is Warsaw?")
    assert model.prompts[-1] == answer_messages(out.question, out.sources)[-1].content
    assert unit("marie") in [s.id for s in out.sources if s.kind == "text_unit"]
