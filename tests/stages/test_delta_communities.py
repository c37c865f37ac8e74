"""Communities on delta runs (issue #7, `ingestion.graph.delta`).

A real OpenAI-compatible server on 127.0.0.1 answers with `tests.support.word_graph`'s
replies (every capitalized word an entity, consecutive ones related); real SQLite stores; the
hashing test embedder. The report prompts that reach the server are counted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.support.openai_server import FakeOpenAIServer
from tests.support.word_graph import word_graph_reply
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.ingestion.pipeline import IndexPipeline

pytestmark = pytest.mark.integration

BASE = {"a.txt": "Ada sings, Babbage reads.", "b.txt": "Kyoto rains, Yukawa sings."}


def _config(server: FakeOpenAIServer) -> UkrConfig:
    return UkrConfig(
        llm={"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"},
             "retry_initial_s": 0.01, "retry_max_s": 0.05},
        graph={"communities": {"min_community_size": 2}},
        indexing={"max_delete_share": 1.0},
    )  # type: ignore[arg-type]


def _pipeline(app: App, embedder: FakeEmbedder, *, force: bool = False) -> IndexPipeline:
    return IndexPipeline(
        app.index("default"), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir, force_rebuild=force,
    )  # fmt: skip


def _report_prompts(server: FakeOpenAIServer) -> int:
    return sum(
        1 for r in server.requests_to("/chat/completions")
        if any("<report_context>" in str(m.get("content", "")) for m in r.body["messages"])
    )


async def _state(app: App) -> dict[str, Any]:
    """Communities as (id, member names), stored report ids (graph store and search)."""
    stores = app.index("default")
    communities = await stores.graph.get_communities()
    ids = [c.id for c in communities]
    names = {
        e.id: e.name
        for e in await stores.graph.get_entities(sorted({m for c in communities
                                                          for m in c.member_ids}))
    }
    return {
        "communities": {c.id: tuple(sorted(names[m] for m in c.member_ids)) for c in communities},
        "reports": sorted(r.community_id for r in await stores.graph.get_reports(ids)),
        "searched": sorted(await stores.search.ids(Collection.REPORTS)),
    }


def test_a_delta_run_asks_only_new_reports_and_a_deletion_drops_its_community(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in BASE.items():
        (corpus / name).write_text(text, encoding="utf-8")
    embedder = FakeEmbedder()

    async def scenario(server: FakeOpenAIServer) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _pipeline(app, embedder).run([corpus])
            assert first.exit_code == 0, first
            out["base"], out["base_prompts"] = await _state(app), _report_prompts(server)
            (corpus / "c.txt").write_text("Paris rains, Tokyo rains.", encoding="utf-8")
            added = await _pipeline(app, embedder).run([corpus])
            assert added.exit_code == 0, added
            out["added"] = await _state(app)
            out["added_prompts"] = _report_prompts(server) - out["base_prompts"]
            (corpus / "b.txt").unlink()
            removed = await _pipeline(app, embedder).run([corpus], confirm_deletions=True)
            assert removed.exit_code == 0, removed
            out["removed"] = await _state(app)
            out["removed_prompts"] = (_report_prompts(server) - out["base_prompts"]
                                      - out["added_prompts"])
        return out

    with FakeOpenAIServer(reply=word_graph_reply) as server:
        out = asyncio.run(scenario(server))

    base = out["base"]["communities"]
    assert sorted(base.values()) == [("Ada", "Babbage"), ("Kyoto", "Yukawa")]
    assert out["base_prompts"] == 2
    # adding a document: the base communities keep their ids, one community is appended,
    # and only its report is asked
    added = out["added"]["communities"]
    assert {k: v for k, v in added.items() if k in base} == base
    assert sorted(v for k, v in added.items() if k not in base) == [("Paris", "Tokyo")]
    assert out["added_prompts"] == 1
    assert out["added"]["reports"] == out["added"]["searched"] == sorted(added)
    # deleting the document whose entities formed a whole community removes it and its report
    removed = out["removed"]["communities"]
    gone = next(k for k, v in base.items() if v == ("Kyoto", "Yukawa"))
    assert removed == {k: v for k, v in added.items() if k != gone}
    assert out["removed"]["reports"] == out["removed"]["searched"] == sorted(removed)
    assert out["removed_prompts"] == 0


def test_a_community_that_lost_a_member_keeps_its_id_and_gets_its_report_again(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Ada sings, Babbage reads, London rains.", encoding="utf-8")
    embedder = FakeEmbedder()

    async def scenario(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            assert (await _pipeline(app, embedder).run([corpus])).exit_code == 0
            before, asked = await _state(app), _report_prompts(server)
            (corpus / "a.txt").write_text("Ada sings, Babbage reads.", encoding="utf-8")
            assert (await _pipeline(app, embedder).run([corpus])).exit_code == 0
            after = await _state(app)
            return {"before": before, "after": after,
                    "asked": _report_prompts(server) - asked}

    with FakeOpenAIServer(reply=word_graph_reply) as server:
        out = asyncio.run(scenario(server))

    before, after = out["before"], out["after"]
    assert list(before["communities"].values()) == [("Ada", "Babbage", "London")]
    (cid,) = before["communities"]
    # London is gone: the community keeps its id, loses the member, and is reported again
    assert after["communities"] == {cid: ("Ada", "Babbage")}
    assert out["asked"] == 1
    assert after["reports"] == after["searched"] == [cid]


def test_a_failed_new_report_leaves_no_outdated_report_behind(tmp_path: Path) -> None:
    """A changed community whose new report fails keeps no report written from the old text."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Ada sings, Babbage reads, London rains.", encoding="utf-8")
    embedder = FakeEmbedder()
    failing = {"on": False}

    def reply(body: dict[str, Any]) -> str:
        prompt = str(body["messages"][-1]["content"])
        if failing["on"] and "<report_context>" in prompt:
            return "not a report"
        return word_graph_reply(body)

    async def scenario(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            assert (await _pipeline(app, embedder).run([corpus])).exit_code == 0
            before = await _state(app)
            failing["on"] = True
            (corpus / "a.txt").write_text("Ada sings, Babbage reads.", encoding="utf-8")
            second = await _pipeline(app, embedder).run([corpus])
            return {"before": before, "after": await _state(app), "exit": second.exit_code}

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(scenario(server))

    (cid,) = out["before"]["communities"]
    assert out["before"]["reports"] == [cid]
    assert out["exit"] == 3  # a report failed: the run says so
    assert out["after"]["communities"] == {cid: ("Ada", "Babbage")}
    # the report written when London was a member is gone from both stores
    assert out["after"]["reports"] == [] and out["after"]["searched"] == []
