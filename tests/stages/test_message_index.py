"""Message archives through the real pipeline: transcripts, manifest diff, bounded builds, provenance.

Real SQLite stores, the bundled embedding model and real JSON Lines archives read by the
`jsonl` source; no LLM (`lazy` indexing, extractive answers). What is checked is what the
stores hold afterwards (registry records, text units, message spans) and what a query returns.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from tests.stages.test_graph_build import _xml
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.adapters.messages.jsonl import JsonLinesSource
from unified_kg_rag.adapters.registry import EMBEDDERS
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.messages.manifest import SPANS_NAMESPACE, parse_spans_record
from unified_kg_rag.domain.messages.transcripts import MESSAGE_SCOPE, MessageSourceOptions
from unified_kg_rag.domain.models import Collection, DocStatus, RAGOutput
from unified_kg_rag.ingestion.lease import held_lease
from unified_kg_rag.ingestion.messages import MessageRun
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ports import Embedder
from unified_kg_rag.retrieval.chain import RAGChain, RAGInput
from unified_kg_rag.util.errors import BuildInProgress, ConfirmationRequiredError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model, loaded once for the module."""
    return EMBEDDERS.get("local")(UkrConfig().embeddings)


def _msg(guid: str, thread: str, day: int, text: str, *, sender: str = "Bob",
         hour: int = 10) -> dict[str, Any]:
    return {"guid": guid, "thread_id": thread, "thread_name": thread.title(), "sender": sender,
            "timestamp": f"2020-01-{day:02d}T{hour:02d}:00:00Z", "text": text}


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


BASE = [
    _msg("m1", "family", 1, "Happy birthday to Dana, she turns thirty today!", sender="Carol"),
    _msg("m2", "family", 1, "Thanks for the reminder, I almost forgot", sender="Ed"),
    _msg("m3", "bob", 2, "Computers are overrated, I prefer my old typewriter"),
    _msg("m4", "bob", 3, "Fine, the new laptop is great for photo editing"),
    _msg("m5", "jane", 4, "Just got back from Lisbon, the custard tarts were amazing",
         sender="Jane"),
]


def _config(**messages: Any) -> UkrConfig:
    return UkrConfig(indexing={"methodologies": ["lazy"]},
                     messages=messages)  # type: ignore[arg-type]


async def _index(app: App, embedder: Embedder, paths: Sequence[Path], *, yes: bool = False,
                 since: Any = None, limit: int | None = None) -> IndexReport:
    pipeline = IndexPipeline(
        app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, keyphrase_extractor=app.keyphrase_extractor,
        message_sources=[JsonLinesSource()], chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
    )
    run = MessageRun(since=since, limit=limit, max_chars=app.config.messages.transcript_max_chars)
    return await pipeline.run(paths, confirm_deletions=yes, messages=run)


async def _transcripts(app: App) -> dict[str, list[str]]:
    """doc_key → message guids, for every processed transcript (read back from the stores)."""
    stores = app.index()
    records = [r for r in await stores.registry.list_records(MESSAGE_SCOPE)
               if r.status is DocStatus.PROCESSED]
    raw = await stores.records.get_many(SPANS_NAMESPACE, [r.document_id for r in records])
    return {r.path: [m.guid for m in parse_spans_record(raw[r.document_id]).messages]
            for r in records}


async def _unit_texts(app: App) -> list[str]:
    stores = app.index()
    ids = await stores.search.ids(Collection.TEXT_UNITS)
    return [r.text for r in await stores.search.get(Collection.TEXT_UNITS, ids)]


async def _ask(app: App, embedder: Embedder, question: str) -> RAGOutput:
    chain = RAGChain(app.index(), embedder=embedder, chat_model=None,
                     budget_tokenizer=app.budget_tokenizer, config=app.config.query)
    return await chain.ainvoke(RAGInput(question=question, strategy="naive"))


