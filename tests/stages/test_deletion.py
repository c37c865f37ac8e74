"""Document deletion (issue #7, part A): real SQLite, the bundled embedder, a real HTTP LLM server.

Deleting a document must leave the index equal to a full build of what remains: no text unit,
entity, relationship (graph store and search index), community, report or extraction record
of the deleted text, shared items re-derived from the surviving records. The stores are read
back through the ports (`GraphStore.citing`) and by direct SQL on the SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.stages.test_graph_build import DOCS, reply, write_docs
from tests.support.index_compare import clockless
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.adapters.registry import EMBEDDERS
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.models import Collection, DocRecord, DocStatus, IndexRecord
from unified_kg_rag.ingestion.graph.build import GraphIndexer
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import DeleteReport, IndexReport
from unified_kg_rag.ports import Embedder, IndexStores
from unified_kg_rag.util.errors import (
    ConfigurationError,
    ConfirmationRequiredError,
    StoreError,
)

pytestmark = pytest.mark.integration

GRAPH = ["graphrag", "lightrag", "lazy"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model, loaded once for the module."""
    return EMBEDDERS.get("local")(UkrConfig().embeddings)


def _config(server: FakeOpenAIServer | None, *, methodologies: list[str] | None = None,
            share: float = 0.5) -> UkrConfig:
    llm: dict[str, Any] = {"kind": "none"}
    if server is not None:
        llm = {"kind": "openai", "retry_initial_s": 0.01, "retry_max_s": 0.05,
               "openai": {"base_url": server.base_url, "api_key": "k"}}
    return UkrConfig(
        llm=llm,
        graph={"communities": {"min_community_size": 2}},
        indexing={"methodologies": GRAPH if methodologies is None else methodologies,
                  "max_delete_share": share},
    )  # type: ignore[arg-type]


def _pipeline(app: App, embedder: Embedder, stores: IndexStores | None = None) -> IndexPipeline:
    return IndexPipeline(
        stores or app.index(),
        embedder=embedder,
        chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers,
        config=app.config,
        chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
        project_dir=app.project_dir,
        keyphrase_extractor=app.keyphrase_extractor,
    )


async def _index(app: App, embedder: Embedder, paths: Sequence[Path], *,
                 yes: bool = False) -> IndexReport:
    return await _pipeline(app, embedder).run(paths, confirm_deletions=yes)


async def _delete(app: App, embedder: Embedder, targets: Sequence[str], *,
                  yes: bool = False) -> DeleteReport:
    return await _pipeline(app, embedder).delete(targets, confirm=yes)


