"""`auto`: one router for the chain and the strategy, and its rare-term guarantee.

Real SQLite files, the real bundled embedder; the LLM is the scripted one (its calls counted).
The router is checked for agreement between `RAGChain` and `AutoStrategy` called directly over
every combination of: an LLM or none, ``query.llm_router`` on or off, each search mode, and an
index holding each methodology set. The rare-term guarantee is checked on a corpus where the
passage holding a rare name, number or codename is ranked out of the context by `ppr`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.stages.test_graph_build import write_docs
from tests.stages.test_lazy_and_ppr import TOPICS, _index
from tests.support.graph_fixture import GraphFixture, graph_app
from unified_kg_rag.adapters.llm.scripted import ScriptedChatModel
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import ScriptedLLMConfig, UkrConfig
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.chain import RAGChain, RetrievalOutput
from unified_kg_rag.retrieval.strategies.auto import AutoStrategy
from unified_kg_rag.retrieval.strategies.base import QueryContext, StrategyResult

pytestmark = pytest.mark.integration

GRAPH_HELD: tuple[tuple[str, ...], ...] = (
    (), ("graphrag",), ("lightrag",), ("graphrag", "lightrag"), ("hipporag",),
)  # fmt: skip
"""Methodology sets the graph fixture is declared to hold (it has every artefact they read)."""
MODES = ("hybrid", "vector", "lexical")
ROUTER_REPLY = "mix, ppr, local or naive"
"""The scripted router's reply: its first servable name is mix, local or ppr by index."""


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(ScriptedLLMConfig(default_reply=ROUTER_REPLY))


async def _both(
    stores: IndexStores, app: App, question: str, held: tuple[str, ...], *,
    llm: bool, llm_router: bool, mode: str,
) -> tuple[RetrievalOutput, int, QueryContext, StrategyResult, int]:  # fmt: skip
    """Run ``question`` through the chain and through `AutoStrategy`; calls counted apart."""
    query = app.config.query.model_copy(update={
        "llm_router": llm_router, "search_mode": mode, "llm_query_processing": False,
    })  # fmt: skip
    chain_model, direct_model = (_model(), _model()) if llm else (None, None)
    chain = RAGChain(stores, embedder=app.embedder, chat_model=chain_model,
                     budget_tokenizer=app.budget_tokenizer, config=query)  # fmt: skip
    out = await chain.retrieve(question, strategy="auto")
    ctx = QueryContext(question=question, stores=stores, embedder=app.embedder,
                       chat_model=direct_model, config=query, held=held)  # fmt: skip
    result = await AutoStrategy().retrieve(ctx)
    return (out, chain_model.calls if chain_model else 0, ctx, result,
            direct_model.calls if direct_model else 0)  # fmt: skip


def _assert_agree(case: str, both: tuple[Any, ...], llm: bool, router: bool, mode: str) -> None:
    out, chain_calls, ctx, result, direct_calls = both
    route = out.metadata["route"]
    assert route == ctx.metadata["route"], case
    assert set(route) == {"strategy", "by", "reason"}, case
    assert out.strategy == route["strategy"], case
    assert route["by"] == ("llm" if llm and router and mode != "lexical" and
                           chain_calls else "rule"), case  # fmt: skip
    assert chain_calls == direct_calls, case
    assert out.metadata.get("llm_calls", 0) == ctx.metadata.get("llm_calls", 0), case
    assert out.metadata["buckets"] == {b.name: len(b.candidates) for b in result.buckets}, case
    assert out.metadata.get("rare_terms") == ctx.metadata.get("rare_terms"), case
    if mode == "lexical":
        assert route["strategy"] == "naive" and chain_calls == 0, case


def test_the_chain_and_auto_called_directly_route_alike(tmp_path: Path) -> None:
    combos = list(itertools.product((False, True), (False, True), MODES))

    async def on_graph(fx: GraphFixture) -> list[tuple[str, tuple[Any, ...], bool, bool, str]]:
        stores, rows = fx.app.index(), []
        for held in GRAPH_HELD:
            await stores.records.put(INDEX_NAMESPACE, METHODOLOGIES_KEY, json.dumps(list(held)))
            for llm, router, mode in combos:
                both = await _both(stores, fx.app, "Where was Marie Curie born?", held,
                                   llm=llm, llm_router=router, mode=mode)  # fmt: skip
                rows.append((f"{held} llm={llm} router={router} {mode}", both, llm, router,
                             mode))  # fmt: skip
        return rows

    async def on_lazy() -> list[tuple[str, tuple[Any, ...], bool, bool, str]]:
        corpus = write_docs(tmp_path / "corpus", TOPICS)
        rows = []
        async with build_app(UkrConfig(), tmp_path / "lazy") as app:
            await _index(app, [corpus])
            for llm, router, mode in combos:
                both = await _both(app.index(), app, "Which town was rebuilt after 1693?",
                                   ("lazy",), llm=llm, llm_router=router, mode=mode)  # fmt: skip
                rows.append((f"lazy llm={llm} router={router} {mode}", both, llm, router, mode))
        return rows

    async def main() -> list[tuple[str, tuple[Any, ...], bool, bool, str]]:
        async with graph_app(tmp_path / "graph") as fx:
            rows = await on_graph(fx)
        return rows + await on_lazy()

    rows = asyncio.run(main())
    assert len(rows) == len(combos) * (len(GRAPH_HELD) + 1)
    for case, both, llm, router, mode in rows:
        _assert_agree(case, both, llm, router, mode)
    picked = {(c.split(" llm")[0], both[0].metadata["route"]["strategy"])
              for c, both, llm, router, mode in rows if llm and router and mode == "hybrid"}
    # the LLM's first servable name wins; an index serving naive only makes no call
    assert picked == {("()", "naive"), ("('graphrag',)", "local"), ("('lightrag',)", "mix"),
                      ("('graphrag', 'lightrag')", "mix"), ("('hipporag',)", "ppr"),
                      ("lazy", "ppr")}  # fmt: skip
    by_rule = {(c.split(" llm")[0], both[0].metadata["route"]["strategy"])
               for c, both, llm, router, mode in rows if not llm and mode == "hybrid"}
    assert by_rule == {("()", "naive"), ("('graphrag',)", "local"), ("('lightrag',)", "hybrid"),
                       ("('graphrag', 'lightrag')", "hybrid"), ("('hipporag',)", "ppr"),
                       ("lazy", "ppr")}  # fmt: skip