def test_transcripts_are_indexed_with_per_message_provenance(
    tmp_path: Path, embedder: Embedder
) -> None:
    archive = _write(tmp_path / "a.jsonl", BASE)

    async def main() -> tuple[IndexReport, dict[str, list[str]], RAGOutput]:
        async with build_app(_config(), tmp_path / "p") as app:
            report = await _index(app, embedder, [archive])
            out = await _ask(app, embedder, "Who told me it was Dana's birthday?")
            return report, await _transcripts(app), out

    report, transcripts, out = asyncio.run(main())
    assert report.messages is not None and report.messages.messages == 5
    assert transcripts == {"family::2020-01-01": ["m1", "m2"],
                           "bob::2020-01-02..2020-01-03": ["m3", "m4"],
                           "jane::2020-01-04": ["m5"]}
    top = out.sources[0]
    assert top.title == "Family (2020-01-01)"
    assert [(m.guid, m.sender_name, m.timestamp, m.thread_name) for m in top.messages] == [
        ("m1", "Carol", "2020-01-01T10:00:00+00:00", "Family"),
        ("m2", "Ed", "2020-01-01T10:00:00+00:00", "Family"),
    ]
    # the evidence is the message that says it, not the whole thread-day
    assert [m.guid for m in out.evidence] == ["m1"]
    assert out.evidence[0].label == "1.1" and "[1.1]" in out.answer


def test_overlapping_exports_in_two_runs_never_duplicate_a_message(
    tmp_path: Path, embedder: Embedder
) -> None:
    first = _write(tmp_path / "old.jsonl", BASE[:4])
    second = _write(tmp_path / "new.jsonl",
                    [*BASE[2:], _msg("m6", "jane", 5, "Booked Porto next")])

    async def main() -> tuple[IndexReport, dict[str, list[str]]]:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [first])
            report = await _index(app, embedder, [second])
            return report, await _transcripts(app)

    report, transcripts = asyncio.run(main())
    guids = [g for keys in transcripts.values() for g in keys]
    assert sorted(guids) == ["m1", "m2", "m3", "m4", "m5", "m6"]  # each exactly once
    assert report.messages is not None
    assert report.messages.archives == 2 and report.messages.duplicates == 2
    assert (report.messages.new, report.messages.unchanged, report.messages.removed) == (1, 2, 0)


def test_grown_and_edited_archive_changes_only_its_thread_days(
    tmp_path: Path, embedder: Embedder
) -> None:
    archive = _write(tmp_path / "a.jsonl", BASE)

    async def main() -> tuple[IndexReport, list[str], dict[str, list[str]]]:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            edited = [dict(r) for r in BASE]
            edited[2]["text"] = "Computers are wonderful now, I sold the typewriter"
            _write(archive, [*edited, _msg("m7", "family", 9, "Dinner on Sunday?")])
            report = await _index(app, embedder, [archive])
            return report, await _unit_texts(app), await _transcripts(app)

    report, texts, transcripts = asyncio.run(main())
    m = report.messages
    # bob's transcript changed; jane's is untouched; family's grew a day, which re-keys its
    # last transcript (greedy packing): the old key goes, the wider one comes
    assert m is not None and (m.new, m.changed, m.unchanged, m.removed) == (1, 1, 1, 1)
    assert report.documents_deleted == 1
    assert not any("old typewriter" in t for t in texts)  # the stale text unit is gone
    assert any("sold the typewriter" in t for t in texts)
    assert transcripts["family::2020-01-01..2020-01-09"] == ["m1", "m2", "m7"]
    assert "family::2020-01-01" not in transcripts


def test_messages_gone_from_the_archive_are_deleted_behind_the_guard(
    tmp_path: Path, embedder: Embedder
) -> None:
    archive = _write(tmp_path / "a.jsonl", BASE)

    async def main() -> tuple[dict[str, list[str]], dict[str, list[str]], IndexReport]:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            _write(archive, BASE[:1])  # keeps one of three transcripts' messages
            with pytest.raises(ConfirmationRequiredError):
                await _index(app, embedder, [archive])
            kept = await _transcripts(app)  # the refused run wrote nothing
            report = await _index(app, embedder, [archive], yes=True)
            return kept, await _transcripts(app), report

    kept, after, report = asyncio.run(main())
    assert len(kept) == 3
    assert after == {"family::2020-01-01": ["m1"]}
    assert report.documents_deleted == 2


def _days(n: int, thread: str = "t") -> list[dict[str, Any]]:
    # one ~80-character message line per day; with a 200-character cap two days pack together
    return [_msg(f"d{i}", thread, i, f"note number {i} about the garden shed and the old apple tree") for i in
            range(1, n + 1)]