def _snapshot(db: str, index: str = "default") -> dict[str, Any]:
    """Everything the index holds, read by SQL (vectors as their float32 bytes; a unit's file
    modification time compared as present, `tests.support.index_compare.clockless`)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        q = con.execute
        out: dict[str, Any] = {
            "search": {(c, i): (t, clockless(json.loads(f))) for c, i, t, f in q(
                "SELECT collection, id, text, fields FROM search_records WHERE index_name = ?",
                (index,))},
            "vectors": {(c, i): bytes(v) for c, i, v in q(
                "SELECT collection, id, vector FROM search_records WHERE index_name = ? "
                "AND vector IS NOT NULL", (index,))},
            "lineage": set(q("SELECT item_kind, item_id, text_unit_id FROM lineage "
                             "WHERE index_name = ?", (index,))),
            "docs": {d: (s, json.loads(data)["path"], tuple(json.loads(data)["text_unit_ids"]))
                     for d, s, data in q("SELECT document_id, status, data FROM doc_records "
                                         "WHERE index_name = ?", (index,))},
        }
        for table, key in (("entities", "id"), ("relationships", "id"),
                           ("communities", "id"), ("reports", "community_id")):
            out[table] = {i: json.loads(d) for i, d in q(
                f"SELECT {key}, data FROM {table} WHERE index_name = ?", (index,))}
        for ns in ("extraction_records", "lazy"):
            out[ns] = dict(q("SELECT key, value FROM records WHERE scope = ? AND namespace = ?",
                             (index, ns)).fetchall())
        return out
    finally:
        con.close()


def _assert_same_index(got: dict[str, Any], want: dict[str, Any]) -> None:
    """The index after incremental runs equals the one a full build made."""
    for key in ("search", "lineage", "docs", "entities", "relationships", "communities",
                "reports", "extraction_records", "lazy"):
        assert got[key] == want[key], key
    assert got["vectors"].keys() == want["vectors"].keys()
    for k, v in want["vectors"].items():  # batches may pad differently: not bit-equal
        a, b = (np.frombuffer(x, dtype=np.float32) for x in (got["vectors"][k], v))
        assert np.allclose(a, b, atol=1e-5), k


def _units_of(snap: dict[str, Any], path: str) -> tuple[str, ...]:
    (units,) = [u for _, p, u in snap["docs"].values() if p == path]
    return tuple(units)


def _fingerprint(app: App, embedder: Embedder, text: str) -> str:
    assert app.chat_model is not None
    indexer = GraphIndexer(app.index(), chat=app.chat_model, embedder=embedder,
                           counter=app.budget_tokenizer, config=app.config)
    return indexer.extractor.fingerprint(text)


def test_deleting_a_document_removes_its_items_and_equals_a_full_build(
    tmp_path: Path, embedder: Embedder
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            before = _snapshot(app.backend.location)
            gone = _units_of(before, "notes.txt")
            calls = len(server.requests_to("/chat/completions"))
            report = await _delete(app, embedder, [str(corpus / "notes.txt")])
            after = _snapshot(app.backend.location)
            stores = app.index()
            citing = await stores.graph.citing(list(gone))
            ada = (await stores.graph.get_entities([entity_id("Ada Lovelace")]))[0]
            ada_record = (await stores.search.get(Collection.ENTITIES, [ada.id]))[0]
            extraction_calls = [
                r for r in server.requests_to("/chat/completions")[calls:]
                if "<text>" in json.dumps(r.body) and "report_context" not in json.dumps(r.body)
            ]
            notes_key = _fingerprint(app, embedder, DOCS["notes.txt"])
            ada_key = _fingerprint(app, embedder, DOCS["ada.txt"])
        (corpus / "notes.txt").unlink()
        async with build_app(_config(server), tmp_path / "fresh") as fresh:
            await _index(fresh, embedder, [corpus])
            full = _snapshot(fresh.backend.location)
        return {"before": before, "after": after, "full": full, "gone": gone, "report": report,
                "citing": citing, "ada": ada, "ada_record": ada_record,
                "extraction_calls": extraction_calls, "notes_key": notes_key,
                "ada_key": ada_key}

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    report: DeleteReport = out["report"]
    before, after, gone = out["before"], out["after"], out["gone"]
    assert [d.path for d in report.deleted] == ["notes.txt"] and report.exit_code == 0
    assert report.text_units_removed == len(gone) == 1 and report.records_removed == 1
    assert report.graph is not None and report.graph.complete
    assert report.lazy is not None and not report.lazy.skipped_reason
    # removal makes no extraction call: every surviving unit's record is reused
    assert out["extraction_calls"] == [] and report.graph.records_reused == 3
    # nothing cites the deleted unit: text units, lineage, both stores, reports, records
    assert out["citing"] == ([], [])
    assert not any(key[1] in gone for key in after["search"])
    assert not any(u in gone for _, _, u in after["lineage"])
    assert all(not set(r["text_unit_ids"]) & set(gone) for r in after["reports"].values())
    assert out["notes_key"] in before["extraction_records"]
    assert out["notes_key"] not in after["extraction_records"]
    assert out["ada_key"] in after["extraction_records"]
    assert len(after["extraction_records"]) == len(before["extraction_records"]) - 1
    # PROGRAMMED was stated by notes.txt alone: gone from the graph store and the vectors
    programmed = [i for i, r in before["relationships"].items() if r["type"] == "PROGRAMMED"]
    assert len(programmed) == 1
    assert programmed[0] not in after["relationships"]
    assert ("relationships", programmed[0]) not in after["search"]
    # every community member is a stored entity
    members = {m for c in after["communities"].values() for m in c["member_ids"]}
    assert members <= set(after["entities"])
    # Ada, stated by ada.txt and notes.txt, keeps ada.txt's lineage and loses notes' facts
    ada = out["ada"]
    assert ada.text_unit_ids == _units_of(after, "ada.txt")
    assert "first published program" not in ada.description
    assert "first published program" not in out["ada_record"].text
    assert "first published program" in json.dumps(before["entities"])
    assert "first published program" not in repr(after)
    # and the whole index is what a full build of the three remaining documents makes
    _assert_same_index(after, out["full"])


def test_identical_documents_are_both_tracked_and_deleting_one_keeps_the_other(
    tmp_path: Path, embedder: Embedder
) -> None:
    corpus = write_docs(tmp_path / "corpus", {"ada.txt": DOCS["ada.txt"],
                                              "copy.txt": DOCS["ada.txt"],
                                              "kyoto.txt": DOCS["kyoto.txt"]})

    async def main(server: FakeOpenAIServer) -> tuple[dict[str, Any], ...]:
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _index(app, embedder, [corpus])
            before = _snapshot(app.backend.location)
            report = await _delete(app, embedder, ["copy.txt"])
            after = _snapshot(app.backend.location)
            key = _fingerprint(app, embedder, DOCS["ada.txt"])
        return before, after, {"first": first, "report": report, "key": key}

    with FakeOpenAIServer(reply=reply) as server:
        before, after, out = asyncio.run(main(server))
    assert out["first"].documents_new == 3 and len(before["docs"]) == 3
    assert out["first"].graph.units_extracted == 2  # the copy shares the record: no call
    copy_units, ada_units = _units_of(before, "copy.txt"), _units_of(before, "ada.txt")
    babbage = entity_id("Charles Babbage")
    assert set(before["entities"][babbage]["text_unit_ids"]) == {*copy_units, *ada_units}
    report: DeleteReport = out["report"]
    assert [d.path for d in report.deleted] == ["copy.txt"] and report.records_removed == 0
    assert out["key"] in after["extraction_records"]  # ada.txt still has that text
    assert after["entities"].keys() == before["entities"].keys()
    assert tuple(after["entities"][babbage]["text_unit_ids"]) == ada_units
    assert not any(u in copy_units for _, _, u in after["lineage"])
    # weights are recomputed from the surviving lineage: WORKED_WITH 8, not 16
    worked = [r for r in after["relationships"].values() if r["type"] == "WORKED_WITH"]
    assert [r["weight"] for r in worked] == [8.0]


def test_a_walk_deletes_what_is_gone_and_re_adding_brings_it_back_exactly(
    tmp_path: Path, embedder: Embedder
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[Any, ...]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            full = _snapshot(app.backend.location)
            (corpus / "kyoto.txt").unlink()
            only_deletion = await _index(app, embedder, [corpus])
            deleted = _snapshot(app.backend.location)
            (corpus / "kyoto.txt").write_text(DOCS["kyoto.txt"], encoding="utf-8")
            readded = await _index(app, embedder, [corpus])
            back = _snapshot(app.backend.location)
        return full, only_deletion, deleted, readded, back

    with FakeOpenAIServer(reply=reply) as server:
        full, only_deletion, deleted, readded, back = asyncio.run(main(server))
    # a run whose only change is a deletion applies it
    assert only_deletion.documents_deleted == 1 and only_deletion.documents_new == 0
    assert only_deletion.documents_missing == 0 and only_deletion.exit_code == 0
    assert only_deletion.text_units_deleted == 1 and only_deletion.records_removed == 1
    kyoto = {entity_id(n) for n in ("Kyoto", "Kyoto University", "Hideki Yukawa")}
    assert kyoto <= set(full["entities"]) and not kyoto & set(deleted["entities"])
    assert not any(k[1] in kyoto for k in deleted["search"])
    assert len(deleted["docs"]) == 3
    # re-adding it extracts it again (its record was collected) and restores every fact
    assert readded.documents_new == 1 and readded.graph is not None
    assert readded.graph.units_extracted == 1
    _assert_same_index(back, full)


def test_an_entity_whose_last_source_was_deleted_comes_back_with_the_new_facts_only(
    tmp_path: Path, embedder: Embedder
) -> None:
    from tests.stages.test_graph_build import _xml

    corpus = write_docs(tmp_path / "corpus")

    def temples(body: dict[str, Any]) -> str:
        text = "\n".join(m.get("content", "") for m in body["messages"])
        if "Kyoto hosts" in text and "<current_items>" not in text:
            return _xml([("Kyoto", "CITY", "An old capital with temples.")], [])
        return reply(body)

    async def main(server: FakeOpenAIServer) -> tuple[Any, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            (corpus / "kyoto.txt").unlink()
            await _index(app, embedder, [corpus])
            (corpus / "temples.txt").write_text("Kyoto hosts many temples.", encoding="utf-8")
            await _index(app, embedder, [corpus])
            kyoto = (await app.index().graph.get_entities([entity_id("Kyoto")]))[0]
            record = (await app.index().search.get(Collection.ENTITIES, [kyoto.id]))[0]
            return kyoto, record

    with FakeOpenAIServer(reply=temples) as server:
        kyoto, record = asyncio.run(main(server))
    assert (kyoto.type, kyoto.description) == ("CITY", "An old capital with temples.")
    assert len(kyoto.text_unit_ids) == 1
    assert "Japan" not in record.text and "LOCATION" not in record.text


def test_mass_deletion_guard_refuses_before_any_write_and_yes_accepts(
    tmp_path: Path, embedder: Embedder
) -> None:
    docs = {f"d{i}.txt": f"Document number {i} talks about owls and rivers." for i in range(4)}
    corpus = write_docs(tmp_path / "corpus", docs)

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with build_app(_config(None, methodologies=["lazy"]), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            db = app.backend.location
            before = _snapshot(db)
            # three of four gone (75% > 50%), plus a new file and an unreadable one
            for i in range(3):
                (corpus / f"d{i}.txt").unlink()
            (corpus / "new.txt").write_text("A new document about herons.", encoding="utf-8")
            (corpus / "dangling.txt").symlink_to(tmp_path / "nowhere.txt")
            with pytest.raises(ConfirmationRequiredError) as share:
                await _index(app, embedder, [corpus])
            out["share"] = share.value
            out["unchanged_after_share"] = _snapshot(db) == before
            # the folder is emptied (unmounted): refused too, whatever the share
            for f in corpus.iterdir():
                f.unlink()
            with pytest.raises(ConfirmationRequiredError) as empty:
                await _index(app, embedder, [corpus])
            out["empty"] = empty.value
            out["unchanged_after_empty"] = _snapshot(db) == before
            out["yes"] = await _index(app, embedder, [corpus], yes=True)
            out["after_yes"] = _snapshot(db)
        return out

    out = asyncio.run(main())
    share: ConfirmationRequiredError = out["share"]
    assert (share.would_delete, share.of, share.exit_code) == (3, 4, 2)
    assert "would delete 3 of 4 documents" in str(share) and "--yes" in str(share)
    assert "max_delete_share (0.5)" in str(share) and "Nothing was written" in str(share)
    assert "\n" not in str(share)
    assert out["unchanged_after_share"] and out["unchanged_after_empty"]
    assert "is empty now" in str(out["empty"]) and out["empty"].would_delete == 4
    yes: IndexReport = out["yes"]
    assert yes.documents_deleted == 4 and yes.exit_code == 0
    after = out["after_yes"]
    assert after["docs"] == {} and after["search"] == {} and after["lineage"] == set()


def test_a_share_under_the_limit_deletes_without_asking(tmp_path: Path, embedder: Embedder) -> None:
    docs = {f"d{i}.txt": f"Document number {i} talks about owls." for i in range(4)}
    corpus = write_docs(tmp_path / "corpus", docs)

    async def main() -> IndexReport:
        config = _config(None, methodologies=[], share=0.8)
        async with build_app(config, tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            for i in range(3):
                (corpus / f"d{i}.txt").unlink()
            return await _index(app, embedder, [corpus])

    report = asyncio.run(main())
    assert report.documents_deleted == 3 and report.text_units_deleted == 3


def test_unreadable_files_are_failed_never_deleted(tmp_path: Path, embedder: Embedder) -> None:
    docs = {"a.txt": "Owls hunt at night.", "b.txt": "Rivers flow to the sea.",
            "c.txt": "Herons stand in water."}
    corpus = write_docs(tmp_path / "corpus", docs)

    async def main() -> tuple[IndexReport, dict[str, Any], dict[str, Any]]:
        async with build_app(_config(None, methodologies=[]), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            before = _snapshot(app.backend.location)
            (corpus / "a.txt").unlink()  # a file that can no longer be read
            (corpus / "a.txt").symlink_to(tmp_path / "nowhere.txt")
            (corpus / "b.txt").write_bytes(bytes(range(256)) * 64)  # binary: fails to parse
            report = await _index(app, embedder, [corpus])
            return report, before, _snapshot(app.backend.location)

    report, before, after = asyncio.run(main())
    assert sorted(Path(f.path).name for f in report.failed) == ["a.txt", "b.txt"]
    assert report.documents_deleted == 0 and report.exit_code == 3
    statuses = {p: s for s, p, _ in after["docs"].values()}
    assert statuses == {"a.txt": "failed", "b.txt": "failed", "c.txt": "processed"}
    # their earlier text units stay searchable
    assert after["search"] == before["search"]


def test_a_file_skipped_by_the_walk_but_on_disk_is_kept(tmp_path: Path, embedder: Embedder) -> None:
    corpus = write_docs(tmp_path / "corpus", {"a.txt": "Owls hunt.", "b.md": "Rivers flow."})

    async def main() -> tuple[IndexReport, list[str], DeleteReport, list[str]]:
        async with build_app(_config(None, methodologies=[]), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
        config = _config(None, methodologies=[]).model_copy(update={
            "parsing": UkrConfig().parsing.model_copy(update={"exclude": ["*.md"]})})
        async with build_app(config, tmp_path / "p") as app:
            report = await _index(app, embedder, [corpus])
            paths = sorted(r.path for r in await app.index().registry.list_records())
            deleted = await _delete(app, embedder, ["b.md"], yes=True)
            left = sorted(r.path for r in await app.index().registry.list_records())
            return report, paths, deleted, left

    report, paths, deleted, left = asyncio.run(main())
    assert report.documents_kept_on_disk == 1 and report.documents_deleted == 0
    assert paths == ["a.txt", "b.md"]
    assert [d.path for d in deleted.deleted] == ["b.md"] and left == ["a.txt"]


def test_delete_by_id_path_and_unknown_names(tmp_path: Path, embedder: Embedder) -> None:
    docs = {f"d{i}.txt": f"Document {i} about owls." for i in range(5)}
    corpus = write_docs(tmp_path / "corpus", docs)
    other = write_docs(tmp_path / "other", {"d0.txt": "Another d0 elsewhere."})

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with build_app(_config(None, methodologies=["lazy"]), tmp_path / "p") as app:
            await _index(app, embedder, [corpus, other])
            records = {(Path(r.source_scope).name, r.path): r
                       for r in await app.index().registry.list_records()}
            target_id = records[("corpus", "d1.txt")].document_id
            out["one"] = await _delete(app, embedder, [
                target_id, str(corpus / "d2.txt"), "d3.txt", "nope.txt", "d0.txt"])
            out["left"] = sorted((Path(r.source_scope).name, r.path)
                                 for r in await app.index().registry.list_records())
            # more than half of what is left, without --yes: refused, nothing written
            with pytest.raises(ConfirmationRequiredError) as refused:
                await _delete(app, embedder, [str(corpus / "d0.txt"), str(corpus / "d4.txt"),
                                              str(other / "d0.txt")])
            out["refused"] = refused.value
            out["still"] = len(await app.index().registry.list_records())
            out["yes"] = await _delete(app, embedder, [str(corpus / "d0.txt"),
                                                       str(corpus / "d4.txt")], yes=True)
        return out

    out = asyncio.run(main())
    one: DeleteReport = out["one"]
    assert sorted(d.path for d in one.deleted) == ["d1.txt", "d2.txt", "d3.txt"]
    assert [u.path for u in one.unknown] == ["nope.txt", "d0.txt"] and one.exit_code == 3
    assert "no document" in one.unknown[0].reason
    assert "matches 2 documents" in one.unknown[1].reason
    assert one.lazy is not None and one.lazy.text_units == 3
    assert out["left"] == [("corpus", "d0.txt"), ("corpus", "d4.txt"), ("other", "d0.txt")]
    assert (out["refused"].would_delete, out["refused"].of) == (3, 3) and out["still"] == 3
    assert len(out["yes"].deleted) == 2 and out["yes"].exit_code == 0


class _FailingSearch:
    """A search index whose text-unit deletion raises once (a crash mid-removal)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.armed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def delete(self, collection: Collection, ids: Sequence[str]) -> int:
        if self.armed and collection is Collection.TEXT_UNITS:
            self.armed = False
            raise StoreError("disk I/O error (injected)")
        return int(await self._inner.delete(collection, ids))

    async def get(self, collection: Collection, ids: Sequence[str]) -> list[IndexRecord]:
        return list(await self._inner.get(collection, ids))