# ------------------------------------------------------------------- rare-term guarantee

RARE = {
    "codename": ("What did the team code-named Tarnwick deliver?", "firmware.txt"),
    "number": ("Which shipment did invoice 48213 pay for?", "ledger.txt"),
    "surname": ("What did engineer Okonkwo-Baptiste repair?", "depot.txt"),
}
"""Question, and the one passage holding its rare term (a codename, a number, a surname)."""


def _rare_corpus() -> dict[str, str]:
    # many passages close to the questions' wording, none holding their rare terms
    docs = {
        f"team{i:02}.txt": f"The {team} team delivered the {thing} to the client last spring, "
        "and the project team reviewed what every delivery team shipped."
        for i, (team, thing) in enumerate(itertools.product(
            ("platform", "mobile", "data", "design", "research", "support"),
            ("dashboard", "mobile app", "billing service", "search feature"),
        ))
    }  # fmt: skip
    docs.update({
        f"ship{i:02}.txt": f"Invoice {40000 + 97 * i} paid for the shipment of {what}; every "
        "invoice pays for one shipment." for i, what in enumerate(
            ("steel pipes", "office chairs", "paper", "printer ink", "lamps", "tyres"))
    })  # fmt: skip
    docs.update({
        f"eng{i:02}.txt": f"Engineer {name} repaired the {what}; our engineers repair what "
        "breaks." for i, (name, what) in enumerate(
            (("Smith", "boiler"), ("Jones", "crane"), ("Brown", "lift"), ("Taylor", "pump")))
    })  # fmt: skip
    docs.update({
        f"code{i:02}.txt": f"The team code-named {name} delivered the {what} on time; each "
        "code-named team delivers one product." for i, (name, what) in enumerate(
            (("Aurora", "ticket portal"), ("Cobalt", "payroll export"), ("Ember", "chat bot"),
             ("Falcon", "route planner"), ("Granite", "audit log"), ("Harbor", "price feed")))
    })  # fmt: skip
    docs["firmware.txt"] = ("Tarnwick shipped harbour sensor firmware in April, after a "
                             "long field trial on the north pier.")
    docs["ledger.txt"] = "Ledger line 48213 covers forty crates of ceramic tiles from Porto."
    docs["depot.txt"] = ("Okonkwo-Baptiste fixed the cold-storage compressor at the "
                           "depot overnight.")
    return docs


def test_auto_keeps_the_passages_holding_rare_question_terms(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", _rare_corpus())

    async def main() -> dict[str, dict[str, list[str]]]:
        out: dict[str, dict[str, list[str]]] = {}
        async with build_app(UkrConfig(), tmp_path / "p") as app:
            await _index(app, [corpus])
            # ppr seeded by the embedding search alone (no BM25 seeds, which would find the
            # rare terms themselves), so the guarantee has passages to keep
            ppr = app.config.query.ppr.model_copy(update={"lexical_seed_weight": 0.0})
            chain = RAGChain(app.index(), embedder=app.embedder, chat_model=None,
                             budget_tokenizer=app.budget_tokenizer,
                             config=app.config.query.model_copy(update={"top_k": 4,
                                                                        "ppr": ppr}))  # fmt: skip
            for kind, (question, _) in RARE.items():
                runs: dict[str, dict[str, Any]] = {"auto": {}, "ppr": {"strategy": "ppr"}}
                out[kind] = {}
                for name, overrides in runs.items():
                    got = await chain.retrieve(question, **overrides)
                    out[kind][name] = [s.path or "" for s in got.sources]
                    if name == "auto":
                        assert got.strategy == "ppr"  # no code-like token: the rule's ppr
                        assert got.metadata["rare_terms"]["passages"]
        return out

    paths = asyncio.run(main())
    for kind, (_, target) in RARE.items():
        assert target not in paths[kind]["ppr"], kind  # the walk ranks it out of the context
        # auto keeps it, after ppr's best two (query.auto.rare_term_after), within top_k
        auto = paths[kind]["auto"]
        assert auto[:3] == [*paths[kind]["ppr"][:2], target] and len(auto) == 4, kind
