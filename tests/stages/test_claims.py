"""Claim (covariate) extraction end to end: a real OpenAI-compatible server on 127.0.0.1.

The scripted server answers extraction, gleaning, report AND claim prompts through the real
wire format; the claim replies carry odd dates, statuses the model invented and a subject that
is not one of the unit's entities. The graph build stores the resolved claims in the ``claims``
collection (SQLite here; PostgreSQL in `test_claims_are_stored_on_postgres`), a second run
makes no claim call, deleting a document removes its claims, the community report prompt
holds the claims table and `local` returns a claims section citing the right text unit.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import DOCS, write_docs
from tests.stages.test_graph_build import reply as graph_reply
from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.postgres import fresh_catalog
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.graph.claims import Claim, claim_from_record
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.retrieval.chain import RAGChain, RetrievalOutput
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.integration

CLAIM_MARKER = "Entities of this text:"

CLAIMS: dict[str, list[dict[str, str]]] = {
    "Ada Lovelace worked": [
        {"subject": "Ada Lovelace", "object": "Charles Babbage", "type": "collaboration",
         "status": "Confirmed", "start_date": "1843", "end_date": "early 1840s",
         "description": "Ada Lovelace worked with Charles Babbage.",
         "source_text": "Ada Lovelace worked with Charles Babbage"},
        {"subject": "Isaac Newton", "object": "", "type": "INVENTION", "status": "TRUE",
         "start_date": "", "end_date": "", "description": "Newton is not in this text.",
         "source_text": ""},
        {"subject": "charles babbage", "object": "Royal Society", "type": "MEMBERSHIP",
         "status": "rumoured", "start_date": "2023-13-45", "end_date": "unknown",
         "description": "Babbage is said to belong to the Royal Society.",
         "source_text": "Charles Babbage"},
    ],
    "Kyoto University is": [
        {"subject": "Hideki Yukawa", "object": "Kyoto University", "type": "EDUCATION",
         "status": "TRUE", "start_date": "March 1929", "end_date": "1932年3月",
         "description": "Hideki Yukawa studied at Kyoto University.",
         "source_text": "Hideki Yukawa studied at Kyoto University"},
    ],
}  # fmt: skip


def _user(body: dict[str, Any]) -> str:
    return "\n".join(m.get("content", "") for m in body["messages"] if m.get("role") == "user")


def reply(body: dict[str, Any]) -> str:
    """Extraction, gleaning and reports as `test_graph_build`; claims per document."""
    text = _user(body)
    if CLAIM_MARKER not in text:
        return graph_reply(body)
    for marker, claims in CLAIMS.items():
        if marker in text:
            return "```json\n" + json.dumps({"claims": claims}) + "\n```"
    return '{"claims": []}'


def _config(server: FakeOpenAIServer, *, claims: bool = True, **stores: Any) -> UkrConfig:
    return UkrConfig.model_validate({
        "llm": {"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"},
                "retry_initial_s": 0.01, "retry_max_s": 0.05},
        "graph": {"communities": {"min_community_size": 2}, "claims": {"enabled": claims}},
        **({"stores": stores} if stores else {}),
    })  # fmt: skip


async def _run(app: App, paths: list[Path]) -> IndexReport:
    return await IndexPipeline(
        app.index("default"), embedder=FakeEmbedder(), chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer, project_dir=app.project_dir,
    ).run(paths)  # fmt: skip


async def _claims(app: App) -> dict[str, Claim]:
    search = app.index("default").search
    records = await search.get(Collection.CLAIMS, await search.ids(Collection.CLAIMS))
    claims = [claim_from_record(r) for r in records]
    return {f"{c.subject}|{c.type}": c for c in claims if c is not None}


def _claim_calls(server: FakeOpenAIServer) -> list[str]:
    texts = [_user(r.body) for r in server.requests_to("/chat/completions")]
    return [t for t in texts if CLAIM_MARKER in t]


async def _unit_of(app: App, path: str) -> str:
    records = await app.index("default").registry.list_records()
    return next(r.text_unit_ids[0] for r in records if r.path == path)


def test_claims_are_resolved_stored_reused_and_removed_with_their_document(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _run(app, [corpus])
            out: dict[str, Any] = {"first": first, "claims": await _claims(app)}
            out["calls_first"] = len(_claim_calls(server))
            out["ada_unit"] = await _unit_of(app, "ada.txt")
            out["kyoto_unit"] = await _unit_of(app, "kyoto.txt")
            # an added document: only its unit is asked for claims
            (corpus / "more.txt").write_text(
                "Kyoto University is old. Hideki Yukawa taught there.", encoding="utf-8")
            out["second"] = await _run(app, [corpus])
            out["calls_second"] = len(_claim_calls(server)) - out["calls_first"]
            (corpus / "kyoto.txt").unlink()
            (corpus / "more.txt").unlink()
            out["third"] = await _run(app, [corpus])
            out["after_delete"] = await _claims(app)
            out["calls_total"] = len(_claim_calls(server))
            return out

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    first: IndexReport = out["first"]
    assert first.graph is not None and first.graph.complete and first.exit_code == 0
    figures = first.graph.claims
    assert figures is not None
    # every unit has entities: 4 claim calls; Newton is not one of the Ada unit's entities
    assert (figures.units_asked, figures.records_reused, figures.units_failed) == (4, 0, 0)
    assert figures.dropped_subject == 1 and figures.claims == 3
    assert out["calls_first"] == 4
    claims = out["claims"]
    assert sorted(claims) == ["Ada Lovelace|COLLABORATION", "Charles Babbage|MEMBERSHIP",
                              "Hideki Yukawa|EDUCATION"]  # fmt: skip
    ada = claims["Ada Lovelace|COLLABORATION"]
    assert ada.subject_id == entity_id("Ada Lovelace")
    assert ada.object_id == entity_id("Charles Babbage") and ada.object == "Charles Babbage"
    assert ada.status == "TRUE" and ada.start_date == "1843" and ada.end_date is None
    assert ada.text_unit_ids == (out["ada_unit"],)
    babbage = claims["Charles Babbage|MEMBERSHIP"]
    # the subject resolves by entity key to the graph's display name; the object is not one
    # of the unit's entities: kept as the literal name, without an id
    assert babbage.subject_id == entity_id("Charles Babbage")
    assert babbage.object == "Royal Society" and babbage.object_id == ""
    assert babbage.status == "SUSPECTED"
    assert babbage.start_date is None and babbage.end_date is None
    yukawa = claims["Hideki Yukawa|EDUCATION"]
    assert (yukawa.start_date, yukawa.end_date) == ("1929-03", "1932-03")
    assert yukawa.object_id == entity_id("Kyoto University")
    assert yukawa.text_unit_ids == (out["kyoto_unit"],)
    # the added document: one claim call, the four stored records reused
    second: IndexReport = out["second"]
    assert second.graph is not None and second.graph.claims is not None
    assert out["calls_second"] == 1
    assert (second.graph.claims.units_asked, second.graph.claims.records_reused) == (1, 4)
    # deleting kyoto.txt (and more.txt) removes Yukawa's claim and sweeps their records
    third: IndexReport = out["third"]
    assert third.graph is not None and third.graph.claims is not None
    assert sorted(out["after_delete"]) == ["Ada Lovelace|COLLABORATION",
                                           "Charles Babbage|MEMBERSHIP"]  # fmt: skip
    assert third.graph.claims.records_swept == 2
    assert out["calls_total"] == out["calls_first"] + 1  # deleting asks nothing


def test_report_prompt_holds_the_claims_table_and_local_cites_the_claims_unit(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[RetrievalOutput, RetrievalOutput, str]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _run(app, [corpus])
            chain = RAGChain(app.index("default"), embedder=FakeEmbedder(), chat_model=None,
                             budget_tokenizer=app.budget_tokenizer, config=app.config.query)
            out = await chain.retrieve("Where did Hideki Yukawa study?", strategy="local")
            swept = await chain.retrieve("Royal Society membership", strategy="simple")
            return out, swept, await _unit_of(app, "ada.txt")

    with FakeOpenAIServer(reply=reply) as server:
        out, swept, ada_unit = asyncio.run(main(server))
        prompts = [_user(r.body) for r in server.requests_to("/chat/completions")]
    reports = [p for p in prompts if "<report_context>" in p]
    with_claims = [p for p in reports if "-----Claims-----" in p]
    assert with_claims, "no report prompt holds a claims table"
    assert any("Hideki Yukawa,Kyoto University,EDUCATION,TRUE,1929-03 to 1932-03," in p
               for p in with_claims)  # fmt: skip
    assert any("Ada Lovelace,Charles Babbage,COLLABORATION,TRUE,1843," in p for p in with_claims)
    claims = [s for s in out.sources if s.kind == "claim"]
    assert [c.title for c in claims] == [
        "Hideki Yukawa — EDUCATION — Kyoto University [TRUE, 1929-03 to 1932-03]"
    ]
    kyoto_doc = next(s.document_id for s in out.sources if s.kind == "text_unit"
                     and s.path == "kyoto.txt")  # fmt: skip
    assert claims[0].text_unit_ids == tuple(
        s.id for s in out.sources if s.kind == "text_unit" and s.path == "kyoto.txt")
    assert claims[0].document_ids == (kyoto_doc,)
    assert claims[0].metadata["status"] == "TRUE"
    kinds = [s.kind for s in out.sources]
    # claims sit after the relationships and before the passages (GraphRAG's covariates)
    assert kinds.index("claim") > max(i for i, k in enumerate(kinds) if k == "relationship")
    assert kinds.index("claim") < kinds.index("text_unit")
    # `simple` sweeps the claims collection too, with the claim's lineage
    assert "claims" in swept.metadata["simple_swept"]
    top = next(s for s in swept.sources if s.kind == "claim")
    assert top.title == "Charles Babbage — MEMBERSHIP — Royal Society [SUSPECTED]"
    assert top.text_unit_ids == (ada_unit,)


def test_claims_off_sends_no_claim_prompt_and_no_claims_table(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, int, RetrievalOutput]:
        async with build_app(_config(server, claims=False), tmp_path / "p") as app:
            report = await _run(app, [corpus])
            chain = RAGChain(app.index("default"), embedder=FakeEmbedder(), chat_model=None,
                             budget_tokenizer=app.budget_tokenizer, config=app.config.query)
            out = await chain.retrieve("Where did Hideki Yukawa study?", strategy="local")
            return report, await app.index("default").search.count(Collection.CLAIMS), out

    with FakeOpenAIServer(reply=reply) as server:
        report, stored, out = asyncio.run(main(server))
        prompts = [_user(r.body) for r in server.requests_to("/chat/completions")]
    assert report.graph is not None and report.graph.claims is None
    assert "claims" not in report.graph.stages
    assert "claims" not in report.graph.model_dump(mode="json")
    assert not [p for p in prompts if CLAIM_MARKER in p]
    assert not [p for p in prompts if "-----Claims-----" in p]
    assert stored == 0 and not [s for s in out.sources if s.kind == "claim"]
    assert len(prompts) == 4 * 2 + report.graph.reports  # extraction + gleaning + reports


def test_a_units_own_unreadable_claim_reply_fails_that_unit_only(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus", {k: v for k, v in DOCS.items() if k != "notes.txt"})
    state: dict[str, Any] = {"bad": "Kyoto University is"}

    def scripted(body: dict[str, Any]) -> str:
        text = _user(body)
        if CLAIM_MARKER in text and state["bad"] and state["bad"] in text:
            return "I cannot list claims for this text."
        return reply(body)

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, IndexReport, int]:
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _run(app, [corpus])
            before = len(_claim_calls(server))
            state["bad"] = None
            second = await _run(app, [corpus])
            return first, second, len(_claim_calls(server)) - before

    with FakeOpenAIServer(reply=scripted) as server:
        first, second, asked_again = asyncio.run(main(server))
    assert first.graph is not None and first.graph.claims is not None
    assert first.graph.claims.units_failed == 1 and first.graph.claims.claims == 2
    assert not first.graph.complete  # asked again next run
    assert second.graph is not None and second.graph.claims is not None
    assert second.graph.complete and second.graph.claims.claims == 3
    # the retried unit is the only claim call (the response cache never kept the bad reply)
    assert asked_again == 1 and second.graph.claims.records_reused == 2


def test_a_unit_whose_claims_keep_failing_is_quarantined_for_claims(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", {"kyoto.txt": DOCS["kyoto.txt"],
                                              "ada.txt": DOCS["ada.txt"]})  # fmt: skip

    def scripted(body: dict[str, Any]) -> str:
        text = _user(body)
        if CLAIM_MARKER in text and "Kyoto University is" in text:
            return "I cannot list claims for this text."
        return reply(body)

    async def main(server: FakeOpenAIServer) -> tuple[list[IndexReport], list[int]]:
        config = _config(server).model_copy(update={"indexing": UkrConfig().indexing.model_copy(
            update={"quarantine_after": 2})})  # fmt: skip
        reports, calls = [], []
        async with build_app(config, tmp_path / "p") as app:
            for _ in range(3):
                before = len(_claim_calls(server))
                reports.append(await _run(app, [corpus]))
                calls.append(len(_claim_calls(server)) - before)
        return reports, calls

    with FakeOpenAIServer(reply=scripted) as server:
        reports, calls = asyncio.run(main(server))
    figures = [r.graph.claims for r in reports if r.graph is not None]
    assert [f.units_failed for f in figures if f] == [1, 1, 0]
    assert [f.units_quarantined for f in figures if f] == [0, 0, 1]
    # run 1 asks both units, run 2 only the failed one, run 3 none (quarantined)
    assert calls == [2, 1, 0]
    assert [r.graph.complete for r in reports if r.graph] == [False, False, True]
    assert figures[2] is not None and figures[2].claims == 2  # Ada's claims stay


def test_a_server_down_during_claims_stops_the_build_and_keeps_the_records(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")
    state = {"down": False}

    class DownForClaims(FakeOpenAIServer):
        """HTTP 503 for claim prompts and the known-good probe while ``state["down"]``."""

        def _next(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Scripted:
            entry = super()._next(path, body, headers)
            text = _user(body)
            if state["down"] and (CLAIM_MARKER in text or "single word OK" in text):
                return Scripted(status=503, message="down")
            return entry

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, IndexReport]:
        async with build_app(_config(server), tmp_path / "p") as app:
            state["down"] = True
            first = await _run(app, [corpus])
            state["down"] = False
            return first, await _run(app, [corpus])

    with DownForClaims(reply=reply) as server:
        first, second = asyncio.run(main(server))
    assert first.graph is not None and "503" in first.graph.error
    assert first.exit_code != 0 and first.graph.claims is None
    assert second.graph is not None and second.graph.complete
    # extraction records of the stopped run were kept: the second run extracts nothing
    assert second.graph.units_extracted == 0 and second.graph.claims is not None
    assert second.graph.claims.claims == 3


@pytest.mark.postgres
def test_claims_are_stored_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")
    pg = {"kind": "postgres",
          "postgres": {"url": postgres_url, "schema_name": fresh_catalog(), "pool_min_size": 0}}

    async def main(
        server: FakeOpenAIServer,
    ) -> tuple[dict[str, Claim], RetrievalOutput, dict[str, Claim]]:
        async with build_app(_config(server, **pg), tmp_path / "p") as app:
            await _run(app, [corpus])
            stored = await _claims(app)
            chain = RAGChain(app.index("default"), embedder=FakeEmbedder(), chat_model=None,
                             budget_tokenizer=app.budget_tokenizer, config=app.config.query)
            out = await chain.retrieve("Where did Hideki Yukawa study?", strategy="local")
            (corpus / "kyoto.txt").unlink()
            await _run(app, [corpus])
            return stored, out, await _claims(app)

    with FakeOpenAIServer(reply=reply) as server:
        stored, out, after = asyncio.run(main(server))
    # the subject filter of `local`'s claim search works on PostgreSQL too
    assert [s.id for s in out.sources if s.kind == "claim"] == [
        stored["Hideki Yukawa|EDUCATION"].id]
    assert sorted(stored) == ["Ada Lovelace|COLLABORATION", "Charles Babbage|MEMBERSHIP",
                              "Hideki Yukawa|EDUCATION"]  # fmt: skip
    assert stored["Hideki Yukawa|EDUCATION"].start_date == "1929-03"
    assert stored["Charles Babbage|MEMBERSHIP"].object_id == ""
    assert sorted(after) == ["Ada Lovelace|COLLABORATION", "Charles Babbage|MEMBERSHIP"]


def test_a_claim_prompt_file_is_used_and_one_without_its_placeholders_refused(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus", {"kyoto.txt": DOCS["kyoto.txt"]})
    project = tmp_path / "p"
    project.mkdir()
    (project / "bad.md").write_text("List the claims of {text}.", encoding="utf-8")
    (project / "good.md").write_text(
        "Custom claim rules: {claim_description}\n=== user ===\n<text>\n{text}\n</text>\n"
        f"{CLAIM_MARKER}\n{{entity_names}}\n", encoding="utf-8")

    def configured(server: FakeOpenAIServer, prompt: str) -> UkrConfig:
        config = _config(server)
        graph = config.graph.model_copy(update={"claims": config.graph.claims.model_copy(
            update={"prompt_file": prompt})})  # fmt: skip
        return config.model_copy(update={"graph": graph})

    async def main(server: FakeOpenAIServer) -> tuple[str, IndexReport]:
        with pytest.raises(ConfigurationError) as refused:  # at start, or at the first build
            async with build_app(configured(server, "bad.md"), project) as app:
                await _run(app, [corpus])
        async with build_app(configured(server, "good.md"), project) as app:
            return str(refused.value), await _run(app, [corpus])

    with FakeOpenAIServer(reply=reply) as server:
        message, report = asyncio.run(main(server))
        bodies = [r.body for r in server.requests_to("/chat/completions")]
    assert "bad.md" in message and "{entity_names}" in message
    claim_calls = [b for b in bodies if CLAIM_MARKER in _user(b)]
    assert len(claim_calls) == 1
    assert claim_calls[0]["messages"][0]["content"].startswith("Custom claim rules: Any claims")
    assert report.graph is not None and report.graph.claims is not None
    assert report.graph.claims.claims == 1
