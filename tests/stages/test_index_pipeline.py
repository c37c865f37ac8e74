"""`IndexPipeline` on a real SQLite file with the real chunking tokenizer and a fake embedder."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.fakes import FakeEmbedder
from tests.support.corpus import BAD_INPUTS, CP949_TEXT, write_bad_inputs, write_good_docs
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection, DocRecord, DocStatus, SearchMode
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ports import DocRegistry
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.integration


def _app(project: Path, **overrides: object) -> App:
    return build_app(UkrConfig(**overrides), project)  # type: ignore[arg-type]


async def _index(app: App, paths: Sequence[Path], embedder: FakeEmbedder) -> IndexReport:
    pipeline = IndexPipeline(
        app.index("default"),
        embedder=embedder,
        chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers,
        config=app.config,
    )
    return await pipeline.run(paths)


def test_bad_inputs_fail_alone_and_everything_else_is_indexed(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_good_docs(corpus)
    write_bad_inputs(corpus)

    async def main() -> tuple[IndexReport, dict[str, int], list[str], list[str]]:
        async with _app(tmp_path) as app:
            report = await _index(app, [corpus], FakeEmbedder())
            stores = app.index("default")
            status = await stores.registry.status_counts()
            korean = await stores.search.search(
                Collection.TEXT_UNITS, query_text="한강", mode=SearchMode.LEXICAL, k=3
            )
            french = await stores.search.search(
                Collection.TEXT_UNITS, query_text="crème brûlée", mode=SearchMode.LEXICAL, k=3
            )
            return report, status, [h.fields["path"] for h in korean], [
                h.fields["path"] for h in french
            ]

    report, status, korean, french = asyncio.run(main())
    failed = {Path(f.path).name: f.reason for f in report.failed}
    assert set(failed) == set(BAD_INPUTS)
    for name, fragment in BAD_INPUTS.items():
        assert fragment in failed[name]
        assert "\n" not in failed[name] and failed[name].strip()
    assert report.exit_code == 3
    assert [Path(s.path).name for s in report.skipped] == ["image.png"]
    # three good documents, latin-1, cp949 and the 5 MB single line are indexed
    assert status == {"processed": 6, "failed": 4}
    assert korean == ["korean.txt"] and french[0] == "latin1.txt"
    assert report.text_units_written > 1000  # the 5 MB line became many text units


def test_second_run_on_an_unchanged_corpus_does_no_work(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_good_docs(corpus)

    async def main() -> tuple[IndexReport, IndexReport, int]:
        async with _app(tmp_path) as app:
            first = await _index(app, [corpus], FakeEmbedder())
            embedder = FakeEmbedder()
            second = await _index(app, [corpus], embedder)
            return first, second, embedder.embedded_texts

    first, second, embedded = asyncio.run(main())
    assert (first.documents_new, first.text_units_embedded) == (3, 3)
    assert (second.documents_unchanged, second.documents_new, second.documents_changed) == (3, 0, 0)
    assert embedded == 0 and second.text_units_written == 0


def test_changed_document_is_reindexed_and_its_stale_units_removed(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_good_docs(corpus)
    long_doc = corpus / "long.md"
    paragraphs = [f"Paragraph {i} talks about topic{i} at length. " * 30 for i in range(6)]
    long_doc.write_text("# Long\n\n" + "\n\n".join(paragraphs), encoding="utf-8")

    async def main() -> tuple[IndexReport, int, int, list[str]]:
        async with _app(tmp_path) as app:
            await _index(app, [corpus], FakeEmbedder())
            before = await app.index().search.count(Collection.TEXT_UNITS)
            long_doc.write_text(
                "# Long\n\n" + "\n\n".join([*paragraphs[:3], "A brand new ending about zebras."]),
                encoding="utf-8",
            )
            embedder = FakeEmbedder()
            report = await _index(app, [corpus], embedder)
            after = await app.index().search.count(Collection.TEXT_UNITS)
            hits = await app.index().search.search(
                Collection.TEXT_UNITS, query_text="topic5", mode=SearchMode.LEXICAL, k=5
            )
            return report, before, after, [h.text for h in hits]

    report, before, after, topic5 = asyncio.run(main())
    assert report.documents_changed == 1 and report.documents_unchanged == 3
    assert report.text_units_reused >= 1  # the unchanged opening keeps its vector
    assert report.text_units_removed >= 1 and after < before
    assert topic5 == []  # nothing of the removed paragraphs survives


def test_failed_document_is_retried_and_keeps_its_earlier_units(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    write_good_docs(corpus)

    async def main() -> tuple[IndexReport, IndexReport, dict[str, int], int]:
        async with _app(tmp_path) as app:
            await _index(app, [corpus], FakeEmbedder())
            (corpus / "owls.md").write_bytes(b"\x00\x01\x02" * 5000)  # now unreadable
            broken = await _index(app, [corpus], FakeEmbedder())
            still = await app.index().search.search(
                Collection.TEXT_UNITS, query_text="owls", mode=SearchMode.LEXICAL, k=3
            )
            (corpus / "owls.md").write_text("# Owls\n\nOwls again, now readable.", "utf-8")
            fixed = await _index(app, [corpus], FakeEmbedder())
            return broken, fixed, await app.index().registry.status_counts(), len(still)

    broken, fixed, status, still = asyncio.run(main())
    assert [Path(f.path).name for f in broken.failed] == ["owls.md"]
    assert still >= 1  # nothing already stored was lost
    assert fixed.documents_retried == 1 and not fixed.failed
    assert status == {DocStatus.PROCESSED.value: 3}


class _StopAfter(FakeEmbedder):
    """Raises CancelledError (what Ctrl-C delivers to the running task) on call ``n``."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.calls = 0
        self.n = n

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls += 1
        if self.calls == self.n:
            raise asyncio.CancelledError
        return await super().embed_documents(texts)


