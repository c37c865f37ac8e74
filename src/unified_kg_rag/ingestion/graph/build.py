"""`GraphIndexer`: builds the LLM knowledge graph of an index from its stored text units.

Runs after the text-unit pipeline. The graph is derived from the extraction records of every
text unit the index holds (seed 000 §4.1: resolution starts from the merge of all records),
so it never depends on batching or run history. A build whose inputs (the text units, the
model, prompts, settings, methodologies and the quarantined extractions) match the last
complete build is skipped; a build with failed units or reports is written (so queries see
what succeeded) but not recorded as complete, so the next run asks again for what failed and
only that. After a document is removed, the build derives every item again from the surviving
units' records (no stale fact survives). Each build counts the units' consecutive failures
(`ingestion.graph.unit_attempts`: quarantine) and sweeps the extraction records no current
text unit reads (`ingestion.graph.record_sweep`) before it records itself.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.extraction.schema import ExtractionSchema
from unified_kg_rag.domain.graph.claims import Claim
from unified_kg_rag.domain.graph.communities import detect_communities
from unified_kg_rag.domain.graph.resolution import resolve_graph
from unified_kg_rag.domain.index.attempts import UnitAttempts, is_quarantined
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE
from unified_kg_rag.domain.index.methodologies import builds_artifact
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.models import CommunityReport, Entity, Relationship
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.ingestion.centrality import store_entity_pagerank
from unified_kg_rag.ingestion.units import UnitText, load_units, processed_unit_paths
from unified_kg_rag.ports import (
    ChatModel,
    Embedder,
    IndexStores,
    ProgressReporter,
    TokenCounter,
)
from unified_kg_rag.util.hashing import sha256_json

from .build_models import models_besides_extraction
from .claims import CLAIM_PROMPT, ClaimExtractor, claim_stage, sweep_claims_off
from .delta import context_fingerprints, delta_partition, load_previous, save_partition
from .extract import RECORDS_NAMESPACE, ExtractionOutcome
from .inputs import graph_extractor, graph_methodologies, graph_settings, shaping_key
from .record_sweep import current_keys, sweep_records
from .report import GraphBuildReport, StageReport, UnitFailure
from .reports import ReportWriter
from .schema_step import SchemaStep
from .shaping import shape_records
from .summarize import DescriptionSummarizer, summary_tasks
from .unit_attempts import UnitLedger
from .write import GraphItems, GraphWriter

__all__ = ["BUILD_KEY", "GraphIndexer", "graph_extractor", "graph_methodologies"]

logger = logging.getLogger(__name__)

BUILD_KEY = "graph_build"
"""RecordStore ``index`` key of the last graph build's input digest and completeness."""