@pytest.mark.parametrize("file_back", [False, True])
def test_a_removal_killed_after_its_write_ahead_is_finished_by_the_next_run(
    tmp_path: Path, embedder: Embedder, file_back: bool
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[Any, ...]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            full = _snapshot(app.backend.location)
            stores = app.index()
            broken = IndexStores(stores.name, _FailingSearch(stores.search),  # type: ignore[arg-type]
                                 stores.graph, stores.registry, stores.records)
            with pytest.raises(StoreError, match="injected"):
                await _pipeline(app, embedder, broken).delete(["notes.txt"])
            crashed = _snapshot(app.backend.location)
            if not file_back:
                (corpus / "notes.txt").unlink()
            report = await _index(app, embedder, [corpus])
            return full, crashed, report, _snapshot(app.backend.location)

    with FakeOpenAIServer(reply=reply) as server:
        full, crashed, report, after = asyncio.run(main(server))
    notes = _units_of(full, "notes.txt")
    # the write-ahead record is there, with the units it was removing
    assert [(s, u) for s, p, u in crashed["docs"].values() if p == "notes.txt"] == [
        ("deleting", notes)]
    if file_back:  # the file is still there: processed again as if new
        assert report.documents_retried == 1 and report.documents_deleted == 0
        _assert_same_index(after, full)
        return
    assert report.documents_deleted == 1 and report.exit_code == 0
    assert all(p != "notes.txt" for _, p, _ in after["docs"].values())
    assert not any(k[1] in notes for k in after["search"])
    assert not any(u in notes for _, _, u in after["lineage"])
    assert "first published program" not in repr(after)


def test_without_the_llm_a_graph_index_keeps_its_documents(
    tmp_path: Path, embedder: Embedder
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[Any, ...]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            before = _snapshot(app.backend.location)
        async with build_app(_config(None), tmp_path / "p") as app:
            with pytest.raises(ConfigurationError) as refused:
                await _delete(app, embedder, ["notes.txt"])
            unchanged = _snapshot(app.backend.location) == before
            (corpus / "notes.txt").unlink()
            report = await _index(app, embedder, [corpus])
            return refused.value, unchanged, report, before, _snapshot(app.backend.location)

    with FakeOpenAIServer(reply=reply) as server:
        refused, unchanged, report, before, after = asyncio.run(main(server))
    assert "holds a knowledge graph" in str(refused) and "nothing was deleted" in str(refused)
    assert unchanged
    assert report.documents_deleted == 0 and report.documents_missing == 1
    assert "llm.kind" in report.deletion_note
    assert after["docs"] == before["docs"] and after["entities"] == before["entities"]
    assert DocStatus.PROCESSED.value in {s for s, _, _ in after["docs"].values()}


@pytest.mark.postgres
def test_deletion_and_its_recovery_on_postgres(
    tmp_path: Path, embedder: Embedder, postgres_url: str
) -> None:
    from tests.support.postgres import fresh_catalog

    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[Any, ...]:
        config = _config(server).model_copy(update={"stores": UkrConfig.model_validate({
            "stores": {"kind": "postgres", "postgres": {
                "url": postgres_url, "schema_name": fresh_catalog()}}}).stores})  # fmt: skip
        async with build_app(config, tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            stores = app.index()
            notes = next(r for r in await stores.registry.list_records()
                         if r.path == "notes.txt")
            broken = IndexStores(stores.name, _FailingSearch(stores.search),  # type: ignore[arg-type]
                                 stores.graph, stores.registry, stores.records)
            with pytest.raises(StoreError, match="injected"):
                await _pipeline(app, embedder, broken).delete([notes.document_id])
            counts = await stores.registry.status_counts()
            report = await _delete(app, embedder, [])  # finishes the removal
            citing = await stores.graph.citing(list(notes.text_unit_ids))
            ada = (await stores.graph.get_entities([entity_id("Ada Lovelace")]))[0]
            return (counts, report, citing, ada, await stores.search.count(Collection.TEXT_UNITS),
                    await stores.registry.status_counts())

    with FakeOpenAIServer(reply=reply) as server:
        counts, report, citing, ada, units, after = asyncio.run(main(server))
    assert counts == {"deleting": 1, "processed": 3}
    assert [d.path for d in report.deleted] == ["notes.txt"] and report.records_removed == 1
    assert report.graph is not None and report.graph.complete
    assert citing == ([], []) and units == 3 and after == {"processed": 3}
    assert len(ada.text_unit_ids) == 1 and "first published program" not in ada.description


def test_reprocessing_the_same_document_duplicates_no_description_fragment(
    tmp_path: Path, embedder: Embedder
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[Any, Any, Any]:
        async with build_app(_config(server), tmp_path / "p") as app:
            await _index(app, embedder, [corpus])
            first = _snapshot(app.backend.location)
            for _ in range(2):  # new bytes, same text: processed again as a changed document
                path = corpus / "kyoto.txt"
                path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
                again = await _index(app, embedder, [corpus])
                assert again.documents_changed == 1
            entities = await app.index().graph.get_entities(sorted(first["entities"]))
            return first, _snapshot(app.backend.location), entities

    with FakeOpenAIServer(reply=reply) as server:
        first, later, entities = asyncio.run(main(server))
    _assert_same_index(later, first)
    for entity in entities:  # no description holds the same fragment twice
        parts = [p.strip() for p in entity.description.split(".") if p.strip()]
        assert len(parts) == len(set(parts)), entity.description


def test_match_documents_accepts_a_unique_id_prefix() -> None:
    from unified_kg_rag.ingestion.deletion import match_documents

    records = [DocRecord(document_id=i, path=f"{i[:3]}.txt", source_scope="/s",
                         content_hash="h", status=DocStatus.PROCESSED)
               for i in ("abcdef0123456789", "abcdef01ffffffff")]
    matched, unknown = match_documents(records, ["abcdef0123", "abcdef01", "abc"])
    assert [r.document_id for r in matched] == ["abcdef0123456789"]
    assert [u.path for u in unknown] == ["abcdef01", "abc"]  # ambiguous, too short
