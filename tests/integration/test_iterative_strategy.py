"""Strategy `iterative` over a real SQLite `lazy` index of a two-hop toy corpus.

The question asks where the director of *Moonfall Harbor* was born: round 0 (`ppr`) finds
the film's passage, which names the director (the bridge), and the distractors sharing the
question's words; the director's own passage shares none of them. Offline, the bridge comes
from the concept graph; with a model, from the scripted controller replies of a real
OpenAI-compatible test server (`FakeOpenAIServer`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.fakes import FakeEmbedder
from tests.support.answer_chain import llm
from tests.support.openai_server import FakeOpenAIServer, Scripted
from typer.testing import CliRunner

from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.cli.app import app as cli
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.llm.deadline import QueryDeadline
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.retrieval.chain import RAGChain, RetrievalOutput
from unified_kg_rag.retrieval.strategies.auto import rule_route
from unified_kg_rag.retrieval.strategies.base import Candidate, QueryContext, fuse
from unified_kg_rag.retrieval.strategies.iterative import IterativeStrategy
from unified_kg_rag.retrieval.strategies.ppr import PPRStrategy
from unified_kg_rag.util.errors import MethodologyNotIndexedError, ModelError

pytestmark = pytest.mark.integration

T = TypeVar("T")

DOCS = {
    "moonfall.md": "# Moonfall Harbor\n\nMoonfall Harbor is a 1998 drama film about a fishing "
    "town. The film was directed by Tobias Quillfeather and shot on the coast.",
    "quillfeather.md": "# Tobias Quillfeather\n\nTobias Quillfeather grew up in Varnholt, a "
    "mountain village. Quillfeather studied painting before cinema.",
    "kelso.md": "# Kelso\n\nKelso is the harbor town where the director of the port was born. "
    "Kelso has a fishing fleet.",
    "directors.md": "# Harbor directors\n\nEvery harbor director of the town was born in "
    "Kelso, near the coast.",
    "lighthouse.md": "# Lighthouse\n\nThe lighthouse of Kelso guides the fishing fleet along "
    "the coast.",
    "painting.md": "# Painting\n\nPainting schools in the mountain village taught cinema "
    "students.",
}
QUESTION = "In which town was the director of Moonfall Harbor born?"
QUERY = {"top_k": 3, "llm_router": False, "llm_query_processing": False}
INSUFFICIENT = json.dumps({"sufficient": False, "bridge_entities": ["Tobias Quillfeather"],
                           "next_queries": ["Tobias Quillfeather birthplace"]})  # fmt: skip
SUFFICIENT = '{"sufficient": true, "bridge_entities": [], "next_queries": []}'


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy corpus indexed once (`lazy`, no model call, the fake embedder)."""
    root = tmp_path_factory.mktemp("iterative")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")

    async def build() -> None:
        config = UkrConfig(indexing={"methodologies": ["lazy"]})  # type: ignore[arg-type]
        async with build_app(config, root) as app:
            await IndexPipeline(app.index(), embedder=FakeEmbedder(),
                                chunk_tokenizer=app.chunk_tokenizer, parsers=app.parsers,
                                config=app.config).run([docs])  # fmt: skip

    asyncio.run(build())
    return root


def _config(server: FakeOpenAIServer | None, **query: Any) -> UkrConfig:
    return UkrConfig(
        llm=llm(server) if server is not None else {"kind": "none"},  # type: ignore[arg-type]
        indexing={"methodologies": ["lazy"]},  # type: ignore[arg-type]
        query={**QUERY, **query},  # type: ignore[arg-type]
    )


def _with_app(
    project: Path, server: FakeOpenAIServer | None, body: Callable[[App], Awaitable[T]],
    **query: Any,
) -> T:  # fmt: skip
    async def main() -> T:
        async with build_app(_config(server, **query), project) as app:
            return await body(app)

    return asyncio.run(main())


def _ctx(app: App, **overrides: Any) -> QueryContext:
    return QueryContext(question=QUESTION, stores=app.index(), embedder=FakeEmbedder(),
                        chat_model=app.chat_model, config=app.config.query, held=("lazy",),
                        **overrides)  # fmt: skip


def _chain(app: App) -> RAGChain:
    return RAGChain(app.index(), embedder=FakeEmbedder(), chat_model=app.chat_model,
                    budget_tokenizer=app.budget_tokenizer, config=app.config.query)  # fmt: skip


def _paths(candidates: list[Candidate]) -> list[str]:
    return [c.path or "" for c in candidates]


def _both(project: Path, server: FakeOpenAIServer | None, **query: Any) -> tuple[
    RetrievalOutput, RetrievalOutput
]:  # fmt: skip
    async def body(app: App) -> tuple[RetrievalOutput, RetrievalOutput]:
        chain = _chain(app)
        base = await chain.retrieve(QUESTION, strategy="ppr")
        return base, await chain.retrieve(QUESTION, strategy="iterative")

    return _with_app(project, server, body, **query)