class GraphIndexer:
    """Extract → glean → ground → resolve → claims → summarize → communities → reports → write.

    Args:
        stores: the index's stores (fenced by the run's lease).
        chat: the wrapped chat model of extraction and gleaning (the ``extraction`` role).
        summary_chat: the model of description summaries (``summaries``); None: ``chat``.
        report_chat: the model of community reports (``reports``); None: ``chat``.
        embedder: the index's embedding model.
        counter: token counter for budgets (the script-aware estimate).
        config: the effective configuration (``graph``, ``UkrConfig.methodologies()``).
        project_dir: where relative prompt files are looked up (when ``prompts`` is None).
        progress: receives progress events.
        schema: the extraction schema (``graph.extraction.schema_sources``, loaded by the
            composition root); None: no schema.
        prompts: the prompts in effect (None: read from ``config``, `load_prompt_library`).
    """

    def __init__(
        self,
        stores: IndexStores,
        *,
        chat: ChatModel,
        summary_chat: ChatModel | None = None,
        report_chat: ChatModel | None = None,
        embedder: Embedder,
        counter: TokenCounter,
        config: UkrConfig,
        project_dir: Path | None = None,
        progress: ProgressReporter | None = None,
        schema: ExtractionSchema | None = None,
        prompts: PromptLibrary | None = None,
    ) -> None:
        graph = config.graph
        library = prompts if prompts is not None else load_prompt_library(config, project_dir)
        self._stores = stores
        self._chat = chat
        self._summary_chat = summary_chat or chat
        self._report_chat = report_chat or chat
        self._embedder = embedder
        self._config = config
        self._progress = progress
        self.methodologies = graph_methodologies(config.methodologies())
        fanout = graph.unit_concurrency
        self.extractor = graph_extractor(config, chat, stores.records, schema=schema,
                                         prompts=library)  # fmt: skip
        self.schema_step = SchemaStep(schema, graph.extraction, chat, prompts=library)
        self.extraction_template = self.extractor.extraction_template
        self.gleaning_template = self.extractor.gleaning_template
        self.ledger = UnitLedger(stores.records, config.indexing.quarantine_after)
        self._summary_template = library.get("summarize_descriptions.v1")
        self.summarizer = DescriptionSummarizer(
            self._summary_chat, counter, graph.resolution, template=self._summary_template,
            concurrency=fanout,
        )
        self._report_template = library.get("community_report.v1")
        self.reporter = ReportWriter(
            self._report_chat, counter, graph.reports, template=self._report_template,
            concurrency=fanout,
        )
        # the extraction model states the claims too
        self._claims_of: Callable[[], ClaimExtractor] = lambda: ClaimExtractor(
            chat, stores.records, graph.claims, concurrency=fanout,
            template=library.get(CLAIM_PROMPT), quarantine_after=config.indexing.quarantine_after,
        )  # fmt: skip
        self.claim_extractor = self._claims_of() if graph.claims.enabled else None

    def digest(self, unit_ids: list[str], quarantined: Iterable[str] = ()) -> str:
        """Return the digest of a build's inputs: text units, models, prompts, settings.

        ``quarantined`` (the fingerprints of the quarantined extractions) enters only when
        not empty, so releasing them makes the next run build again. The extraction model
        enters through the extractor's fingerprint; the summary and report models enter
        only when they differ from it (`role_models`), so a one-model index keeps its digest.
        """
        value: dict[str, object] = {
            "units": sorted(unit_ids),
            "extraction": self.extractor.fingerprint(""),
            "summary_prompt": self._summary_template,
            "report_prompt": self._report_template,
            "graph": graph_settings(self._config, claims=self.claim_extractor is not None),
            "methodologies": self.methodologies,
            "embedding": self._embedder.model_id,
        }
        if self.claim_extractor is not None:
            value["claim_prompt"] = self.claim_extractor.template
        if held := sorted(quarantined):
            value["quarantined"] = held
        if models := self.role_models():
            value["models"] = models
        if (schema := self.schema_step.fingerprint) is not None:
            value["schema"] = schema
        return sha256_json(value)

    def role_models(self) -> dict[str, str]:
        """The summary and report models that differ from the extraction model (by id)."""
        return models_besides_extraction(self._chat, self._summary_chat, self._report_chat)

    def _shaping_key(self) -> str:
        """The grounding, threshold and schema settings communities are clustered under."""
        return shaping_key(self._config, self.schema_step.fingerprint)

    async def inputs_changed(self) -> bool:
        """True when the next `run` builds, False when it would skip as current.

        The stored units, settings, models or prompts differ from the last complete build's.

        What ``ukr index --estimate`` reads to count report calls when nothing is extracted
        (a new report model or prompt, claims turned on or off).
        """
        paths = await processed_unit_paths(self._stores)
        digest = self.digest(list(paths), await self.ledger.quarantined())
        return not _is_current(await self._last_build(), digest)

    async def _last_build(self) -> dict[str, object]:
        """The last build's record (digest, completeness, records left); {} before any."""
        raw = await self._stores.records.get(INDEX_NAMESPACE, BUILD_KEY)
        value: dict[str, object] = json.loads(raw) if raw else {}
        return value

    async def run(
        self, *, force: bool = False, rebuild: bool = False, retry_quarantined: bool = False
    ) -> GraphBuildReport:
        """Build (or skip, when current) the index's graph.

        Args:
            force: re-ask the model for every extraction record (``--force-rebuild``) and
                build even when the inputs are unchanged.
            rebuild: build even when the inputs are unchanged, reusing the stored extraction
                records and the response cache (``--reset``: no call for unchanged text).
            retry_quarantined: send the quarantined extractions too
                (``--retry-quarantined``).

        Raises:
            ModelError: the model failed in a way that is not one item's own (authentication,
                server down); records and cached replies so far are kept for the next run.
            StoreError: a store failed.
        """
        report = GraphBuildReport(methodologies=self.methodologies)
        paths = await processed_unit_paths(self._stores)
        report.text_units = len(paths)
        held = {} if retry_quarantined else await self.ledger.quarantined()
        digest = self.digest(list(paths), held)
        last = await self._last_build()
        if not (force or rebuild) and _is_current(last, digest):
            await self._skip(report, paths, held, last)
            return report
        units = await load_units(self._stores, paths)

        with self._stage(report, "extract") as stage:
            outcome = await self.extractor.run(
                units, force=force, progress=self._progress, quarantined=held.keys()
            )
            stage.items = outcome.extracted
        attempts = await self.ledger.update(outcome, paths) if _counted(outcome) else {}
        self._extraction_figures(report, outcome, paths, attempts)
        report.records_swept = await self._sweep(units)

        with self._stage(report, "ground") as stage:
            rules = self._config.graph.extraction.shaping_rules
            shaped = shape_records(units, outcome.records, rules)
            report.shaping, stage.items = shaped.counts, shaped.units_changed

        with self._stage(report, "resolve") as stage:
            records = [(u.id, shaped.records[u.id]) for u in units if u.id in shaped.records]
            records, report.schema_conformance = await self.schema_step.conform(records)
            resolved = resolve_graph(
                records, fuzzy_threshold=self._config.graph.resolution.fuzzy_threshold,
                synonyms=self.schema_step.synonyms,
            )  # fmt: skip
            stage.items = len(resolved.entities)
        report.merges = dict(resolved.merges)
        claims: list[Claim] = []
        if self.claim_extractor is not None:  # graph.claims.enabled (ingestion.graph.claims)
            with self._stage(report, "claims") as stage:
                claims, report.claims = await claim_stage(
                    self.claim_extractor, units, outcome, resolved, records=dict(records),
                    force=force, progress=self._progress)  # fmt: skip
                stage.items = report.claims.units_asked
        else:  # claims off: a deleted document's claim records go all the same
            await sweep_claims_off(self._claims_of, self._stores.records, units, dict(records),
                                   {*outcome.failed, *outcome.quarantined})  # fmt: skip

        entities = list(resolved.entities)
        relationships = list(resolved.relationships)
        with self._stage(report, "summarize") as stage:
            entities, relationships = await self._summarize(
                entities, relationships, resolved.description_fragments, report
            )
            stage.items = report.descriptions_summarized
        entities, relationships = self.schema_step.annotate(entities, relationships)
        report.entities, report.relationships = len(entities), len(relationships)

        items = GraphItems(
            entities=entities,
            relationships=relationships,
            relationship_vectors=builds_artifact(self.methodologies, "relationship_vectors"),
            claims=claims,
        )
        contexts: dict[str, str] | None = None
        if builds_artifact(self.methodologies, "community_reports"):
            contexts = await self._communities_and_reports(
                items, report, delta=not (force or rebuild)
            )

        with self._stage(report, "write") as stage:
            writer = GraphWriter(self._stores, self._embedder, self._progress)
            report.items_removed = await writer.write(items)
            stage.items = writer.embedded
            stage.embedding_s = round(writer.embedding_s, 3)
        with self._stage(report, "pagerank") as stage:  # ingestion.centrality
            stage.items = (await store_entity_pagerank(self._stores, items)).nodes
        if contexts is not None:
            await save_partition(
                self._stores, self._config.graph.communities, items.communities, contexts,
                shaping=self._shaping_key(),
            )
        # the quarantined set after this run (newly quarantined units in, released ones out)
        done = self.digest(list(paths), await self.ledger.quarantined())
        await self._record_build(
            done, complete=report.complete, shaping=report.shaping.model_dump()
        )
        return report

    async def _skip(
        self,
        report: GraphBuildReport,
        paths: dict[str, str],
        held: dict[str, UnitAttempts],
        last: dict[str, object],
    ) -> None:
        """Skip a current build; sweep only when the extraction records were touched since.

        The last build left ``last["records"]`` records; any other count means records were
        written or left by something else (a killed run, an older version): sweep them.
        """
        report.skipped_reason = "unchanged since the last complete build"
        report.units_quarantined = len(held)
        if await self._stores.records.count(RECORDS_NAMESPACE) == last.get("records"):
            return
        report.records_swept = await self._sweep(await load_units(self._stores, paths))
        # the sweep may have dropped failure entries of texts no longer indexed
        done = self.digest(list(paths), await self.ledger.quarantined())
        await self._record_build(done, complete=True, shaping=last.get("shaping"))

    def _extraction_figures(
        self,
        report: GraphBuildReport,
        outcome: ExtractionOutcome,
        paths: dict[str, str],
        attempts: dict[str, UnitAttempts],
    ) -> None:
        """Fill the extraction part of ``report`` (failed units with their failure counts)."""
        limit = self._config.indexing.quarantine_after
        report.records_reused = outcome.reused
        report.units_extracted = outcome.extracted
        report.units_truncated = len(outcome.truncated)
        report.units_quarantined = len(outcome.quarantined)
        report.units_failed = [
            UnitFailure(
                text_unit_id=t, path=paths.get(t, ""), reason=reason,
                failures=attempts[t].failures if t in attempts else 0,
                quarantined=t in attempts and is_quarantined(attempts[t].failures, limit),
            )
            for t, reason in sorted(outcome.failed.items())
        ]

    async def _sweep(self, units: Sequence[UnitText]) -> int:
        """Delete the extraction records (and failure entries) no listed text unit reads."""
        return await sweep_records(
            self._stores, await current_keys(self._stores, self.extractor, units)
        )

    async def _record_build(self, digest: str, *, complete: bool, shaping: object) -> None:
        """Record the build's digest, completeness, extraction records left and shaping counts.

        ``shaping``: what grounding and the confidence rules did (``ukr status`` shows it).
        """
        left = await self._stores.records.count(RECORDS_NAMESPACE)
        value = {"digest": digest, "complete": complete, "records": left, "shaping": shaping}
        await self._stores.records.put(INDEX_NAMESPACE, BUILD_KEY, json.dumps(value))

    async def _summarize(
        self,
        entities: list[Entity],
        relationships: list[Relationship],
        fragments: dict[str, tuple[str, ...]],
        report: GraphBuildReport,
    ) -> tuple[list[Entity], list[Relationship]]:
        names = {e.id: e.name for e in entities}
        rel_names = {
            r.id: f"{names.get(r.source_id, r.source_id)} -> "
            f"{names.get(r.target_id, r.target_id)} ({r.type})"
            for r in relationships
        }
        tasks = summary_tasks({**names, **rel_names}, fragments, self.summarizer)
        if not tasks:
            return entities, relationships
        outcome = await self.summarizer.run(tasks, progress=self._progress)
        report.descriptions_summarized = len(outcome.summaries)
        report.summaries_failed = outcome.failed
        done = outcome.summaries
        return (
            [e.model_copy(update={"description": done[e.id]}) if e.id in done else e
             for e in entities],
            [r.model_copy(update={"description": done[r.id]}) if r.id in done else r
             for r in relationships],
        )

    async def _communities_and_reports(
        self, items: GraphItems, report: GraphBuildReport, *, delta: bool
    ) -> dict[str, str]:
        """Cluster (from scratch, or the delta only) and report; fill ``items``.

        A full clustering (first build, ``--reset``, ``--force-rebuild``, changed community
        settings) asks every report (unchanged contexts come back from the response cache);
        a delta run keeps the previous partition and asks only the reports whose context
        changed (`ingestion.graph.delta`).

        Returns:
            The context fingerprints of the communities reported (for `save_partition`).
        """
        cfg = self._config.graph.communities
        entities = {e.id: e for e in items.entities}
        previous = await load_previous(self._stores, cfg, self._shaping_key()) if delta else None
        with self._stage(report, "communities") as stage:
            if previous is None:
                communities = detect_communities(
                    list(entities),
                    [(r.source_id, r.target_id, r.weight) for r in items.relationships],
                    max_cluster_size=cfg.max_cluster_size,
                    min_community_size=cfg.min_community_size,
                    seed=cfg.seed,
                    max_levels=cfg.max_levels,
                )
            else:
                partition = delta_partition(
                    previous.communities, list(entities), items.relationships, cfg
                )
                communities = partition.communities
                logger.info(
                    "delta communities: %d kept (%d pruned), %d dropped, %d appended",
                    len(partition.kept), len(partition.pruned), len(partition.dropped),
                    len(partition.appended),
                )
            stage.items = len(communities)
        for c in communities:
            report.communities_per_level[c.level] = report.communities_per_level.get(c.level, 0) + 1
        about: dict[str, list[Claim]] = {}
        for claim in items.claims:
            about.setdefault(claim.subject_id, []).append(claim)
        contexts = context_fingerprints(communities, entities, items.relationships, about)
        if (writer := self.role_models().get("reports")) is not None:  # a report model's own
            contexts = {c: sha256_json([f, writer]) for c, f in contexts.items()}
        kept: dict[str, CommunityReport] = {}
        if previous is not None:
            same = [c.id for c in communities if previous.contexts.get(c.id) == contexts[c.id]]
            members = {c.id: c.member_ids for c in communities}
            kept = {
                r.community_id: r.model_copy(update={"rank": float(sum(
                    entities[m].rank for m in members[r.community_id] if m in entities
                ))})
                for r in (await self._stores.graph.get_reports(same) if same else [])
            }
        with self._stage(report, "reports") as stage:
            outcome = await self.reporter.run(
                [c for c in communities if c.id not in kept],
                entities,
                items.relationships,
                progress=self._progress,
                existing=kept,
                claims=about,
            )
            stage.items = len(outcome.reports)
        items.communities = communities
        items.reports = sorted([*outcome.reports, *kept.values()], key=lambda r: r.community_id)
        report.reports = len(items.reports)
        report.reports_failed = len(outcome.failed)
        reported = {r.community_id for r in items.reports}
        await self._drop_outdated_reports([c.id for c in communities if c.id not in reported])
        return {cid: fp for cid, fp in contexts.items() if cid in reported}

    async def _drop_outdated_reports(self, unreported: list[str]) -> None:
        """Delete the stored reports of communities whose new report failed.

        Such a report was written from a context that changed (members left or joined), so
        it may hold facts of removed text; the community goes without a report (drift in
        ``ukr status``) until a run asks again. The graph store deletes a community's report
        with the community, and the writer stores the community again right after.
        """
        if not unreported:
            return
        outdated = [r.community_id for r in await self._stores.graph.get_reports(unreported)]
        if outdated:
            logger.info("%d outdated community reports removed (their new report failed)",
                        len(outdated))  # fmt: skip
            await self._stores.graph.delete_communities(outdated)

    @contextmanager
    def _stage(self, report: GraphBuildReport, name: str) -> Iterator[StageReport]:
        stage = StageReport()
        started = time.perf_counter()
        with usage_scope() as usage:
            try:
                yield stage
            finally:
                stage.seconds = round(time.perf_counter() - started, 3)
                stage.usage = usage
                report.stages[name] = stage


def _is_current(last: dict[str, object], digest: str) -> bool:
    """True when the last build had these inputs and completed (the next run skips)."""
    return last.get("digest") == digest and bool(last.get("complete"))


def _counted(outcome: ExtractionOutcome) -> bool:
    """Whether this run's extraction failures count toward quarantine.

    Only when the model has extracted some unit of the index completely (now or on an earlier
    run): when no unit ever succeeded, a setting (a timeout, a reply limit, a model that cannot
    follow the format) is more likely at fault than every text, and quarantining the whole
    corpus would hide it.
    """
    if not outcome.failed:
        return True
    ok = any(r.complete for u, r in outcome.records.items() if u not in outcome.failed)
    if not ok:
        logger.warning("no text unit was extracted completely (%d failed): not counted toward "
                       "quarantine; check the model and its settings", len(outcome.failed))
    return ok