def test_interrupted_run_resumes_without_embedding_again(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    for i in range(30):
        (corpus / f"d{i:02d}.txt").write_text(f"Document {i} about subject{i}.", "utf-8")

    async def main() -> tuple[int, IndexReport, int, int]:
        async with _app(tmp_path, indexing={"batch_documents": 10}) as app:
            with pytest.raises(asyncio.CancelledError):
                await _index(app, [corpus], _StopAfter(3))
            stored = await app.index().search.count(Collection.TEXT_UNITS)
            embedder = FakeEmbedder()
            report = await _index(app, [corpus], embedder)
            total = await app.index().search.count(Collection.TEXT_UNITS)
            return stored, report, embedder.embedded_texts, total

    stored, report, embedded, total = asyncio.run(main())
    assert stored == 20  # two batches landed before the stop
    # the interrupted batch was written ahead as pending, so it is processed again
    assert report.documents_retried == 10 and report.documents_unchanged == 20
    assert embedded == 10 and total == 30


def test_missing_path_is_a_usage_error_before_any_write(tmp_path: Path) -> None:
    async def main() -> None:
        async with _app(tmp_path) as app:
            await _index(app, [tmp_path / "nope"], FakeEmbedder())

    with pytest.raises(UsageError, match="nope: no such file or directory"):
        asyncio.run(main())
    assert not (tmp_path / ".ukr").exists()


def test_explicit_unsupported_file_fails_with_the_supported_list(tmp_path: Path) -> None:
    target = tmp_path / "slides.pptx"
    target.write_bytes(b"PK\x03\x04")

    async def main() -> IndexReport:
        async with _app(tmp_path) as app:
            return await _index(app, [target], FakeEmbedder())

    report = asyncio.run(main())
    assert len(report.failed) == 1
    assert "unsupported extension '.pptx'" in report.failed[0].reason
    assert ".pdf" in report.failed[0].reason


def test_cp949_fixture_is_not_utf8() -> None:
    with pytest.raises(UnicodeDecodeError):
        CP949_TEXT.encode("cp949").decode("utf-8")


class _CrashOnCommit:
    """A doc registry that dies (like a killed process) when a batch is committed."""

    def __init__(self, inner: DocRegistry) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    async def put(self, records: Sequence[DocRecord]) -> None:
        if any(r.status is DocStatus.PROCESSED for r in records):
            raise asyncio.CancelledError
        await self._inner.put(records)


def test_a_run_killed_before_commit_is_repaired_even_after_the_user_reverts(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    codes = corpus / "codes.txt"
    codes.write_text("The launch code is ALPHA-1.", "utf-8")

    async def main() -> tuple[list[str], int]:
        async with _app(tmp_path) as app:
            await _index(app, [corpus], FakeEmbedder())
            codes.write_text("The launch code is BRAVO-2.", "utf-8")
            stores = app.index()
            crashing = dataclasses.replace(stores, registry=_CrashOnCommit(stores.registry))
            pipeline = IndexPipeline(
                crashing,
                embedder=FakeEmbedder(),
                chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers,
                config=app.config,
            )
            with pytest.raises(asyncio.CancelledError):
                await pipeline.run([corpus])  # BRAVO written, ALPHA deleted, never committed
            codes.write_text("The launch code is ALPHA-1.", "utf-8")  # the user undoes
            await _index(app, [corpus], FakeEmbedder())
            hits = await stores.search.search(
                Collection.TEXT_UNITS, query_text="launch code", mode=SearchMode.LEXICAL, k=5
            )
            return [h.text for h in hits], await stores.search.count(Collection.TEXT_UNITS)

    texts, count = asyncio.run(main())
    assert texts == ["The launch code is ALPHA-1."]
    assert count == 1  # no orphan of the killed run survives


def test_changing_chunk_settings_reindexes_unchanged_files(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "long.txt").write_text("Sentence number one is here. " * 200, "utf-8")

    async def main() -> tuple[int, IndexReport, int]:
        async with _app(tmp_path) as app:
            await _index(app, [corpus], FakeEmbedder())
            before = await app.index().search.count(Collection.TEXT_UNITS)
        async with _app(tmp_path, chunking={"size_tokens": 100, "overlap_tokens": 10}) as app:
            report = await _index(app, [corpus], FakeEmbedder())
            return before, report, await app.index().search.count(Collection.TEXT_UNITS)

    before, report, after = asyncio.run(main())
    assert report.documents_changed == 1
    assert after > before and report.text_units_removed == before


def test_bad_unicode_in_title_and_name_fails_nothing(tmp_path: Path) -> None:
    import os

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "surr.json").write_text('{"title": "bad \\udc80 title", "text": "jackals"}', "utf-8")
    (corpus / "good.txt").write_text("hyenas laugh", "utf-8")
    with open(os.fsencode(corpus) + b"/bad\xffname.txt", "w") as f:
        f.write("aardvarks dig")

    async def main() -> tuple[IndexReport, list[object]]:
        async with _app(tmp_path) as app:
            report = await _index(app, [corpus], FakeEmbedder())
            hits = await app.index().search.search(
                Collection.TEXT_UNITS, query_text="aardvarks", mode=SearchMode.LEXICAL, k=1
            )
            return report, [h.fields["path"] for h in hits]

    report, paths = asyncio.run(main())
    assert report.failed == [] and report.documents_new == 3
    assert paths == ["bad\\xffname.txt"]  # the odd byte escaped (issue 15 item 6(c))


def test_walks_skip_fifos_and_links_to_folders_and_reject_devices(tmp_path: Path) -> None:
    import os

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "ok.txt").write_text("fine", "utf-8")
    os.mkfifo(corpus / "pipe.txt")
    (tmp_path / "elsewhere").mkdir()
    (corpus / "linked").symlink_to(tmp_path / "elsewhere")
    (corpus / "dangling.txt").symlink_to(tmp_path / "missing.txt")

    async def main(paths: list[Path]) -> IndexReport:
        async with _app(tmp_path) as app:
            return await _index(app, paths, FakeEmbedder())

    report = asyncio.run(main([corpus]))
    skipped = {Path(s.path).name: s.reason for s in report.skipped}
    assert skipped == {"linked": "link to a folder (not followed)", "pipe.txt": "not a regular file"}
    assert [Path(f.path).name for f in report.failed] == ["dangling.txt"]
    assert report.documents_missing == 0
    with pytest.raises(UsageError, match="not a regular file or a folder"):
        asyncio.run(main([Path("/dev/null")]))
