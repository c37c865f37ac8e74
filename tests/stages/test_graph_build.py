"""The LLM graph build end to end: a real OpenAI-compatible HTTP server on 127.0.0.1, real SQLite.

The server answers through the real wire format with replies written for each document, so
these tests see what a user's run does: extraction and gleaning per text unit, resolution,
communities, reports, writes, and the failure cases of issue #4 (HTTP 429/500/400, timeouts, a
server that is down, a run stopped halfway).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.support.openai_server import FakeOpenAIServer, Scripted
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.domain.models import Collection, SearchMode
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport

pytestmark = pytest.mark.integration

DOCS = {
    "ada.txt": "Ada Lovelace worked with Charles Babbage on the Analytical Engine in London.",
    "engine.txt": "Charles Babbage designed the Analytical Engine. The engine was never built.",
    "notes.txt": "Ada Lovelace wrote the first published program for the Analytical Engine.",
    "kyoto.txt": "Kyoto University is in Kyoto. Hideki Yukawa studied at Kyoto University.",
}

ITEMS: dict[str, tuple[list[tuple[str, str, str]], list[tuple[str, str, str, int]]]] = {
    "Ada Lovelace worked": (
        [("Ada Lovelace", "PERSON", "A mathematician."),
         ("Charles Babbage ", "PERSON", "An inventor."),
         ("Analytical Engine", "PRODUCT", "A mechanical computer."),
         ("London", "LOCATION", "A city.")],
        [("Ada Lovelace", "Charles Babbage", "WORKED_WITH", 8),
         ("Charles Babbage", "Analytical Engine", "DESIGNED", 6),
         ("Analytical Engine", "London", "LOCATED_IN", 3)],
    ),
    "Charles Babbage designed": (
        [("Charles Babbage.", "PERSON", "Designed the Analytical Engine."),
         ("Analytical Engine", "PRODUCT", "Never built.")],
        [("Charles Babbage", "Analytical Engine", "DESIGNED", 9)],
    ),
    "Ada Lovelace wrote": (
        [("Ada Lovelace", "PERSON", "Wrote the first published program."),
         ("Analytical Engine", "PRODUCT", "Target of the first program.")],
        [("Ada Lovelace", "Analytical Engine", "PROGRAMMED", 7)],
    ),
    "Kyoto University is": (
        [("Kyoto University", "ORGANIZATION", "A university."),
         ("Kyoto", "LOCATION", "A city in Japan."),
         ("Hideki Yukawa", "PERSON", "A physicist.")],
        [("Kyoto University", "Kyoto", "LOCATED_IN", 9),
         ("Hideki Yukawa", "Kyoto University", "STUDIED_AT", 8)],
    ),
}


def _xml(entities: Sequence[tuple[str, str, str]],
         relationships: Sequence[tuple[str, str, str, int]]) -> str:
    ents = "".join(
        f"<entity><name>{n}</name><type>{t}</type><description>{d}</description>"
        f"<confidence>8</confidence><span>{n.strip(' .')}</span></entity>\n"
        for n, t, d in entities
    )
    rels = "".join(
        f"<relationship><source>{s}</source><target>{o}</target><type>{t}</type>"
        f"<description>{s} {t.lower()} {o}.</description><strength>{w}</strength>"
        f"<span></span></relationship>\n"
        for s, o, t, w in relationships
    )
    return f"<entities>\n{ents or 'None'}</entities>\n<relationships>\n{rels or 'None'}</relationships>"


def _user(body: dict[str, Any]) -> str:
    return "\n".join(m.get("content", "") for m in body["messages"] if m.get("role") == "user")


def reply(body: dict[str, Any]) -> str:
    """Answer each prompt kind the way a well-behaved model would."""
    text = _user(body)
    if "<report_context>" in text:
        names = re.findall(r"^\d+,([^,]+),", text, flags=re.M)
        title = names[0] if names else "Community"
        return json.dumps({
            "title": f"{title} and friends",
            "summary": "About " + ", ".join(names[:3]),
            "rating": 6.5,
            "rating_explanation": "Moderately important.",
            "findings": [{"summary": "Key entity", "explanation": f"{title} is central."}],
        })
    if "<descriptions>" in text:
        return "A merged summary."
    if "<current_items>" in text:
        return "<entities>None</entities>\n<relationships>None</relationships>"
    for marker, (ents, rels) in ITEMS.items():
        if marker in text:
            return _xml(ents, rels)
    return "<entities>None</entities>\n<relationships>None</relationships>"


def write_docs(folder: Path, docs: dict[str, str] = DOCS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _config(server: FakeOpenAIServer, **llm: Any) -> UkrConfig:
    return UkrConfig(
        llm={"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k",
                                           **llm.pop("openai", {})},
             "retry_initial_s": 0.01, "retry_max_s": 0.05, **llm},
        graph={"communities": {"min_community_size": 2}},
    )  # type: ignore[arg-type]


async def _run(app: App, paths: Sequence[Path], *, force: bool = False) -> IndexReport:
    pipeline = IndexPipeline(
        app.index("default"),
        embedder=FakeEmbedder(),
        chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers,
        config=app.config,
        chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
        project_dir=app.project_dir,
        force_rebuild=force,
    )
    return await pipeline.run(paths)


def _chat_calls(server: FakeOpenAIServer) -> list[str]:
    return [_user(r.body) for r in server.requests_to("/chat/completions")]


def test_build_writes_merged_graph_communities_and_reports(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _run(app, [corpus])
            calls_after_first = len(server.requests_to("/chat/completions"))
            second = await _run(app, [corpus])
            stores = app.index("default")
            babbage = (await stores.graph.get_entities([entity_id("Charles Babbage")]))[0]
            designed = [r for r in await stores.graph.edges_within(
                [entity_id("Charles Babbage"), entity_id("Analytical Engine")]
            ) if r.type == "DESIGNED"]
            hits = await stores.search.search(
                Collection.ENTITIES, query_text="Babbage", mode=SearchMode.LEXICAL, k=3
            )
            return {
                "first": first, "second": second, "calls_first": calls_after_first,
                "calls_total": len(server.requests_to("/chat/completions")),
                "babbage": babbage, "designed": designed, "hits": [h.id for h in hits],
                "counts": await stores.graph.counts(),
                "methodologies": await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY),
                "reports": await stores.search.count(Collection.REPORTS),
                "rel_vectors": await stores.search.count(Collection.RELATIONSHIPS),
            }

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    first: IndexReport = out["first"]
    graph = first.graph
    assert graph is not None and graph.complete and first.exit_code == 0
    assert graph.units_extracted == 4 and graph.records_reused == 0
    # "Charles Babbage ", "Charles Babbage." and the relationship endpoints are one entity
    assert out["babbage"].name == "Charles Babbage"
    assert len(out["babbage"].text_unit_ids) == 2
    assert graph.entities == 7  # Ada, Babbage, Engine, London, Kyoto Univ., Kyoto, Yukawa
    # DESIGNED stated by two units: weight 6 + 9
    assert len(out["designed"]) == 1 and out["designed"][0].weight == 15.0
    assert out["hits"][0] == entity_id("Charles Babbage")
    assert json.loads(out["methodologies"]) == ["graphrag", "lightrag"]
    assert out["counts"]["communities"] >= 2 and out["counts"]["reports"] == out["reports"]
    assert out["reports"] == graph.reports and graph.reports_failed == 0
    assert out["rel_vectors"] == graph.relationships == 6
    # one extraction + one gleaning call per unit, one per report, no summaries needed
    assert out["calls_first"] == 4 * 2 + graph.reports
    assert graph.stages["extract"].usage.calls == 8
    # a second run over the unchanged corpus makes no model call at all
    assert out["calls_total"] == out["calls_first"]
    assert out["second"].graph is not None and out["second"].graph.skipped_reason


def test_one_failing_unit_of_fifty_is_retried_alone_next_run(tmp_path: Path) -> None:
    docs = {f"d{i:02}.txt": f"Ada Lovelace worked on item {i} in London." for i in range(50)}
    corpus = write_docs(tmp_path / "corpus", docs)
    bad = "item 17 "

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, IndexReport, int, int]:
        async with build_app(_config(server), tmp_path / "p") as app:
            server.fail_when = bad  # type: ignore[attr-defined]
            first = await _run(app, [corpus])
            n_first = len(server.requests_to("/chat/completions"))
            server.fail_when = None  # type: ignore[attr-defined]
            second = await _run(app, [corpus])
            n_second = len(server.requests_to("/chat/completions")) - n_first
            return first, second, n_first, n_second

    server = _FailingServer(reply=reply)
    with server:
        first, second, _, n_second = asyncio.run(main(server))
    assert first.graph is not None and second.graph is not None
    assert [f.path for f in first.graph.units_failed] == ["d17.txt"]
    assert "HTTP 400" in first.graph.units_failed[0].reason
    assert first.graph.units_extracted == 49 and first.exit_code == 3
    assert second.graph.units_extracted == 1 and second.graph.records_reused == 49
    assert second.graph.complete and second.exit_code == 0
    # the retried unit: one extraction + one gleaning call (reports come from the cache
    # unless their input changed)
    assert second.graph.stages["extract"].usage.calls == 2
    assert n_second == 2 + second.graph.stages["reports"].usage.calls


class _FailingServer(FakeOpenAIServer):
    """Answers HTTP 400 to extraction prompts containing ``fail_when``."""

    fail_when: str | None = None

    def _next(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Scripted:
        entry = super()._next(path, body, headers)
        if self.fail_when and path.endswith("/chat/completions") and self.fail_when in _user(body):
            return Scripted(status=400, message="context length exceeded")
        return entry


@pytest.mark.parametrize("status", [429, 500])
def test_transient_errors_are_retried(tmp_path: Path, status: int) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> IndexReport:
        async with build_app(_config(server), tmp_path / "p") as app:
            return await _run(app, [corpus])

    with FakeOpenAIServer(reply=reply) as server:
        server.script(Scripted(status=status, path="/chat/completions"),
                      Scripted(status=status, path="/chat/completions"))
        report = asyncio.run(main(server))
    assert report.graph is not None and report.graph.complete
    assert report.graph.entities == 7 and report.exit_code == 0


def test_timeout_is_retried(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", {"ada.txt": DOCS["ada.txt"]})

    async def main(server: FakeOpenAIServer) -> IndexReport:
        config = _config(server, openai={"timeout_s": 0.3})
        async with build_app(config, tmp_path / "p") as app:
            return await _run(app, [corpus])

    with FakeOpenAIServer(reply=reply) as server:
        server.script(Scripted(delay_s=1.0, path="/chat/completions"))
        report = asyncio.run(main(server))
    assert report.graph is not None and report.graph.complete and report.graph.entities == 4


def test_server_down_stops_the_run_and_the_next_run_resumes(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")
    with FakeOpenAIServer(reply=reply) as server:
        base_url = server.base_url
    down = FakeOpenAIServer(reply=reply)

    async def first() -> tuple[IndexReport, dict[str, int], int]:
        config = UkrConfig(
            llm={"kind": "openai", "openai": {"base_url": base_url, "api_key": "k"},
                 "max_retries": 1, "retry_initial_s": 0.01},
        )  # type: ignore[arg-type]
        async with build_app(config, tmp_path / "p") as app:
            report = await _run(app, [corpus])
            stores = app.index("default")
            return report, await stores.graph.counts(), await stores.search.count(
                Collection.TEXT_UNITS
            )

    stopped, counts, units = asyncio.run(first())
    assert stopped.graph is not None and stopped.exit_code == 1
    assert "cannot connect" in stopped.graph.error and base_url in stopped.graph.error
    assert stopped.documents_new == 4 and not stopped.failed
    assert counts["entities"] == 0 and counts["relationships"] == 0  # nothing half-written
    assert units == 4  # the text units of the run are kept

    async def second(server: FakeOpenAIServer) -> IndexReport:
        async with build_app(_config(server), tmp_path / "p") as app:
            return await _run(app, [corpus])

    with down as server:
        report = asyncio.run(second(server))
    assert report.documents_unchanged == 4
    assert report.graph is not None and report.graph.complete and report.graph.entities == 7


def test_run_stopped_halfway_makes_no_call_twice(tmp_path: Path) -> None:
    docs = {f"d{i:02}.txt": f"Ada Lovelace worked on item {i} in London." for i in range(12)}
    corpus = write_docs(tmp_path / "corpus", docs)

    async def main(server: FakeOpenAIServer) -> tuple[int, IndexReport]:
        config = _config(server, max_retries=0, max_concurrency=1)
        config = config.model_copy(
            update={"graph": config.graph.model_copy(update={"unit_concurrency": 1})}
        )
        async with build_app(config, tmp_path / "p") as app:
            # the server fails every call after the 10th: the run stops there
            server.script(*[Scripted(path="/chat/completions") for _ in range(10)],
                          *[Scripted(status=503, path="/chat/completions") for _ in range(50)])
            stopped = await _run(app, [corpus])
            assert stopped.graph is not None and "HTTP 503" in stopped.graph.error
            with server._lock:
                server._queue.clear()
            answered_first = 10
            report = await _run(app, [corpus])
            return answered_first, report

    with FakeOpenAIServer(reply=reply) as server:
        answered, report = asyncio.run(main(server))
        calls = _chat_calls(server)
    extraction = [p for p in calls if "<text>" in p and "<current_items>" not in p]
    gleaning = [p for p in calls if "<current_items>" in p]
    assert report.graph is not None and report.graph.complete
    # 10 calls answered = 5 units (extraction + gleaning); the resumed run extracts 7 only
    assert report.graph.records_reused == 5 and report.graph.units_extracted == 7
    # every unit was asked once, except those whose calls the server refused before the stage
    # stopped (asked again): three failures in a row (max(3, unit_concurrency)) make the
    # stage send one known-good request, which failed too: the server is down
    assert len(extraction) == 12 + 3 and len(gleaning) == 12
    assert sum("Reply with the single word OK." in p for p in calls) == 1
    assert len({re.search(r"item (\d+)", p).group(1) for p in extraction}) == 12  # type: ignore[union-attr]
    assert answered == 10


def _long_docs(n: int) -> tuple[dict[str, str], dict[str, str]]:
    """``n`` documents each saying something long and different about Ada Lovelace."""
    docs, descriptions = {}, {}
    for i in range(n):
        fact = " ".join(f"fact{i}word{j}" for j in range(90))
        docs[f"long{i}.txt"] = f"Ada Lovelace note {i}: {fact}."
        descriptions[f"note {i}:"] = f"Ada Lovelace, note {i}: {fact}."
    return docs, descriptions


def test_long_descriptions_are_summarized_map_reduce_and_a_failed_summary_keeps_them(
    tmp_path: Path,
) -> None:
    docs, descriptions = _long_docs(6)
    docs["kyoto.txt"] = DOCS["kyoto.txt"]
    corpus = write_docs(tmp_path / "corpus", docs)
    summaries: list[str] = []

    def long_reply(body: dict[str, Any]) -> str:
        text = _user(body)
        if "<descriptions>" in text:
            summaries.append(text)
            return f"Summary {len(summaries)} of Ada Lovelace."
        for marker, description in descriptions.items():
            if marker in text and "<current_items>" not in text:
                return _xml([("Ada Lovelace", "PERSON", description),
                             ("Analytical Engine", "PRODUCT", "A machine.")],
                            [("Ada Lovelace", "Analytical Engine", "PROGRAMMED", 5)])
        return reply(body)

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, str]:
        config = _config(server)
        config = config.model_copy(update={"graph": config.graph.model_copy(update={
            "resolution": config.graph.resolution.model_copy(
                update={"summarize_over_tokens": 100, "summary_max_input_tokens": 400}
            )})})  # fmt: skip
        async with build_app(config, tmp_path / "p") as app:
            report = await _run(app, [corpus])
            ada = (await app.index().graph.get_entities([entity_id("Ada Lovelace")]))[0]
            return report, ada.description

    with FakeOpenAIServer(reply=long_reply) as server:
        report, description = asyncio.run(main(server))
    assert report.graph is not None and report.graph.descriptions_summarized == 1
    # six ~100-token fragments do not fit one 400-token call: map over batches, then reduce
    assert len(summaries) >= 3
    assert all("fact0word0" not in s for s in summaries[-1:])  # the reduce reads summaries
    assert description == f"Summary {len(summaries)} of Ada Lovelace."

    # a summary that fails keeps the concatenation, and the run goes on
    def failing(body: dict[str, Any]) -> str:
        return long_reply(body)

    class _NoSummaries(FakeOpenAIServer):
        def _next(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Scripted:
            entry = super()._next(path, body, headers)
            if "<descriptions>" in _user(body):
                return Scripted(status=400, message="bad request")
            return entry

    async def again(server: FakeOpenAIServer) -> tuple[IndexReport, str]:
        config = _config(server, cache=False)
        config = config.model_copy(update={"graph": config.graph.model_copy(update={
            "resolution": config.graph.resolution.model_copy(
                update={"summarize_over_tokens": 100, "summary_max_input_tokens": 400}
            )})})  # fmt: skip
        async with build_app(config, tmp_path / "q") as app:
            report = await _run(app, [corpus])
            ada = (await app.index().graph.get_entities([entity_id("Ada Lovelace")]))[0]
            return report, ada.description

    with _NoSummaries(reply=failing) as server:
        report2, kept = asyncio.run(again(server))
    assert report2.graph is not None and report2.graph.summaries_failed == 1
    assert report2.graph.descriptions_summarized == 0
    assert all(f"fact{i}word89" in kept for i in range(6))


def test_lightrag_alone_builds_no_communities_or_reports(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, dict[str, int], str | None]:
        config = _config(server).model_copy(
            update={"indexing": UkrConfig().indexing.model_copy(
                update={"methodologies": ["lightrag"]})}
        )
        async with build_app(config, tmp_path / "p") as app:
            report = await _run(app, [corpus])
            stores = app.index()
            return (report, await stores.graph.counts(),
                    await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY))

    with FakeOpenAIServer(reply=reply) as server:
        report, counts, held = asyncio.run(main(server))
        prompts = _chat_calls(server)
    assert report.graph is not None and report.graph.communities_per_level == {}
    assert counts["entities"] == 7 and counts["communities"] == 0 and counts["reports"] == 0
    assert not any("<report_context>" in p for p in prompts)
    assert json.loads(held or "[]") == ["lightrag"]


def test_changed_document_replaces_its_facts_in_the_graph(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, list[Any], list[str], int]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _run(app, [corpus])
            (corpus / "kyoto.txt").unlink()
            (corpus / "notes.txt").write_text("Charles Babbage designed the Analytical Engine.")
            report = await _run(app, [corpus])
            stores = app.index()
            entities = await stores.graph.get_entities(
                [entity_id(n) for n in ("Kyoto", "Hideki Yukawa", "Ada Lovelace")])
            edges = await stores.graph.edges_within(
                [entity_id("Ada Lovelace"), entity_id("Analytical Engine")])
            vectors = await stores.search.count(Collection.RELATIONSHIPS)
            return report, entities, sorted(r.type for r in edges), vectors

    with FakeOpenAIServer(reply=reply) as server:
        report, entities, edge_types, rel_vectors = asyncio.run(main(server))
    assert report.graph is not None and report.graph.complete and report.graph.items_removed
    # kyoto.txt is gone from the folder: its document and the entities only it stated go
    assert report.documents_deleted == 1
    assert [e.name for e in entities] == ["Ada Lovelace"]
    # Ada is now stated by ada.txt alone, and PROGRAMMED (only the old notes.txt said it) is
    # gone from the graph store and from the relationship vectors
    assert len(entities[0].text_unit_ids) == 1
    assert edge_types == []
    assert rel_vectors == report.graph.relationships == 3


@pytest.mark.postgres
def test_build_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    from tests.support.postgres import fresh_catalog

    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, dict[str, int], int]:
        config = _config(server).model_copy(update={"stores": UkrConfig.model_validate({
            "stores": {"kind": "postgres", "postgres": {
                "url": postgres_url, "schema_name": fresh_catalog()}}}).stores})  # fmt: skip
        async with build_app(config, tmp_path / "p") as app:
            report = await _run(app, [corpus])
            again = await _run(app, [corpus])
            assert again.graph is not None and again.graph.skipped_reason
            stores = app.index()
            return report, await stores.graph.counts(), await stores.search.count(
                Collection.REPORTS
            )

    with FakeOpenAIServer(reply=reply) as server:
        report, counts, reports = asyncio.run(main(server))
    assert report.graph is not None and report.graph.complete
    assert counts["entities"] == 7 and counts["relationships"] == 6
    assert counts["reports"] == reports == report.graph.reports > 0


def test_an_unreadable_reply_is_not_cached_and_is_asked_again_next_run(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")
    state = {"broken": True}

    def moody(body: dict[str, Any]) -> str:
        text = _user(body)
        if state["broken"] and "Kyoto University is" in text and "<current_items>" not in text:
            return "Sorry, I cannot comply."
        if state["broken"] and "<report_context>" in text:
            return "not a JSON report"
        return reply(body)

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, IndexReport]:
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _run(app, [corpus])
            state["broken"] = False
            return first, await _run(app, [corpus])

    with FakeOpenAIServer(reply=moody) as server:
        first, second = asyncio.run(main(server))
    assert first.graph is not None and second.graph is not None
    assert [f.path for f in first.graph.units_failed] == ["kyoto.txt"]
    assert first.graph.reports_failed > 0 and first.exit_code == 3
    # the refused reply and the broken reports were not cached: the model is asked again
    assert second.graph.units_extracted == 1 and second.graph.stages["extract"].usage.calls == 2
    assert second.graph.reports_failed == 0 and second.graph.complete
    assert second.exit_code == 0 and second.graph.entities == 7


def test_a_rejected_gleaning_request_keeps_the_extraction(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus", {"ada.txt": DOCS["ada.txt"]})

    class _SmallContext(FakeOpenAIServer):
        def _next(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Scripted:
            entry = super()._next(path, body, headers)
            if "<current_items>" in _user(body):
                return Scripted(status=400, message="maximum context length exceeded")
            return entry

    async def main(server: FakeOpenAIServer) -> IndexReport:
        async with build_app(_config(server), tmp_path / "p") as app:
            return await _run(app, [corpus])

    with _SmallContext(reply=reply) as server:
        report = asyncio.run(main(server))
    assert report.graph is not None and report.graph.complete and report.exit_code == 0
    assert report.graph.units_extracted == 1 and report.graph.entities == 4


def test_a_prompt_file_without_its_placeholder_is_a_configuration_error(tmp_path: Path) -> None:
    from unified_kg_rag.util.errors import ConfigurationError

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "extract.md").write_text("System.\n=== user ===\nExtract from {Text}.")

    async def main(server: FakeOpenAIServer) -> None:
        config = _config(server)
        config = config.model_copy(update={"graph": config.graph.model_copy(update={
            "extraction": config.graph.extraction.model_copy(
                update={"prompt_file": "extract.md"})})})  # fmt: skip
        # checked when the app starts, before any document is read
        with pytest.raises(ConfigurationError, match=r"^extract\.md: missing placeholder \{text\}$"):
            build_app(config, tmp_path / "p")

    with FakeOpenAIServer(reply=reply) as server:
        asyncio.run(main(server))
        assert server.requests_to("/chat/completions") == []


def test_moving_the_server_reuses_the_extraction_records(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer, url: str) -> IndexReport:
        config = _config(server).model_copy(deep=True)
        config = UkrConfig.model_validate({**config.model_dump(mode="json"), "llm": {
            **config.llm.model_dump(mode="json"), "openai": {
                **config.llm.openai.model_dump(mode="json"), "base_url": url,
                "api_key": "k"}}})  # fmt: skip
        async with build_app(config, tmp_path / "p") as app:
            return await _run(app, [corpus], force=False)

    with FakeOpenAIServer(reply=reply) as server:
        asyncio.run(main(server, server.base_url))
        calls = len(server.requests_to("/chat/completions"))
        moved = asyncio.run(main(server, server.base_url.replace("127.0.0.1", "localhost")))
        assert len(server.requests_to("/chat/completions")) == calls  # no model call at all
    assert moved.graph is not None and moved.graph.skipped_reason
