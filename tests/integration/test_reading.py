"""`retrieval.reading.read_document` over a real index: a long document cut into overlapping
text units (real SQLite stores, real embedder), read back whole and in windows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from unified_kg_rag.bootstrap import build_app, load_project_config
from unified_kg_rag.retrieval.reading import DocumentText, read_document
from unified_kg_rag.util.errors import NotFoundError

pytestmark = pytest.mark.integration

SENTENCES = [f"Paragraph {i} tells of owl number {i}, who hunts vole {i} at dusk." for i in range(80)]


def _text(doc: DocumentText) -> str:
    out = ""
    for seg in doc.segments:
        out += " " * (seg.start_char - (doc.segments[0].start_char + len(out))) + seg.text
    return out


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("reading")
    (project / "ukr.yaml").write_text(
        "chunking:\n  size_tokens: 64\n  overlap_tokens: 16\nindexing:\n  methodologies: []\n",
        encoding="utf-8")
    (project / "docs").mkdir()
    (project / "docs" / "owls.txt").write_text(" ".join(SENTENCES), encoding="utf-8")

    async def index() -> None:
        async with build_app(load_project_config(project), project) as app:
            report = await app.index_pipeline().run([project / "docs"])
            assert report.failed == []

    asyncio.run(index())
    return project


def _read(project: Path, **kwargs: object) -> DocumentText:
    async def go() -> DocumentText:
        async with build_app(load_project_config(project), project) as app:
            stores = app.index()
            (record,) = await stores.registry.list_records()
            document_id = str(kwargs.pop("document_id", record.document_id))
            return await read_document(stores, document_id, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(go())


def test_the_whole_document_reads_back_without_the_units_overlap(indexed: Path) -> None:
    whole = _read(indexed, max_chars=1_000_000)
    assert whole.text_units >= 5  # cut into several overlapping units
    assert whole.more_before is False and whole.more_after is False
    assert whole.segments[0].start_char == 0
    assert _text(whole) == " ".join(SENTENCES)
    assert all(a.end_char <= b.start_char for a, b in zip(whole.segments, whole.segments[1:],
                                                           strict=False))


def test_a_window_holds_the_passage_and_says_what_is_beyond(indexed: Path) -> None:
    text = " ".join(SENTENCES)
    start = text.index("Paragraph 40 ")
    end = start + len(SENTENCES[40])
    doc = _read(indexed, start_char=start, end_char=end, max_chars=200)
    assert (doc.passage_start, doc.passage_end) == (start, end)
    assert doc.more_before and doc.more_after and doc.first_unit > 0
    window = _text(doc)
    offset = doc.segments[0].start_char
    assert window[start - offset : end - offset] == SENTENCES[40]
    assert sum(len(s.text) for s in doc.segments) < len(text) // 2


def test_a_passage_by_its_units_and_an_unknown_document(indexed: Path) -> None:
    whole = _read(indexed, max_chars=1_000_000)
    unit, before = whole.segments[3], whole.segments[2]
    doc = _read(indexed, text_unit_ids=[unit.text_unit_id], max_chars=1)
    # the unit's own start: the text it shares with the unit before it is in the passage
    assert doc.passage_start is not None and doc.passage_start < unit.start_char
    assert doc.passage_end == unit.end_char
    assert [s.text_unit_id for s in doc.segments] == [before.text_unit_id, unit.text_unit_id]
    with pytest.raises(NotFoundError, match="no document 'nope'"):
        _read(indexed, document_id="nope")