def test_bounded_build_keeps_out_of_window_transcripts_and_prunes_respan_casualties(
    tmp_path: Path, embedder: Embedder
) -> None:
    archive = _write(tmp_path / "a.jsonl", _days(6))

    async def main() -> tuple[dict[str, list[str]], dict[str, list[str]], IndexReport]:
        async with build_app(_config(transcript_max_chars=200), tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            full = await _transcripts(app)
            report = await _index(app, embedder, [archive], limit=3)
            return full, await _transcripts(app), report

    full, bounded, report = asyncio.run(main())
    assert sorted(full) == ["t::2020-01-01..2020-01-02", "t::2020-01-03..2020-01-04",
                            "t::2020-01-05..2020-01-06"]
    # the window (d4..d6) re-keys: d4..d5 and d6 are new; 05..06 is fully covered by the
    # render, so it is a re-span casualty and goes; 03..04 straddles the window: kept, as is
    # 01..02 (out of the window)
    assert sorted(bounded) == ["t::2020-01-01..2020-01-02", "t::2020-01-03..2020-01-04",
                               "t::2020-01-04..2020-01-05", "t::2020-01-06"]
    m = report.messages
    assert m is not None and m.bounded and m.removed == 3 and m.kept_out_of_window == 2
    assert report.documents_deleted == 1


def test_an_unreadable_archive_deletes_nothing_of_its_messages(
    tmp_path: Path, embedder: Embedder
) -> None:
    good = _write(tmp_path / "a.jsonl", BASE[:2])
    other = _write(tmp_path / "b.jsonl", BASE[2:])

    async def main() -> tuple[IndexReport, dict[str, list[str]]]:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [good, other])
            other.write_bytes(b'{"thread_id": "x", "text": "\xff\xfe broken"}\n')
            report = await _index(app, embedder, [good, other])
            return report, await _transcripts(app)

    report, transcripts = asyncio.run(main())
    assert [f.path for f in report.failed] == [str(other)]
    assert report.exit_code == 3
    assert sorted(transcripts) == ["bob::2020-01-02..2020-01-03", "family::2020-01-01",
                                   "jane::2020-01-04"]
    assert report.messages is not None and report.messages.held_reason
    assert not report.messages.bounded


def test_a_second_build_is_refused_at_once_and_queries_are_answered_meanwhile(
    tmp_path: Path, embedder: Embedder
) -> None:
    archive = _write(tmp_path / "a.jsonl", BASE)

    async def main() -> RAGOutput:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            stores = app.index()
            async with held_lease(stores.registry, stores.name, ttl_s=60):
                # another writer holds the index: a second build fails before any work
                with pytest.raises(BuildInProgress) as info:
                    await _index(app, embedder, [archive])
                assert info.value.index == stores.name
                return await _ask(app, embedder, "What does Bob think about computers?")

    out = asyncio.run(main())
    assert out.sources and out.evidence[0].guid == "m3"


def test_generative_answer_cites_messages_and_evidence_is_the_cited_messages(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A real HTTP model server: the prompt labels every message, the answer's labels pick them."""
    archive = _write(tmp_path / "a.jsonl", BASE)

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        # find the labels the context gave the two messages the answer rests on
        birthday = re.search(r"\[(\d+\.\d+)\] \[[^]]+\] Carol: Happy birthday", prompt)
        lisbon = re.search(r"\[(\d+)\.\d+\] \[[^]]+\] Jane: Just got back", prompt)
        assert birthday is not None and lisbon is not None, prompt
        birthday, n = birthday.group(1), lisbon.group(1)
        return (f"Carol told you it was Dana's birthday [{birthday}]. "
                f"Jane was in Lisbon [{n}].")

    with FakeOpenAIServer(reply=reply) as server:
        config = UkrConfig(
            indexing={"methodologies": ["lazy"]},
            llm={"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"}},
        )  # type: ignore[arg-type]

        async def main() -> RAGOutput:
            async with build_app(config, tmp_path / "p") as app:
                await _index(app, embedder, [archive])
                chain = RAGChain(app.index(), embedder=embedder, chat_model=app.chat_model,
                                 budget_tokenizer=app.budget_tokenizer, config=config.query)
                return await chain.ainvoke(RAGInput(
                    question="Who told me about Dana's birthday, and who went to Lisbon?",
                    strategy="naive"))

        out = asyncio.run(main())
        system = server.requests[-1].body["messages"][0]["content"]
    assert "[2.3]" in system  # the label instruction reaches the model
    by_guid = {m.guid: m for m in out.evidence}
    # [n.m] names m1 exactly; the plain [n] of Jane's source adds her Lisbon message only
    assert list(by_guid) == ["m1", "m5"]
    assert by_guid["m1"].sender_name == "Carol" and by_guid["m5"].sender_name == "Jane"
    assert len(out.cited) == 2


