"""`IndexPipeline`: files → documents → text units → vectors and BM25 rows, incrementally.

Stages, in order: discover (walk the paths) → hash (read bytes, SHA-256) → diff (doc registry,
by content hash) → remove documents no longer found (`ingestion.deletion`; its guard refuses
a mass deletion before any write) → for the new, changed and previously failed documents, in
batches: parse → chunk → embed (only text units not already stored with a vector) → write
(search index) → drop the stale text units of changed documents → commit (registry record
``processed``) → derived stages (`ingestion.derived`: graphs, extraction-record collection).
``--reset`` processes every document found and sweeps orphans (`ingestion.reset`).

Each run (and delete) has a run id on its log records and a span ``ukr.index.run`` with a
child per phase (``ukr.index.hash``, ``.diff``, ``.deletions``, ``.remove``, ``.documents``,
``.derived``): `util.telemetry.in_run_span`, `util.telemetry.traced`.

A document is committed only after its text units landed, so a run stopped at any point
(Ctrl-C, a crash) loses nothing: the next run finds the stored units by id and embeds only
what is missing. Units are embedded and stored in steps of ``indexing.embed_batch_units``
(`ingestion.embed_steps`), so a large document stopped half way keeps its finished steps;
`IndexPipeline.kept` says what the run stored.

Progress: ``read`` (files hashed), ``index`` (documents committed; a failed document is not
progress: it leaves the total and is reported on its own), ``load model`` (the embedding
model, a step of its own before the first unit is embedded) and ``embed`` (text units
embedded, per step; the total grows as batches of documents are chunked).

A document that fails is recorded ``failed`` with its reason (its earlier units, if any, are
kept) and tried again by the next run; the others proceed. An error escaping a batch's write
is isolated by bisection to the documents at fault (`ingestion.document_failures`); a
document that fails on ``indexing.quarantine_after`` consecutive runs is ``quarantined`` and
skipped until its content changes or the run is told ``retry_quarantined``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.extraction.schema import ExtractionSchema
from unified_kg_rag.domain.llm.roles import RoleModels
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.messages.transcripts import TranscriptDoc
from unified_kg_rag.domain.models import (
    Document,
    TextUnit,
    TokenUsage,
)
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.ingestion.commit import commit_batch
from unified_kg_rag.ingestion.corpus import CorpusFile, discover, read_file
from unified_kg_rag.ingestion.deletion import (
    delete_documents,
    remove_documents,
    walk_deletions,
    walked_scopes,
)
from unified_kg_rag.ingestion.derived import DerivedStages
from unified_kg_rag.ingestion.document_failures import (
    own_reason,
    record_document_failure,
    write_isolating,
)
from unified_kg_rag.ingestion.embed_steps import EMBED_TASK, KeptWork, UnitSteps
from unified_kg_rag.ingestion.estimating import estimate_index
from unified_kg_rag.ingestion.graph.estimate import CostEstimate
from unified_kg_rag.ingestion.lease import fenced, held_lease
from unified_kg_rag.ingestion.messages import (
    MessagePlan,
    MessageRun,
    archive_claim,
    archive_targets,
    forget_run,
    plan_messages,
)
from unified_kg_rag.ingestion.prepare import (
    failure_reason,
    fingerprint,
    parse_and_chunk,
)
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ingestion.report import DeleteReport, FailedDocument, IndexReport
from unified_kg_rag.ingestion.reset import check_reset, sweep_orphan_units
from unified_kg_rag.ingestion.units import (
    text_unit_record,
)
from unified_kg_rag.ports import (
    ChatModel,
    DocumentParser,
    Embedder,
    IndexStores,
    KeyphraseExtractor,
    MessageSource,
    ProgressReporter,
    TokenCounter,
)
from unified_kg_rag.util.aio import map_bounded
from unified_kg_rag.util.telemetry import in_run_span, set_current_attribute, traced

__all__ = ["IndexPipeline", "text_unit_record"]

logger = logging.getLogger(__name__)

_IO_CONCURRENCY = 4


@dataclass(frozen=True)
class _Hashed:
    file: CorpusFile
    content_hash: str
    transcript: TranscriptDoc | None = None


class IndexPipeline:
    """Indexes files into one index.

    Args:
        stores: the store ports of the target index.
        embedder: the embedding model.
        chunk_tokenizer: the tokenizer text units are measured in.
        parsers: parser per file extension.
        config: the effective configuration (``parsing``, ``chunking``, ``indexing``,
            ``graph``).
        progress: receives progress events (optional).
        chat_model: the wrapped LLM; None (``llm.kind: none``) indexes text units only.
        models: the model of each role (``llm.roles``: extraction, summaries, reports);
            None: ``chat_model`` serves every role.
        budget_tokenizer: token counter for prompt budgets (default: the chunk tokenizer).
        project_dir: where relative prompt files of the configuration are looked up.
        force_rebuild: ask the LLM again for every extraction record and rebuild the graph
            (with ``run(reset=True)``: a reset that re-extracts everything too).
        keyphrase_extractor: the `lazy` concept graph's extractor (default: YAKE).
        message_sources: the message sources, in dispatch order (`ingestion.messages`).
        prompts: the prompts in effect (None: read from ``config`` when needed).
        extraction_schema: the extraction schema (None: no schema).
    """

    def __init__(
        self,
        stores: IndexStores,
        *,
        embedder: Embedder,
        chunk_tokenizer: TokenCounter,
        parsers: Mapping[str, DocumentParser],
        config: UkrConfig,
        progress: ProgressReporter | None = None,
        chat_model: ChatModel | None = None,
        models: RoleModels[ChatModel] | None = None,
        budget_tokenizer: TokenCounter | None = None,
        project_dir: Path | None = None,
        force_rebuild: bool = False,
        keyphrase_extractor: KeyphraseExtractor | None = None,
        message_sources: Sequence[MessageSource] = (),
        prompts: PromptLibrary | None = None,
        extraction_schema: ExtractionSchema | None = None,
    ) -> None:
        self._stores = stores
        self._sources = list(message_sources)
        self._budget_tokenizer = budget_tokenizer or chunk_tokenizer
        self._embedder = embedder
        self._tokenizer = chunk_tokenizer
        self._parsers = parsers
        self._config = config
        self._progress: ProgressReporter = progress or NULL_PROGRESS
        self.kept = KeptWork()
        """What the current (or last) run stored; an interrupted run's message says it."""
        self.lease_holder: str | None = None
        """The holder name runs take the lease under (None: a new one per run); the service
        sets its job's, so the lease the job took when it was accepted passes to the run."""
        self._steps = UnitSteps(embedder, step_units=config.indexing.embed_batch_units,
                                progress=self._progress, kept=self.kept)
        self._to_index = 0  # the ``index`` task's total: documents to index, less failures
        self._derived = DerivedStages(  # graphs and record collection after the text units
            config, embedder=embedder, budget_tokenizer=self._budget_tokenizer,
            progress=self._progress, chat_model=chat_model, models=models,
            project_dir=project_dir,
            force_rebuild=force_rebuild, keyphrase_extractor=keyphrase_extractor,
            prompts=prompts,
            extraction_schema=extraction_schema,
        )

    @in_run_span
    async def run(
        self,
        paths: Sequence[Path],
        *,
        confirm_deletions: bool = False,
        reset: bool = False,
        messages: MessageRun | None = None,
        retry_quarantined: bool = False,
    ) -> IndexReport:
        """Index the files under ``paths``; only new, changed and previously failed ones work.

        Documents of a walked folder that are no longer found are deleted (with everything
        derived from them); a file found but unreadable is ``failed``, never deleted.

        With ``reset``, the index is rebuilt in place (`ingestion.reset`): every document found
        is processed again as if changed (units with the same id keep their stored vector),
        text units no document names are deleted, and the graphs are derived again from the
        stored extraction records (the response cache answers unchanged summaries and
        reports), their stale items removed as a diff. Nothing is emptied first, so queries
        keep working; a reset of an unchanged corpus makes no model call and embeds nothing.
        With ``force_rebuild`` too, every extraction is asked again.

        Args:
            paths: files and folders.
            confirm_deletions: delete even when the mass-deletion guard would ask (``--yes``).
            reset: rebuild the whole index in place (``--reset``).
            messages: options of the message archives among ``paths`` (`ingestion.messages`:
                archives are found by their source's probe, or all named files with
                ``--source``; their transcripts are the documents indexed).
            retry_quarantined: try the quarantined documents and text units again
                (``--retry-quarantined``); otherwise they are skipped until their content
                changes.

        Returns:
            The run's `IndexReport`; ``report.exit_code`` is 3 when any document, extraction
            or report failed, and 1 when the graph build stopped on a model error
            (``report.graph.error``: authentication, a server down after the retries); the
            text units are stored either way.

        Raises:
            UsageError: a path does not exist (before anything is read or written).
            ConfirmationRequiredError: a walked folder is empty or lost more than
                ``indexing.max_delete_share`` of its documents (before anything is written).
            ConfigurationError: ``reset`` on an index holding an LLM graph that this
                configuration cannot rebuild (before anything is written).
            BuildInProgress: another run is writing this index (before anything is written).
            StoreError: a store failed (what was committed stays committed).
            EmbeddingModelError: the embedding model failed or differs from the index's.
            asyncio.CancelledError: the run was interrupted; the next run resumes it.
        """
        started = time.perf_counter()
        set_current_attribute("ukr.index.name", self._stores.name)
        report = IndexReport(index=self._stores.name, reset=reset)
        run = messages or MessageRun()
        found, skipped = discover(
            paths, parsing=self._config.parsing, extensions=sorted(self._parsers),
            claim=archive_claim(self._sources, run),
        )
        files = [f for f in found if f.message_source is None]
        archives = [f for f in found if f.message_source is not None]
        report.skipped = [FailedDocument(path=s.display_path, reason=s.reason) for s in skipped]
        report.documents_found = len(files)
        roots = walked_scopes(paths, self._config.parsing)
        share = self._config.indexing.max_delete_share
        async with self._writing() as usage:
            rebuilds = self._derived.rebuilds_graph
            if reset:
                await check_reset(self._stores, rebuilds=rebuilds)
            hashed, unread = await traced("ukr.index.hash", self._hash_all(files), files=len(files))
            todo = await traced("ukr.index.diff", self._diff(
                hashed, report, reset=reset, retry=retry_quarantined))
            doomed = await traced("ukr.index.deletions", walk_deletions(
                self._stores, files, roots, report, rebuilds=rebuilds,
                share=share, confirm=confirm_deletions,
            ))
            plan = MessagePlan()
            if archives or run.forget:
                plan = await plan_messages(
                    self._stores, archives, self._sources, run, report,
                    fingerprint=lambda h: fingerprint(self._config, h, transcript=True),
                    reset=reset, rebuilds=rebuilds, share=share, confirm=confirm_deletions,
                )
                todo += [_Hashed(f, h, doc) for f, h, doc in plan.todo]
            # the guards refuse above: nothing is written before this line
            for file, error in unread:  # not counted toward quarantine: reading costs nothing
                await self._record_failure(file, "", failure_reason(file, error), report)
            removal = await traced("ukr.index.remove", remove_documents(
                self._stores, [*doomed, *plan.replaced], found={h.file.document_id for h in todo}
            ))
            if archives or run.forget:
                await plan.write_spans(self._stores.records)
            if todo:
                await traced("ukr.index.documents", self._process(todo, report),
                             documents=len(todo))  # fmt: skip
            if archives or run.forget:  # transcripts go once their replacements are indexed
                removal.add(await plan.finish(self._stores))
            report.documents_deleted = len(removal.documents)
            report.text_units_deleted = removal.text_units_removed
            if reset:
                report.text_units_orphaned = await sweep_orphan_units(self._stores)
            await traced("ukr.index.derived", self._derived.run(
                self._stores, report, rebuild=reset, retry_quarantined=retry_quarantined
            ))
        report.usage = usage
        report.elapsed_s = round(time.perf_counter() - started, 3)
        return report

    @in_run_span
    async def delete(self, targets: Sequence[str], *, confirm: bool = False) -> DeleteReport:
        """Remove documents by id or path, then derive the graphs again without them.

        See `ingestion.deletion.delete_documents` (targets, write-ahead, what is derived). A
        target naming a message archive of the index (its path) drops that archive from the
        message corpus: the other archives are read and rendered again, and the transcripts no
        longer rendered are deleted (`DeleteReport.archives`).

        Args:
            targets: document ids or paths.
            confirm: delete even more than ``indexing.max_delete_share`` of the index.

        Returns:
            The `DeleteReport` (``exit_code`` 3 when a target named no document).

        Raises:
            ConfirmationRequiredError: more than the share without ``confirm``.
            ConfigurationError: the index's LLM graph cannot be rebuilt by this configuration.
            BuildInProgress: another run is writing this index.
            StoreError: a store failed (the next run finishes the removal).
        """
        started = time.perf_counter()
        forget = await archive_targets(self._stores.records, targets)
        archives = None
        if forget:
            archives = await self.run([], confirm_deletions=confirm,
                                      messages=forget_run(self._config.messages, forget))
            targets = [t for t in targets if t not in forget]
        if forget and not targets:
            return DeleteReport(index=self._stores.name, archives=archives, usage=(
                archives.usage if archives else TokenUsage()), elapsed_s=round(
                time.perf_counter() - started, 3))
        async with self._writing() as usage:
            report = await delete_documents(
                self._stores, targets, self._derived,
                share=self._config.indexing.max_delete_share, confirm=confirm,
            )
        report.archives = archives
        report.usage = usage
        report.elapsed_s = round(time.perf_counter() - started, 3)
        return report

    async def estimate(
        self, paths: Sequence[Path], *, messages: MessageRun | None = None
    ) -> CostEstimate:
        """Return the model calls and tokens indexing ``paths`` would spend; no call, no write.

        Files are read, parsed and chunked; text units whose extraction record is stored
        count as free (see `ingestion.graph.estimate` for what is exact and what is rough).
        With `raptor` and LLM summaries, the tree's summary calls are added (rough).
        Message archives among ``paths`` are rendered alone (without the archives the index
        was built from before) and their transcripts chunked.

        Raises:
            UsageError: no LLM is configured, or a path does not exist.
        """
        return await estimate_index(
            paths, stores=self._stores, config=self._config, parsers=self._parsers,
            sources=self._sources, parse=self._parse_entry, derived=self._derived,
            counter=self._budget_tokenizer, messages=messages,
        )  # fmt: skip

    # ----------------------------------------------------------------- stages

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[TokenUsage]:
        """Hold the index's lease (before the first registry read), fence the stores, meter."""
        lease = held_lease(
            self._stores.registry, self._stores.name, ttl_s=self._config.indexing.lease_s,
            holder=self.lease_holder,
        )
        with usage_scope() as usage:
            async with lease as fence:
                stores, self._stores = self._stores, fenced(self._stores, fence)
                try:
                    yield usage
                finally:
                    self._stores = stores

    async def _hash_all(
        self, files: list[CorpusFile]
    ) -> tuple[list[_Hashed], list[tuple[CorpusFile, BaseException | None]]]:
        """Hash every file; return the hashed ones and the unreadable ones (not recorded yet)."""
        self._progress.start("read", len(files))

        async def hash_one(file: CorpusFile) -> _Hashed:
            _, digest = await asyncio.to_thread(read_file, file, parsing=self._config.parsing)
            self._progress.advance("read")
            return _Hashed(file, self._fingerprint(digest))

        results = await map_bounded(files, hash_one, concurrency=_IO_CONCURRENCY)
        self._progress.finish("read")
        hashed = [r.value for r in results if r.value is not None]
        return hashed, [(r.item, r.error) for r in results if r.value is None]

    def _fingerprint(self, content_hash: str) -> str:
        return fingerprint(self._config, content_hash)

    async def _diff(
        self, hashed: list[_Hashed], report: IndexReport, *, reset: bool, retry: bool
    ) -> list[_Hashed]:
        """Return the documents to process: new, changed, failed before (all with ``reset``).

        Quarantined documents at the content they failed on are skipped (counted in
        ``documents_quarantined``), by a reset too, unless ``retry``.
        """
        by_scope: dict[str, dict[str, _Hashed]] = {}
        for h in hashed:
            by_scope.setdefault(h.file.source_scope, {})[h.file.document_id] = h
        todo: list[_Hashed] = []
        for scope, docs in by_scope.items():
            delta = await self._stores.registry.diff(
                scope, {doc_id: h.content_hash for doc_id, h in docs.items()}
            )
            report.documents_new += len(delta.new)
            report.documents_changed += len(delta.changed)
            report.documents_retried += len(delta.failed_before)
            quarantined = set(delta.quarantined)
            report.documents_unchanged += len(delta.unchanged) - len(quarantined)
            wanted = set(delta.new) | set(delta.changed) | set(delta.failed_before)
            if reset:
                wanted |= set(delta.unchanged) - quarantined
            if retry:
                wanted |= quarantined
                report.documents_released += len(quarantined)
            else:
                report.documents_quarantined += len(quarantined)
            todo.extend(h for doc_id, h in docs.items() if doc_id in wanted)
        return todo

    async def _process(self, todo: list[_Hashed], report: IndexReport) -> None:
        await self._stores.search.bind_embedding(self._embedder.model_id, self._embedder.dimension)
        batch_size = self._config.indexing.batch_documents
        self._to_index = len(todo)
        self._progress.start("index", self._to_index)
        for i in range(0, len(todo), batch_size):
            batch = todo[i : i + batch_size]
            parsed = await map_bounded(batch, self._parse_and_chunk, concurrency=_IO_CONCURRENCY)
            ready: list[tuple[_Hashed, Document, list[TextUnit]]] = []
            for r in parsed:
                if r.value is None:
                    reason = failure_reason(r.item.file, r.error)
                    await self._record_failure(r.item.file, r.item.content_hash, reason, report)
                    self._not_progress(report)
                else:
                    doc, units = r.value
                    ready.append((r.item, doc, units))
            if ready:
                await write_isolating(ready, self._committer(report), self._write_failed(report))
        self._progress.finish("index")
        self._progress.finish(EMBED_TASK)

    def _not_progress(self, report: IndexReport) -> None:
        """Take a failed document out of the ``index`` total; say how many failed."""
        self._to_index -= 1
        self._progress.start("index", self._to_index)
        self._progress.advance("index", 0, note=f"{len(report.failed)} failed")

    def _committer(
        self, report: IndexReport
    ) -> Callable[[Sequence[tuple[_Hashed, Document, list[TextUnit]]]], Awaitable[None]]:
        """Return the writer of (part of) a batch (`ingestion.commit.commit_batch`)."""

        async def commit(part: Sequence[tuple[_Hashed, Document, list[TextUnit]]]) -> None:
            await commit_batch(self._stores, self._config, self._embedder,
                               [(item.file, doc, units) for item, doc, units in part], report,
                               self._steps)
            self._progress.advance("index", len(part))

        return commit

    def _write_failed(
        self, report: IndexReport
    ) -> Callable[[tuple[_Hashed, Document, list[TextUnit]], BaseException], Awaitable[None]]:
        """Return the recorder of a document whose write failed alone (bisection's culprit)."""

        async def fail(entry: tuple[_Hashed, Document, list[TextUnit]],
                       error: BaseException) -> None:
            item = entry[0]
            await self._record_failure(item.file, item.content_hash, own_reason(error), report)
            self._not_progress(report)

        return fail

    async def _parse_entry(
        self, file: CorpusFile, transcript: TranscriptDoc | None
    ) -> tuple[Document, list[TextUnit]]:
        return await self._parse_and_chunk(_Hashed(file, "", transcript))

    async def _parse_and_chunk(self, item: _Hashed) -> tuple[Document, list[TextUnit]]:
        return await asyncio.to_thread(self._parse_and_chunk_sync, item)

    def _parse_and_chunk_sync(self, item: _Hashed) -> tuple[Document, list[TextUnit]]:
        return parse_and_chunk(
            item.file, item.transcript, config=self._config,
            tokenizer=self._tokenizer, parsers=self._parsers,
        )

    async def _record_failure(
        self, file: CorpusFile, content_hash: str, reason: str, report: IndexReport
    ) -> None:
        await record_document_failure(
            self._stores, self._config, file, content_hash, reason, report, self._progress
        )
