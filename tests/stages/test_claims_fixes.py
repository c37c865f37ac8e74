"""Claim extraction's failure, sweep and prompt rules end to end (real server on 127.0.0.1).

A reply in a near-miss shape is read; one whose claim objects name no readable subject fails
its unit (exit 3, asked again next run); a cut reply is warned about naming the unit and
``graph.claims.max_reply_tokens``; claims over ``max_per_unit`` are counted; with claims off a
deleted document's claim records are swept; the claim prompt lists only the entities a strict
schema keeps; claims on without ``graphrag`` warn at index time.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.stages.test_claims import CLAIM_MARKER, _claim_calls, _claims, _config, _run, _user
from tests.stages.test_claims import reply as claim_reply
from tests.stages.test_graph_build import DOCS, write_docs
from tests.stages.test_message_index import BASE, _graph_reply, _index, _write
from tests.stages.test_schema_build import SOURCES, _build, _project
from tests.stages.test_schema_build import reply as schema_reply
from tests.support.openai_server import FakeOpenAIServer, Scripted
from unified_kg_rag.adapters.registry import EMBEDDERS
from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.ingestion.graph.claims import CLAIMS_NAMESPACE
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.retrieval.chain import RAGChain, RAGInput
from unified_kg_rag.retrieval.graph_view.models import GraphSlice, TraceSource

pytestmark = pytest.mark.integration

KYOTO = "Kyoto University is"
NEAR_MISS = {"Claims": [{" Subject ": {"name": "Hideki Yukawa"}, "claim_type": "education",
                         "claim_status": "wahr", "Start_Date": "Q2 1929",
                         "claim_description": "Yukawa studied at Kyoto University."}]}  # fmt: skip
NO_SUBJECT = {"claims": [{"who": "Hideki Yukawa", "type": "EDUCATION"}]}


def test_near_miss_shapes_are_read_and_subjectless_objects_fail_the_unit_exit_3(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus", {k: v for k, v in DOCS.items() if k != "notes.txt"})
    state = {"kyoto": NO_SUBJECT}

    def scripted(body: dict[str, Any]) -> str:
        text = _user(body)
        if CLAIM_MARKER in text and KYOTO in text:
            return json.dumps(state["kyoto"])
        return claim_reply(body)

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _run(app, [corpus])
            before = len(_claim_calls(server))
            state["kyoto"] = NEAR_MISS
            second = await _run(app, [corpus])
            return {"first": first, "second": second, "claims": await _claims(app),
                    "asked_again": len(_claim_calls(server)) - before}  # fmt: skip

    with FakeOpenAIServer(reply=scripted) as server:
        out = asyncio.run(main(server))
    first: IndexReport = out["first"]
    assert first.graph is not None and first.graph.claims is not None
    assert first.graph.claims.units_failed == 1
    assert not first.graph.succeeded and first.exit_code == 3
    second: IndexReport = out["second"]
    assert second.graph is not None and second.graph.succeeded and second.exit_code == 0
    assert out["asked_again"] == 1  # the failed unit only
    yukawa = out["claims"]["Hideki Yukawa|EDUCATION"]
    assert (yukawa.status, yukawa.start_date, yukawa.description) == (
        "TRUE", "1929-04", "Yukawa studied at Kyoto University.")  # fmt: skip


def test_a_cut_claim_reply_warns_naming_the_unit_and_the_setting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = write_docs(tmp_path / "corpus", {"kyoto.txt": DOCS["kyoto.txt"]})
    many = {"claims": [{"subject": "Hideki Yukawa", "type": f"T{i}"} for i in range(30)]}

    async def main(server: FakeOpenAIServer) -> IndexReport:
        async with build_app(_config(server), tmp_path / "p") as app:
            return await _run(app, [corpus])

    with FakeOpenAIServer(reply=claim_reply) as server:
        server.script(Scripted(reply=json.dumps(many), finish_reason="length",
                               match=CLAIM_MARKER, times=1))  # fmt: skip
        with caplog.at_level(logging.WARNING):
            report = asyncio.run(main(server))
    assert report.graph is not None and (figures := report.graph.claims) is not None
    # one text sent, cut: asked and failed both count it; 30 read, 20 kept, 10 over the cap
    assert (figures.units_asked, figures.units_failed, figures.claims) == (1, 1, 20)
    assert figures.claims_capped == 10
    assert report.exit_code == 3
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("kyoto.txt" in m and "graph.claims.max_reply_tokens" in m for m in warned)
    assert any("graph.claims.max_per_unit" in m for m in warned)


def test_claims_off_deleting_a_document_sweeps_its_claim_record(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", {k: v for k, v in DOCS.items() if k != "notes.txt"})

    async def main(server: FakeOpenAIServer) -> tuple[int, int, int, int]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _run(app, [corpus])
            records = app.index("default").records
            with_claims = await records.count(CLAIMS_NAMESPACE)
        async with build_app(_config(server, claims=False), tmp_path / "p") as app:
            (corpus / "kyoto.txt").unlink()
            await _run(app, [corpus])
            after_delete = await app.index("default").records.count(CLAIMS_NAMESPACE)
        calls = len(_claim_calls(server))
        async with build_app(_config(server), tmp_path / "p") as app:
            await _run(app, [corpus])  # on again: the kept records answer
        return with_claims, after_delete, calls, len(_claim_calls(server))

    with FakeOpenAIServer(reply=claim_reply) as server:
        with_claims, after_delete, calls, calls_after = asyncio.run(main(server))
    assert (with_claims, after_delete) == (3, 2)
    assert calls_after == calls  # the records of the remaining text were kept


def test_the_claim_prompt_lists_only_the_entities_a_strict_schema_keeps(tmp_path: Path) -> None:
    project, corpus = _project(tmp_path)

    def scripted(body: dict[str, Any]) -> str:
        return '{"claims": []}' if CLAIM_MARKER in _user(body) else schema_reply(body)

    async def main(server: FakeOpenAIServer) -> int | None:
        config = UkrConfig.model_validate({
            "llm": {"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"}},
            "indexing": {"methodologies": ["graphrag"]},
            "graph": {"extraction": {"schema_sources": SOURCES, "schema_mode": "strict"},
                      "claims": {"enabled": True}},
        })  # fmt: skip
        async with build_app(config, project) as app:
            await _build(app, corpus)
            estimate = await IndexPipeline(
                app.index("default"), embedder=app.embedder, chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=app.config, chat_model=app.chat_model,
                budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
                extraction_schema=app.extraction_schema(),
            ).estimate([corpus])  # fmt: skip
            return estimate.claim_calls

    with FakeOpenAIServer(reply=scripted) as server:
        claim_calls = asyncio.run(main(server))
        prompts = {p.split(CLAIM_MARKER, 1)[1] for p in _claim_calls(server)}
    assert claim_calls == 0  # the estimate keys claims by the entities the build asked about
    ada = next(p for p in prompts if "Ada Lovelace" in p)
    # ORGANISATION and CITY are off-schema: strict drops them before resolution
    assert "Analytical Society" not in ada and "London" not in ada


@pytest.mark.parametrize(
    ("methodologies", "expected"),
    [(["lazy"], "builds no LLM graph"), (["lightrag"], "only the simple strategy")],
)
def test_claims_without_graphrag_warn_at_index_time(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, methodologies: list[str], expected: str
) -> None:
    corpus = write_docs(tmp_path / "corpus", {"kyoto.txt": DOCS["kyoto.txt"]})

    async def main(server: FakeOpenAIServer) -> None:
        config = _config(server).model_copy(update={"indexing": UkrConfig().indexing.model_copy(
            update={"methodologies": methodologies})})  # fmt: skip
        async with build_app(config, tmp_path / "p") as app:
            await IndexPipeline(
                app.index("default"), embedder=app.embedder, chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=app.config, chat_model=app.chat_model,
                budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
            ).run([corpus])  # fmt: skip

    with FakeOpenAIServer(reply=claim_reply) as server, caplog.at_level(logging.WARNING):
        asyncio.run(main(server))
    warned = [r.getMessage() for r in caplog.records if "graph.claims.enabled" in r.getMessage()]
    assert len(warned) == 1 and expected in warned[0]


def test_a_graph_trace_draws_a_claim_at_its_subject_and_object(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", {"kyoto.txt": DOCS["kyoto.txt"]})

    async def main(server: FakeOpenAIServer) -> GraphSlice:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _run(app, [corpus])
            claim = (await _claims(app))["Hideki Yukawa|EDUCATION"]
            return await app.graph_reader("default").trace(
                [TraceSource(n=1, kind="claim", id=claim.id),
                 TraceSource(n=2, kind="claim", id="no-such-claim")])

    with FakeOpenAIServer(reply=claim_reply) as server:
        sliced = asyncio.run(main(server))
    traced = {n.key for n in sliced.nodes if n.attributes.sources == [1]}
    assert traced == {entity_id("Hideki Yukawa"), entity_id("Kyoto University")}
    assert sliced.attributes.notes is not None
    assert any("no-such-claim" in note for note in sliced.attributes.notes)
    assert not any("names no graph node" in note for note in sliced.attributes.notes)


def test_claim_sources_over_message_archives_name_their_messages(tmp_path: Path) -> None:
    embedder = EMBEDDERS.get("local")(UkrConfig().embeddings)
    archive = _write(tmp_path / "a.jsonl", BASE)
    dana = {"claims": [{"subject": "Dana", "type": "birthday", "status": "TRUE",
                        "description": "Dana turns thirty today, her birthday.",
                        "source_text": "Happy birthday to Dana"}]}  # fmt: skip

    def scripted(body: dict[str, Any]) -> str:
        text = _user(body)
        if CLAIM_MARKER in text:
            return json.dumps(dana if "Happy birthday to Dana" in text else {"claims": []})
        return _graph_reply(body)

    with FakeOpenAIServer(reply=scripted) as server:
        config = UkrConfig.model_validate({
            "indexing": {"methodologies": ["lightrag", "graphrag"]},
            "graph": {"communities": {"min_community_size": 2}, "claims": {"enabled": True}},
            "llm": {"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"}},
        })  # fmt: skip

        async def main() -> RAGOutput:
            async with build_app(config, tmp_path / "p") as app:
                await _index(app, embedder, [archive])
                chain = RAGChain(app.index(), embedder=embedder, chat_model=None,
                                 budget_tokenizer=app.budget_tokenizer, config=config.query)
                return await chain.ainvoke(RAGInput(question="Who is Dana?", strategy="local"))

        out = asyncio.run(main())
    claim = next(s for s in out.sources if s.kind == "claim")
    assert [m.guid for m in claim.messages] == ["m1"]
