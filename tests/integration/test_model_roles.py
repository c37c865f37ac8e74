"""Models per role (`llm.tiers`, `llm.roles`) end to end, over real HTTP on 127.0.0.1.

One OpenAI-compatible server answers every model and records the ``model`` field of each
request, so each call can be traced to the model its role chose: extraction and gleaning to
the `fast` tier, community reports and answers to the `strong` one, query processing to
`fast`; a role with a model of its own (inline) goes to its own server. Real SQLite stores,
the graph replies of ``tests/stages/test_graph_build.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import reply, write_docs
from tests.support.openai_server import FakeOpenAIServer

from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.ingestion.report import IndexReport

pytestmark = pytest.mark.integration

_ANSWER_SYSTEM = "You answer questions using only the numbered sources"


def _kind(body: dict[str, Any]) -> str:
    """Which step sent a request: read from its prompt."""
    system = "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
    user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
    if "<report_context>" in user:
        return "reports"
    if "<descriptions>" in user:
        return "summaries"
    if "<current_items>" in user:
        return "gleaning"
    if user.startswith("You build a knowledge graph") or "You build a knowledge graph" in system:
        return "extraction"
    if _ANSWER_SYSTEM in system:
        return "answer"
    return "query"


def _models_by_kind(server: FakeOpenAIServer) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in server.requests_to("/chat/completions"):
        out.setdefault(_kind(r.body), set()).add(r.body["model"])
    return out


def _model(server: FakeOpenAIServer, name: str) -> dict[str, Any]:
    return {"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k",
                                         "model": name}}  # fmt: skip


def _config(server: FakeOpenAIServer, *, sections: dict[str, Any] | None = None,
            **llm: Any) -> UkrConfig:
    return UkrConfig(
        llm={**_model(server, "default-m"), "retry_initial_s": 0.01, "retry_max_s": 0.05,
             "tiers": {"fast": _model(server, "fast-m"), "strong": _model(server, "strong-m")},
             **llm},
        **(sections or {"graph": {"communities": {"min_community_size": 2}}}),
    )


async def _index(app: App, corpus: Path) -> IndexReport:
    app.embedder = FakeEmbedder()
    return await app.index_pipeline("default").run([corpus])


def test_extraction_goes_to_fast_reports_and_answers_to_strong(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")
    roles = {"extraction": "fast", "summaries": "fast", "reports": "strong", "query": "fast",
             "answer": "strong"}  # fmt: skip

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, dict[str, set[str]], Any]:
        async with build_app(_config(server, roles=roles), tmp_path / "p") as app:
            report = await _index(app, corpus)
            indexed = _models_by_kind(server)
            server.requests.clear()
            out = await app.chain("default").ainvoke(
                "Who worked with Charles Babbage?", strategy="local"
            )
            status = await app.status()
            return report, indexed, (out, _models_by_kind(server), status)

    with FakeOpenAIServer(reply=reply) as server:
        report, indexed, (out, queried, status) = asyncio.run(main(server))
        base = f"@{server.base_url}"
    assert report.graph is not None and report.graph.complete and report.graph.reports > 0
    assert indexed == {"extraction": {"fast-m"}, "gleaning": {"fast-m"},
                       "reports": {"strong-m"}}  # fmt: skip
    assert out.answer_kind == "generative"
    # local's query entities (query processing) on fast, the answer on strong
    assert queried == {"query": {"fast-m"}, "answer": {"strong-m"}}
    served = {m.role: (m.model, m.source) for m in status.models}
    assert served == {
        "extraction": (f"openai:fast-m{base}", "fast"),
        "summaries": (f"openai:fast-m{base}", "fast"),
        "reports": (f"openai:strong-m{base}", "strong"),
        "query": (f"openai:fast-m{base}", "fast"),
        "answer": (f"openai:strong-m{base}", "strong"),
        "judge": (f"openai:default-m{base}", "default"),
    }


def test_a_role_with_a_model_of_its_own_calls_only_that_model(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(main_srv: FakeOpenAIServer, own: FakeOpenAIServer) -> None:
        roles = {"answer": {**_model(own, "own-m"), "input_price_per_1m": 2.0}}
        async with build_app(_config(main_srv, roles=roles), tmp_path / "p") as app:
            await _index(app, corpus)
            await app.chain("default").ainvoke("Who designed the Analytical Engine?",
                                               strategy="local")  # fmt: skip
            assert app.role_models.source("answer") == "inline"
            assert app.model_for("query") is app.chat_model

    with FakeOpenAIServer(reply=reply) as main_srv, FakeOpenAIServer(reply=reply) as own:
        asyncio.run(main(main_srv, own))
    assert _models_by_kind(own) == {"answer": {"own-m"}}
    mine = _models_by_kind(main_srv)
    assert "answer" not in mine and mine["extraction"] == {"default-m"}
    assert mine["reports"] == {"default-m"} and mine["query"] == {"default-m"}


def test_changing_the_report_model_asks_the_reports_again_without_re_extracting(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, IndexReport, IndexReport]:
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _index(app, corpus)
        server.requests.clear()
        async with build_app(_config(server, roles={"reports": "strong"}), tmp_path / "p") as app:
            second = await _index(app, corpus)
        async with build_app(_config(server, roles={"reports": "strong"}), tmp_path / "p") as app:
            third = await _index(app, corpus)
        return first, second, third

    with FakeOpenAIServer(reply=reply) as server:
        first, second, third = asyncio.run(main(server))
        asked = _models_by_kind(server)
    assert first.graph is not None and second.graph is not None and third.graph is not None
    assert not second.graph.skipped_reason and second.graph.records_reused == 4
    # every report written again, by the new model; no extraction call
    assert asked == {"reports": {"strong-m"}}
    assert second.graph.reports == first.graph.reports
    assert len(server.requests_to("/chat/completions")) == first.graph.reports
    assert third.graph.skipped_reason  # and the new inputs are current the next time


def test_one_model_config_builds_one_model_for_every_role(tmp_path: Path) -> None:
    async def main(server: FakeOpenAIServer) -> None:
        config = UkrConfig(llm=_model(server, "only-m"))  # type: ignore[arg-type]
        async with build_app(config, tmp_path / "p") as app:
            for role in ("extraction", "summaries", "reports", "query", "answer", "judge"):
                assert app.model_for(role) is app.chat_model  # type: ignore[arg-type]
            assert app.judge_model() == (app.chat_model, True)
            assert {m.source for m in app.role_status()} == {"default"}

    with FakeOpenAIServer(reply=reply) as server:
        asyncio.run(main(server))


def test_roles_naming_one_tier_share_one_model_and_its_concurrency_bound(tmp_path: Path) -> None:
    async def main(server: FakeOpenAIServer) -> None:
        config = _config(server, roles={"extraction": "fast", "query": "fast",
                                        "judge": "strong"})  # fmt: skip
        async with build_app(config, tmp_path / "p") as app:
            assert app.model_for("extraction") is app.model_for("query")
            assert app.model_for("extraction") is not app.chat_model
            judge, same = app.judge_model()
            assert judge is app.model_for("judge") and not same
            assert judge is not None and judge.model_id.startswith("openai:strong-m@")

    with FakeOpenAIServer(reply=reply) as server:
        asyncio.run(main(server))


def test_an_explicit_evaluation_judge_wins_over_the_judge_role(tmp_path: Path) -> None:
    async def main(server: FakeOpenAIServer) -> None:
        config = _config(server, roles={"judge": "strong"}).model_copy(update={
            "evaluation": UkrConfig(evaluation={"judge": _model(server, "judge-m")}).evaluation,
        })  # type: ignore[arg-type]
        async with build_app(config, tmp_path / "p") as app:
            judge, same = app.judge_model()
            assert judge is not None and judge.model_id.startswith("openai:judge-m@") and not same
            row = next(m for m in app.role_status() if m.role == "judge")
            assert row.source == "evaluation.judge" and row.model == judge.model_id

    with FakeOpenAIServer(reply=reply) as server:
        asyncio.run(main(server))


def test_the_summary_tree_is_written_by_the_summaries_model_and_rewritten_on_a_change(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")
    raptor = {"raptor": {"target_children": 2, "min_nodes_to_cluster": 1,
                         "min_level_shrink": 0.0, "summaries": "llm"}}  # fmt: skip

    def config(server: FakeOpenAIServer, summaries: str) -> UkrConfig:
        return _config(server, roles={"summaries": summaries},
                       sections={"graph": raptor, "indexing": {"methodologies": ["raptor"]}})

    async def main(server: FakeOpenAIServer) -> tuple[set[str], set[str], IndexReport]:
        async with build_app(config(server, "strong"), tmp_path / "p") as app:
            first = await _index(app, corpus)
        assert first.summary_tree is not None and first.summary_tree.summaries_written > 0
        before = {r.body["model"] for r in server.requests_to("/chat/completions")}
        server.requests.clear()
        async with build_app(config(server, "fast"), tmp_path / "p") as app:
            second = await _index(app, corpus)
        after = {r.body["model"] for r in server.requests_to("/chat/completions")}
        return before, after, second

    with FakeOpenAIServer(reply=reply) as server:
        before, after, second = asyncio.run(main(server))
    assert before == {"strong-m"}
    assert after == {"fast-m"}  # the tree's fingerprint holds its model: rewritten by fast
    assert second.summary_tree is not None and second.summary_tree.summaries_written > 0