def test_offline_follow_up_finds_the_second_hop_the_base_missed(project: Path) -> None:
    async def body(app: App) -> tuple[list[Candidate], list[Candidate], dict[str, Any]]:
        base = await PPRStrategy().retrieve(_ctx(app))
        ctx = _ctx(app)
        result = await IterativeStrategy().retrieve(ctx)
        return base, fuse(result.buckets, 10), ctx.metadata["iterative"]

    base, fused, meta = _with_app(project, None, body)
    assert _paths(base) == ["moonfall.md", "directors.md", "kelso.md"]
    assert "quillfeather.md" not in _paths(base)
    found = {c.path: c for c in fused}
    assert found["quillfeather.md"].metadata["round"] == 1  # the bridge's own passage
    assert found["moonfall.md"].metadata["round"] == 0  # round 0's copy kept
    assert set(_paths(fused)[:3]) == set(_paths(base))  # round 0's top stays on top
    assert meta["base"] == "ppr" and meta["rounds"] == 2 and meta["stop_reason"] == "max_rounds"
    assert meta["verdicts"][0]["bridge_entities"][0] == "tobias quillfeather"
    assert meta["context_sufficient"] is None  # no verdict offline
    searched = [s.casefold() for s in meta["searched"]]
    assert len(searched) == len(set(searched))  # nothing searched twice
    assert "quillfeather" not in searched  # inside "tobias quillfeather", already followed


def test_sufficient_verdict_returns_exactly_the_base_results(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply=SUFFICIENT, match="Searches already made"))
        base, it = _both(project, server)
    assert [(s.id, s.text) for s in it.sources] == [(s.id, s.text) for s in base.sources]
    assert all(s.metadata.get("round") == 0 for s in it.sources)
    meta = it.metadata["iterative"]
    assert meta["stop_reason"] == "sufficient" and meta["rounds"] == 0
    assert meta["verdicts"] == [{"sufficient": True, "bridge_entities": [], "next_queries": []}]
    assert it.metadata["llm_calls"] == 1


def test_scripted_bridge_query_runs_one_follow_up_round(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply=INSUFFICIENT, match="Searches already made"),
                      Scripted(reply=SUFFICIENT, match="Searches already made"))  # fmt: skip

        async def body(app: App) -> tuple[list[Candidate], dict[str, Any]]:
            ctx = _ctx(app)
            result = await IterativeStrategy().retrieve(ctx)
            return fuse(result.buckets, 10), ctx.metadata

        fused, metadata = _with_app(project, server, body)
        prompts = [r.body["messages"][-1]["content"] for r in server.requests_to("/chat/completions")]
    meta = metadata["iterative"]
    assert meta["rounds"] == 1 and meta["stop_reason"] == "sufficient"
    assert meta["searched"] == ["Tobias Quillfeather", "Tobias Quillfeather birthplace"]
    assert meta["context_sufficient"] is None and metadata["llm_calls"] == 2
    assert {c.path: c.metadata["round"] for c in fused}["quillfeather.md"] == 1
    assert len(prompts) == 2 and QUESTION in prompts[0]
    assert "Searches already made:\n(none)" in prompts[0]
    assert "- Tobias Quillfeather birthplace" in prompts[1]


def test_unreadable_controller_reply_stops_with_the_base_results(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply="I think they suffice.", match="Searches already made"))
        base, it = _both(project, server)
    assert [s.id for s in it.sources] == [s.id for s in base.sources]
    meta = it.metadata["iterative"]
    assert meta["stop_reason"] == "controller_unparsed" and meta["rounds"] == 0
    assert meta["context_sufficient"] is None


def test_model_errors_degrade_or_fail(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Scripted(status=500, match="Searches already made"))
        base, it = _both(project, server)
        assert [s.id for s in it.sources] == [s.id for s in base.sources]
        assert it.metadata["iterative"]["stop_reason"] == "degraded"
        assert "iterative_controller" in it.metadata["degraded"]
        server.script(Scripted(status=401, message="bad key", match="Searches already made"))
        with pytest.raises(ModelError):
            _both(project, server)


def test_no_round_after_the_deadline(project: Path) -> None:
    async def body(app: App) -> dict[str, Any]:
        ctx = _ctx(app, deadline=QueryDeadline(seconds=0.0, started=time.monotonic() - 1))
        await IterativeStrategy().retrieve(ctx)
        return ctx.metadata["iterative"]

    meta = _with_app(project, None, body)
    assert meta["stop_reason"] == "deadline" and meta["rounds"] == 0 and meta["verdicts"] == []


def test_rounds_are_bounded_and_nothing_is_searched_twice(project: Path) -> None:
    same = json.dumps({"sufficient": False, "bridge_entities": ["Kelso"], "next_queries": ["kelso"]})
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply=same, match="Searches already made", times=None))
        _, it = _both(project, server, iterative={"max_rounds": 3})
        meta = it.metadata["iterative"]
        assert meta["rounds"] == 1 and meta["stop_reason"] == "nothing_new"
        assert meta["searched"] == ["Kelso"]  # the query "kelso" is the bridge, case-folded
        assert meta["context_sufficient"] is False
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply=INSUFFICIENT, match="Searches already made"),
                      Scripted(reply=same, match="Searches already made"))  # fmt: skip
        _, it = _both(project, server, iterative={"max_rounds": 1})
    meta = it.metadata["iterative"]
    assert meta["rounds"] == 1 and meta["stop_reason"] == "max_rounds"
    assert len(meta["verdicts"]) == 2  # the last round is judged too
    assert meta["context_sufficient"] is False and it.metadata["llm_calls"] == 2


