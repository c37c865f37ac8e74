"""Grounding and confidence in a real graph build: OpenAI-compatible server on 127.0.0.1, SQLite.

The scripted model states items whose spans are and are not in their text, with low
confidences; the tests check the stored graph and the build report under ``grounding: off``,
``drop``, ``weight`` and ``min_confidence``, and that switching the settings re-shapes the
graph from the stored extraction records without a single model call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.models import Entity, Relationship
from unified_kg_rag.ingestion.graph.report import GraphBuildReport
from unified_kg_rag.ingestion.pipeline import IndexPipeline

pytestmark = pytest.mark.integration

DOCS = {
    "party.txt": "Ada Lovelace met Charles Babbage at a party in London. Babbage showed her "
    "the 'Difference Engine'.",
    "engine.txt": "Charles Babbage designed the Difference Engine.",
}

# (name, confidence, span) and (source, target, type, strength, span), per document marker
ITEMS: dict[str, tuple[list[tuple[str, int, str]], list[tuple[str, str, str, int, str]]]] = {
    "Ada Lovelace met": (
        [("Ada Lovelace", 9, "Ada Lovelace met Charles Babbage"),
         ("Charles Babbage", 8, "charles   BABBAGE"),  # case and whitespace
         ("London", 2, "in London"),  # grounded, low confidence
         ("Difference Engine", 7, "showed her the \u2018Difference Engine\u2019"),  # curly
         ("Alan Turing", 8, "Alan Turing attended the party")],  # not in the text
        [("Ada Lovelace", "Charles Babbage", "MET", 8, "Ada Lovelace met Charles Babbage"),
         ("Charles Babbage", "Difference Engine", "SHOWED", 6, ""),  # both names in the text
         ("Alan Turing", "Ada Lovelace", "MET", 7, ""),  # Turing is not in the text
         ("Ada Lovelace", "London", "VISITED", 4, "Ada visited London every summer")],
    ),
    "Charles Babbage designed": (
        [("Charles Babbage", 9, "Charles Babbage"),
         ("Difference Engine", 9, "Difference Engine")],
        [("Charles Babbage", "Difference Engine", "DESIGNED", 9,
          "Charles Babbage designed the Difference Engine")],
    ),
}  # fmt: skip


def _xml(entities: Sequence[tuple[str, int, str]],
         relationships: Sequence[tuple[str, str, str, int, str]]) -> str:
    ents = "".join(
        f"<entity><name>{n}</name><type>THING</type><description>{n}.</description>"
        f"<confidence>{c}</confidence><span>{s}</span></entity>\n"
        for n, c, s in entities
    )
    rels = "".join(
        f"<relationship><source>{a}</source><target>{b}</target><type>{t}</type>"
        f"<description>{a} {t.lower()} {b}.</description><strength>{w}</strength>"
        f"<span>{s}</span></relationship>\n"
        for a, b, t, w, s in relationships
    )
    return f"<entities>\n{ents}</entities>\n<relationships>\n{rels}</relationships>"


def reply(body: dict[str, Any]) -> str:
    text = "\n".join(m.get("content", "") for m in body["messages"] if m.get("role") == "user")
    if "<current_items>" not in text:
        for marker, (ents, rels) in ITEMS.items():
            if marker in text:
                return _xml(ents, rels)
    return "<entities>None</entities>\n<relationships>None</relationships>"


def _config(server: FakeOpenAIServer, **extraction: Any) -> UkrConfig:
    return UkrConfig(
        llm={"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"}},
        indexing={"methodologies": ["lightrag"]},  # no community reports: no call but extraction
        graph={"extraction": extraction},
    )  # type: ignore[arg-type]


NAMES = ("Ada Lovelace", "Charles Babbage", "London", "Difference Engine", "Alan Turing")


async def _build(
    project: Path, corpus: Path, server: FakeOpenAIServer, **extraction: Any
) -> tuple[GraphBuildReport, dict[str, Entity], dict[tuple[str, str, str], Relationship]]:
    """Index ``corpus`` under ``extraction`` settings; return the report and the stored graph."""
    async with build_app(_config(server, **extraction), project) as app:
        stores = app.index("default")
        report = await IndexPipeline(
            stores, embedder=FakeEmbedder(), chunk_tokenizer=app.chunk_tokenizer,
            parsers=app.parsers, config=app.config, chat_model=app.chat_model,
            budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
        ).run([corpus])
        assert report.graph is not None
        entities = {e.name: e for e in await stores.graph.get_entities(
            [entity_id(n) for n in NAMES])}
        names = {e.id: e.name for e in entities.values()}
        edges = {(names[r.source_id], names[r.target_id], r.type): r
                 for r in await stores.graph.edges_within(list(names))}
        return report.graph, entities, edges


def _corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _chat(server: FakeOpenAIServer) -> int:
    return len(server.requests_to("/chat/completions"))


def test_switching_grounding_reshapes_the_graph_without_model_calls(tmp_path: Path) -> None:
    corpus, project = _corpus(tmp_path), tmp_path / "p"

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        out: dict[str, Any] = {"off": await _build(project, corpus, server, grounding="off")}
        out["calls_off"] = _chat(server)
        out["drop"] = await _build(project, corpus, server, grounding="drop")
        out["calls_drop"] = _chat(server)
        out["back"] = await _build(project, corpus, server, grounding="off")
        out["calls_back"] = _chat(server)
        return out

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))

    report, entities, edges = out["off"]
    assert out["calls_off"] == 4  # one extraction and one gleaning call per document
    assert sorted(entities) == sorted(NAMES) and len(edges) == 5
    assert report.shaping.removed == 0 and report.shaping.weighted == 0
    assert report.stages["ground"].items == 0

    report, entities, edges = out["drop"]
    assert out["calls_drop"] == out["calls_off"]  # re-shaped from the stored records
    assert report.records_reused == 2 and report.units_extracted == 0
    assert not report.skipped_reason  # the digest changed with the setting
    assert "Alan Turing" not in entities
    assert sorted(edges) == [
        ("Ada Lovelace", "Charles Babbage", "MET"),
        ("Charles Babbage", "Difference Engine", "DESIGNED"),
        ("Charles Babbage", "Difference Engine", "SHOWED"),
    ]
    s = report.shaping
    assert (s.ungrounded_entities_dropped, s.ungrounded_relationships_dropped) == (1, 2)
    assert s.endpoint_relationships_dropped == 0 and s.checked_by_name == 2
    assert report.stages["ground"].items == 1 and report.stages["ground"].usage.calls == 0
    assert report.entities == 4 and report.relationships == 3

    report, entities, edges = out["back"]
    assert out["calls_back"] == out["calls_off"]
    assert "Alan Turing" in entities and len(edges) == 5
    assert report.shaping.removed == 0


def test_weight_scales_ungrounded_items(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    with FakeOpenAIServer(reply=reply) as server:
        report, entities, edges = asyncio.run(_build(
            tmp_path / "p", corpus, server, grounding="weight", grounding_weight=0.5
        ))
    assert sorted(entities) == sorted(NAMES)
    assert entities["Alan Turing"].confidence == 4.0  # 8 x 0.5
    assert entities["Ada Lovelace"].confidence == 9.0
    assert edges[("Alan Turing", "Ada Lovelace", "MET")].weight == 3.5  # 7 x 0.5
    assert edges[("Ada Lovelace", "London", "VISITED")].weight == 2.0  # 4 x 0.5
    assert edges[("Ada Lovelace", "Charles Babbage", "MET")].weight == 8.0
    s = report.shaping
    assert (s.ungrounded_entities_weighted, s.ungrounded_relationships_weighted) == (1, 2)
    assert s.removed == 0


def test_min_confidence_and_min_strength(tmp_path: Path) -> None:
    corpus, project = _corpus(tmp_path), tmp_path / "p"

    async def main(server: FakeOpenAIServer) -> list[Any]:
        first = await _build(project, corpus, server, grounding="off", min_confidence=5)
        calls = _chat(server)
        second = await _build(project, corpus, server, grounding="drop", min_confidence=5,
                              min_strength=7)
        return [first, second, calls, _chat(server)]

    with FakeOpenAIServer(reply=reply) as server:
        first, second, calls, calls_after = asyncio.run(main(server))
    report, entities, edges = first
    # London (2) goes, and with it VISITED, which its unit states about London
    assert "London" not in entities and ("Ada Lovelace", "London", "VISITED") not in edges
    assert len(edges) == 4
    assert report.shaping.low_confidence_entities_dropped == 1
    assert report.shaping.endpoint_relationships_dropped == 1

    report, entities, edges = second
    assert calls_after == calls
    assert sorted(entities) == ["Ada Lovelace", "Charles Babbage", "Difference Engine"]
    # SHOWED (6) is under min_strength 7
    assert sorted(edges) == [("Ada Lovelace", "Charles Babbage", "MET"),
                             ("Charles Babbage", "Difference Engine", "DESIGNED")]
    s = report.shaping
    assert (s.ungrounded_entities_dropped, s.ungrounded_relationships_dropped) == (1, 2)
    assert s.low_confidence_entities_dropped == 1 and s.low_strength_relationships_dropped == 1
    # VISITED was dropped as ungrounded before London's threshold could take it
    assert s.endpoint_relationships_dropped == 0


def test_communities_after_a_settings_change_are_a_fresh_builds(tmp_path: Path) -> None:
    """Re-shaping clusters afresh: switching grounding to drop gives the communities a new
    index built with drop has, and switching back gives the first ones again (delta runs
    would keep the earlier partition's members)."""
    from tests.stages.test_graph_build import reply as report_reply

    def answer(body: dict[str, Any]) -> str:
        text = "\n".join(m.get("content", "") for m in body["messages"])
        return report_reply(body) if "<report_context>" in text else reply(body)

    def config(server: FakeOpenAIServer, grounding: str) -> UkrConfig:
        return UkrConfig(
            llm={"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"}},
            indexing={"methodologies": ["graphrag"]},
            graph={"extraction": {"grounding": grounding},
                   "communities": {"min_community_size": 2}},
        )  # type: ignore[arg-type]

    async def partition(project: Path, server: FakeOpenAIServer, grounding: str
                        ) -> set[tuple[int, tuple[str, ...]]]:
        async with build_app(config(server, grounding), project) as app:
            stores = app.index("default")
            report = await IndexPipeline(
                stores, embedder=FakeEmbedder(), chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=app.config, chat_model=app.chat_model,
                budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
            ).run([corpus])
            assert report.graph is not None and not report.graph.error
            names = {e.id: e.name for e in await stores.graph.get_entities(
                [entity_id(n) for n in NAMES])}
            return {(c.level, tuple(sorted(names.get(m, m) for m in c.member_ids)))
                    for c in await stores.graph.get_communities()}

    corpus = _corpus(tmp_path)

    async def main(server: FakeOpenAIServer) -> dict[str, set[tuple[int, tuple[str, ...]]]]:
        project = tmp_path / "p"
        return {
            "off": await partition(project, server, "off"),
            "drop": await partition(project, server, "drop"),
            "back": await partition(project, server, "off"),
            "fresh_drop": await partition(tmp_path / "fresh", server, "drop"),
        }

    with FakeOpenAIServer(reply=answer) as server:
        got = asyncio.run(main(server))
    assert got["off"] and got["drop"]
    # Alan Turing (ungrounded) is a member under off, gone under drop
    assert any("Alan Turing" in members for _, members in got["off"])
    assert not any("Alan Turing" in members for _, members in got["drop"])
    assert got["drop"] == got["fresh_drop"]
    assert got["back"] == got["off"]