def test_names_persist_across_runs_and_an_archive_can_be_dropped(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A run without --handles keeps the last run's names; `delete ARCHIVE` drops its messages."""
    first = _write(tmp_path / "a.jsonl", [dict(BASE[0], sender="+15550001")])
    second = _write(tmp_path / "b.jsonl", BASE[2:4])

    async def main() -> tuple[IndexReport, list[str], Any, dict[str, list[str]]]:
        async with build_app(_config(), tmp_path / "p") as app:
            pipeline = IndexPipeline(
                app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=app.config,
                keyphrase_extractor=app.keyphrase_extractor, message_sources=[JsonLinesSource()])
            named = MessageSourceOptions(handle_names={"+15550001": "Carol"})
            await pipeline.run([first], messages=MessageRun(options=named))
            # no --handles this time: the names the index was rendered with are kept
            report = await pipeline.run([second], messages=MessageRun(
                names_given=False, owner_given=False))
            texts = await _unit_texts(app)
            dropped = await pipeline.delete([str(second)], confirm=True)
            return report, texts, dropped, await _transcripts(app)

    report, texts, dropped, after = asyncio.run(main())
    assert report.messages is not None and report.messages.unchanged == 1
    assert any("Carol: Happy birthday" in t for t in texts)
    assert dropped.archives is not None and dropped.archives.documents_deleted == 1
    assert after == {"family::2020-01-01": ["m1"]}


def test_a_grown_thread_is_rekeyed_without_asking_and_a_failed_archive_loses_nothing(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Found by the docs run: the guard counted re-keys as deletions; a failed archive's
    messages vanished from transcripts shared with another archive."""
    first = _write(tmp_path / "a.jsonl", BASE[:1])
    second = _write(tmp_path / "b.jsonl", [BASE[1]])

    async def main() -> tuple[IndexReport, IndexReport, dict[str, list[str]]]:
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [first])
            # one thread, one transcript: the day it grows re-keys the transcript; all of its
            # messages are still indexed, so no confirmation is needed
            _write(first, [BASE[0], _msg("m8", "family", 2, "Cake was lovely")])
            grown = await _index(app, embedder, [first])
            await _index(app, embedder, [second])  # m2 joins family::2020-01-01..
            first.write_bytes(b"\xff\xfe not utf-8")
            failed = await _index(app, embedder, [second])
            return grown, failed, await _transcripts(app)

    grown, failed, transcripts = asyncio.run(main())
    assert grown.messages is not None and grown.messages.removed == 1
    assert grown.documents_deleted == 1
    assert failed.messages is not None and "failed to read" in failed.messages.held_reason
    assert (failed.documents_deleted, failed.text_units_written) == (0, 0)
    assert [f.path for f in failed.failed] == [str(first)]
    assert transcripts == {"family::2020-01-01..2020-01-02": ["m1", "m2", "m8"]}


def test_a_bounded_build_keeps_a_transcript_its_render_would_shrink(
    tmp_path: Path, embedder: Embedder
) -> None:
    rows = [*_days(4), _msg("x3", "t", 3, "short one", hour=11)]
    archive = _write(tmp_path / "a.jsonl", rows)

    async def main() -> tuple[dict[str, list[str]], IndexReport, dict[str, list[str]]]:
        async with build_app(_config(transcript_max_chars=250), tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            before = await _transcripts(app)
            # x3 is gone from this export; a bounded build must not drop it from the index
            _write(archive, [r for r in rows if r["guid"] != "x3"])
            report = await _index(app, embedder, [archive], since=date(2020, 1, 3))
            return before, report, await _transcripts(app)

    before, report, after = asyncio.run(main())
    assert before["t::2020-01-03..2020-01-04"] == ["d3", "x3", "d4"]
    assert report.messages is not None and report.messages.bounded
    assert report.messages.kept_partial == 1
    assert after == before


def test_estimate_renders_and_chunks_the_archives_it_is_given(
    tmp_path: Path, embedder: Embedder
) -> None:
    archive = _write(tmp_path / "a.jsonl", BASE)
    config = UkrConfig(
        indexing={"methodologies": ["lightrag"]},
        llm={"kind": "openai", "openai": {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}},
    )  # type: ignore[arg-type]

    async def main() -> Any:
        async with build_app(config, tmp_path / "p") as app:
            pipeline = IndexPipeline(
                app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=config, chat_model=app.chat_model,
                message_sources=[JsonLinesSource()])
            return await pipeline.estimate([archive], messages=MessageRun())

    est = asyncio.run(main())
    assert est.units == 3 and est.units_to_extract == 3  # one unit per transcript
    assert est.calls_min >= 3


def _graph_reply(body: dict[str, Any]) -> str:
    """A well-behaved extraction model for BASE's transcripts (reports and summaries too)."""
    text = "\n".join(m.get("content", "") for m in body["messages"] if m.get("role") == "user")
    if "<report_context>" in text:
        return json.dumps({"title": "Family", "summary": "People and events.", "rating": 5,
                           "rating_explanation": "r", "findings": []})
    if "<descriptions>" in text or "<current_items>" in text:
        return ("A merged summary." if "<descriptions>" in text
                else "<entities>None</entities>\n<relationships>None</relationships>")
    if "Happy birthday to Dana" in text:
        return _xml([("Dana", "PERSON", "Turned thirty."), ("Carol", "PERSON", "A friend.")],
                    [("Carol", "Dana", "WISHED_BIRTHDAY", 8)])
    if "Computers are overrated" in text:
        return _xml([("Bob", "PERSON", "Prefers a typewriter."),
                     ("Typewriter", "PRODUCT", "Bob's old machine.")],
                    [("Bob", "Typewriter", "PREFERS", 7)])
    return "<entities>None</entities>\n<relationships>None</relationships>"


def test_llm_graph_over_transcripts_points_entities_at_their_messages(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The LLM pipeline extracts from transcripts; an entity source names the messages that
    state it (not every message of its text units)."""
    archive = _write(tmp_path / "a.jsonl", BASE)
    with FakeOpenAIServer(reply=_graph_reply) as server:
        config = UkrConfig(
            indexing={"methodologies": ["lightrag", "graphrag"]},
            graph={"communities": {"min_community_size": 2}},
            llm={"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"}},
        )  # type: ignore[arg-type]

        async def main() -> tuple[IndexReport, RAGOutput]:
            async with build_app(config, tmp_path / "p") as app:
                report = await _index(app, embedder, [archive])
                chain = RAGChain(app.index(), embedder=embedder, chat_model=None,
                                 budget_tokenizer=app.budget_tokenizer, config=config.query)
                out = await chain.ainvoke(RAGInput(question="Who is Dana?", strategy="local"))
                return report, out

        report, out = asyncio.run(main())
    assert report.graph is not None and report.graph.entities >= 4
    dana = next(s for s in out.sources if s.kind == "entity" and (s.title or "").startswith("Dana"))
    assert [m.guid for m in dana.messages] == ["m1"]  # not m2, though in the same text unit
    assert dana.messages[0].sender_name == "Carol"
    passages = [s for s in out.sources if s.kind == "text_unit"]
    assert passages and all(s.messages for s in passages)


@pytest.mark.postgres
def test_message_archive_on_postgres(
    tmp_path: Path, embedder: Embedder, postgres_url: str
) -> None:
    """The same transcripts, spans and evidence with PostgreSQL + pgvector stores."""
    from tests.support.postgres import fresh_catalog

    archive = _write(tmp_path / "a.jsonl", BASE)
    config = UkrConfig.model_validate({
        "indexing": {"methodologies": ["lazy"]},
        "stores": {"kind": "postgres",
                   "postgres": {"url": postgres_url, "schema_name": fresh_catalog()}},
    })

    async def main() -> tuple[dict[str, list[str]], RAGOutput, IndexReport]:
        async with build_app(config, tmp_path / "p") as app:
            await _index(app, embedder, [archive])
            again = await _index(app, embedder, [archive])
            out = await _ask(app, embedder, "Who told me it was Dana's birthday?")
            return await _transcripts(app), out, again

    transcripts, out, again = asyncio.run(main())
    assert transcripts == {"family::2020-01-01": ["m1", "m2"],
                           "bob::2020-01-02..2020-01-03": ["m3", "m4"],
                           "jane::2020-01-04": ["m5"]}
    assert again.messages is not None and again.messages.unchanged == 3
    assert [m.guid for m in out.evidence] == ["m1"]


def test_break_it_findings_on_updates(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the break-it run: (a) re-keyed transcripts were deleted before their
    replacements were indexed; (b) an older export's copy of a message won the merge; (c) a
    held `delete ARCHIVE` still forgot the archive; (d) a JSON Lines file indexed as a document
    stayed one after it was read as an archive."""
    import os

    from unified_kg_rag.ingestion import messages as messages_module

    older, newer = tmp_path / "2024-01.jsonl", tmp_path / "2024-06.jsonl"
    _write(older, BASE[:1])
    _write(newer, [dict(BASE[0], text="Happy birthday to Dana, thirty today!",
                        reactions=[{"kind": "loved", "is_from_me": True}])])
    os.utime(older, (1_700_000_000, 1_700_000_000))
    os.utime(newer, (1_720_000_000, 1_720_000_000))
    plain = tmp_path / "notes.jsonl"
    plain.write_text('{"thread_id": "n", "sender": "Ann"}\n', encoding="utf-8")

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with build_app(_config(), tmp_path / "p") as app:
            await _index(app, embedder, [older, newer])
            seen["merged"] = await _unit_texts(app)
            # (a) the deletion of the old key fails after the new one was processed
            _write(newer, [dict(BASE[0], reactions=[{"kind": "loved", "is_from_me": True}]),
                           _msg("m9", "family", 2, "Cake was lovely")])
            original = messages_module.remove_documents

            async def failing(*args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("injected")

            monkeypatch.setattr(messages_module, "remove_documents", failing)
            with pytest.raises(RuntimeError, match="injected"):
                await _index(app, embedder, [older, newer])
            seen["interrupted"] = await _transcripts(app)
            monkeypatch.setattr(messages_module, "remove_documents", original)
            await _index(app, embedder, [older, newer])
            seen["finished"] = await _transcripts(app)
            # (c) another archive fails to read: the delete is held and nothing is forgotten
            older.write_bytes(b"\xff\xfe")
            pipeline = IndexPipeline(
                app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=app.config, message_sources=[JsonLinesSource()],
                keyphrase_extractor=app.keyphrase_extractor)
            held = await pipeline.delete([str(newer)], confirm=True)
            seen["held"] = held.archives
            _write(older, BASE[:1])
            seen["dropped"] = await pipeline.delete([str(newer)], confirm=True)
            # (d) a document that becomes an archive
            await _index(app, embedder, [plain])
            _write(plain, [dict(_msg("n1", "n", 7, "Plant the tulips"), guid="n1")])
            await _index(app, embedder, [plain])
            seen["records"] = sorted(r.source_scope == MESSAGE_SCOPE for r in
                                     await app.index().registry.list_records())
        return seen

    seen = asyncio.run(main())
    # (b) the newer export's copy (edited text, a reaction) wins
    assert any("thirty today!" in t and "loved by Me" in t for t in seen["merged"])
    # (a) after the failed removal both keys hold the messages: nothing is missing
    assert seen["interrupted"] == {"family::2020-01-01": ["m1"],
                                   "family::2020-01-01..2020-01-02": ["m1", "m9"]}
    assert seen["finished"] == {"family::2020-01-01..2020-01-02": ["m1", "m9"]}
    assert seen["held"] is not None and seen["held"].messages.held_reason
    assert seen["dropped"].archives.messages.archives == 1  # the held delete forgot nothing
    assert seen["records"] == [True, True]  # notes.jsonl's document record is gone