def test_sources_carry_their_round(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply=INSUFFICIENT, match="Searches already made"),
                      Scripted(reply=SUFFICIENT, match="Searches already made"))  # fmt: skip
        _, it = _both(project, server, iterative={"rerun_query": "first_query",
                                                  "first_round_weight": 1.0})
    rounds = {s.path: s.metadata["round"] for s in it.sources}
    assert rounds["moonfall.md"] == 0 and rounds["quillfeather.md"] == 1
    assert all(s.document_id and s.text for s in it.sources)  # provenance kept
    assert set(it.metadata["buckets"]) >= {"iterative_round_0", "iterative_round_1"}


def test_refused_when_the_base_methodology_is_not_held(project: Path) -> None:
    async def body(app: App) -> RetrievalOutput:
        return await _chain(app).retrieve(QUESTION, strategy="iterative")

    with pytest.raises(MethodologyNotIndexedError, match="through 'local'"):
        _with_app(project, None, body, iterative={"base": "local"})


def test_ukr_strategies_lists_it_and_auto_routes_multi_hop_to_it(project: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["strategies", "-C", str(project), "--json"])
    assert result.exit_code == 0, result.output
    row = {r["name"]: r for r in json.loads(result.stdout)["strategies"]}["iterative"]
    assert row["served"] and row["methodologies"] == ["hipporag", "lazy"]
    local = runner.invoke(cli, ["strategies", "-C", str(project), "--json"],
                          env={"UKR_QUERY__ITERATIVE__BASE": "local"})  # fmt: skip
    row = {r["name"]: r for r in json.loads(local.stdout)["strategies"]}["iterative"]
    assert not row["served"] and row["missing"] == ["graphrag"]
    config = _config(None).query
    assert rule_route(["lazy"], "hybrid", QUESTION, config).strategy == "ppr"  # one relation
    chained = "Where was the spouse of the director of Moonfall Harbor born?"
    assert rule_route(["lazy"], "hybrid", chained, config).strategy == "iterative"
    assert rule_route(["lazy"], "hybrid", chained).strategy == "ppr"  # no config: as before
    assert rule_route(["lazy"], "lexical", chained, config).strategy == "naive"
    local_cfg = _config(None, iterative={"base": "local"}).query
    assert rule_route(["lazy"], "hybrid", chained, local_cfg).strategy == "ppr"


@pytest.mark.parametrize("base", ["local", "mix"])
def test_offline_bridges_from_the_entity_graph_seed_local_and_mix(
    tmp_path: Path, base: str
) -> None:
    """On an LLM-built entity graph the bridges are entity names citing the top passages."""
    from tests.support.graph_fixture import GraphFixture, run_graph

    question = "Which university did the husband of Marie Curie teach at?"

    async def body(fx: GraphFixture) -> RetrievalOutput:
        chain = fx.chain(top_k=3, iterative={"base": base, "max_rounds": 1})
        return await chain.retrieve(question, strategy="iterative")

    out = run_graph(tmp_path, body)
    meta = out.metadata["iterative"]
    assert meta["base"] == base and meta["rounds"] == 1 and meta["stop_reason"] == "max_rounds"
    bridges = meta["verdicts"][0]["bridge_entities"]
    assert "Pierre Curie" in bridges and "Marie Curie" not in bridges  # in the question
    assert {"iterative_round_0", "iterative_round_1"} <= set(out.metadata["buckets"])
    assert all(s.metadata.get("round") in (0, 1) for s in out.sources)


def test_decompose_runs_one_round_per_step_resolving_references(project: Path) -> None:
    steps = json.dumps({"steps": ["Who directed Moonfall Harbor?", "Where was #1 born?"]})
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply=steps, match="single-hop steps"))
        _, it = _both(project, server, iterative={"decompose": True})
        calls = server.requests_to("/chat/completions")
    meta = it.metadata["iterative"]
    assert meta["rounds"] == 2 and meta["stop_reason"] == "steps_done"
    first, second = meta["verdicts"]
    assert first["resolved"] == "Who directed Moonfall Harbor?"
    assert first["answer"] == "tobias quillfeather"  # the best bridge of step 1's passages
    assert second["resolved"] == "Where was tobias quillfeather born?"
    assert meta["searched"] == ["Who directed Moonfall Harbor?", "tobias quillfeather",
                                "Where was tobias quillfeather born?"]  # fmt: skip
    assert len(calls) == 1 and it.metadata["llm_calls"] == 1


def test_unreadable_decomposition_keeps_the_base_results(project: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply="no steps here", match="single-hop steps"))
        base, it = _both(project, server, iterative={"decompose": True})
    assert [s.id for s in it.sources] == [s.id for s in base.sources]
    assert it.metadata["iterative"]["stop_reason"] == "decomposition_unparsed"
