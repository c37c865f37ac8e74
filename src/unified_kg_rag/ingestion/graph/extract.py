"""Extraction and gleaning per text unit, with the extraction record store in front of the model.

A text unit whose fingerprint (text, model, prompts, settings: `extraction_fingerprint`) has a
complete stored record takes it without a model call, so a re-run, a resumed run and
identical chunks elsewhere cost nothing; ``force`` asks again and overwrites. Each record is
stored as soon as its unit is done, so a run killed halfway never asks for a finished unit
twice. Records of text the index no longer holds are deleted by the build's sweep
(`ingestion.graph.record_sweep`).

Failures (seed 000 §4.1 and §5.1 step 6, issue #15): a reply that cannot be read, a reply
that is not complete (cut at the length limit, by a content filter: its items before the cut
are stored and used, but the unit counts as failed and the next run asks again), a request
the server rejects, and a call that keeps failing while the server answers other units fail
that unit only (`ingestion.graph.failures.FailureJudge`). Authentication, a server that is
down (a known-good request fails too) or a store error stop the stage: the remaining units are
not sent, and the error propagates. Units quarantined by earlier runs are not sent (their
partial record, if any, is used). Nothing is written to the graph before extraction has
finished.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import partial

from unified_kg_rag.config.graph import ExtractionConfig
from unified_kg_rag.domain.extraction.format import (
    glean_merge,
    parse_extraction_reply,
    parse_gleaning_reply,
    render_extraction_messages,
    render_gleaning_messages,
)
from unified_kg_rag.domain.extraction.records import ExtractionRecord, extraction_fingerprint
from unified_kg_rag.domain.llm.cache_control import accept_replies, refresh_cache
from unified_kg_rag.domain.llm.finish import describe_finish
from unified_kg_rag.domain.llm.usage import spend_note
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ingestion.units import UnitText
from unified_kg_rag.ports import ChatModel, ProgressReporter, RecordStore
from unified_kg_rag.util.aio import map_bounded
from unified_kg_rag.util.errors import ModelError, ModelOutputError

from .failures import FailureJudge, is_unit_error, read_reply

__all__ = [
    "RECORDS_NAMESPACE",
    "ExtractionOutcome",
    "GraphExtractor",
    "UnitText",
    "is_unit_error",
    "parses",
]

logger = logging.getLogger(__name__)

RECORDS_NAMESPACE = "extraction_records"
"""RecordStore namespace of extraction records, keyed by fingerprint."""


@dataclass
class ExtractionOutcome:
    """What the extraction stage produced.

    Attributes:
        records: text unit id → the record the graph is built from: complete (reused or
            new), or the partial record of a unit that failed or is quarantined.
        failed: text unit id → one-line reason, for the units whose extraction failed this
            run for a reason of their own (a cut reply included).
        quarantined: ids of the units skipped because they are quarantined.
        fingerprints: text unit id → its record key, for every unit.
        reused: units answered from the record store.
        extracted: units sent to the model and answered (completely or not).
        truncated: ids of units whose record holds a cut reply.
    """

    records: dict[str, ExtractionRecord] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    quarantined: list[str] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)
    reused: int = 0
    extracted: int = 0
    truncated: list[str] = field(default_factory=list)


class _UnitFailedError(Exception):
    """A unit's own failure, with its one-line reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class GraphExtractor:
    """Extracts and gleans text units through a chat model, storing one record per text.

    Args:
        chat: the wrapped chat model (cached, retried, metered).
        records: the index's record store.
        config: ``graph.extraction``.
        extraction_template: the extraction prompt template (system, ``=== user ===``, user).
        gleaning_template: the gleaning prompt template.
        concurrency: units in flight at once.
    """

    def __init__(
        self,
        chat: ChatModel,
        records: RecordStore,
        config: ExtractionConfig,
        *,
        extraction_template: str,
        gleaning_template: str,
        concurrency: int,
    ) -> None:
        self._chat = chat
        self._records = records
        self._config = config
        self.extraction_template = extraction_template
        self.gleaning_template = gleaning_template
        self._concurrency = concurrency

    @property
    def entity_types(self) -> tuple[str, ...]:
        """The entity types the prompts offer (the schema's, when one is set)."""
        return tuple(self._config.entity_types)

    def fingerprint(self, text: str) -> str:
        """Return the record key of ``text`` under the current model, prompts and settings."""
        return extraction_fingerprint(
            text,
            # the model, not where it is served: moving a server re-extracts nothing
            model_id=self._chat.model_id.split("@", 1)[0],
            prompts={"extract": self.extraction_template, "glean": self.gleaning_template},
            settings={
                "entity_types": list(self._config.entity_types),
                "max_gleaning_rounds": self._config.max_gleaning_rounds,
                "max_reply_tokens": self._config.max_reply_tokens,
            },
        )

    async def stored(self, units: Sequence[UnitText]) -> dict[str, ExtractionRecord]:
        """Return the complete stored records of ``units`` (text unit id → record); no call."""
        keys = {u.id: self.fingerprint(u.text) for u in units}
        found = await self._load(keys.values())
        return {u: found[k] for u, k in keys.items() if k in found and found[k].complete}

    async def _load(self, keys: Collection[str]) -> dict[str, ExtractionRecord]:
        """Return the readable stored records of ``keys`` (fingerprint → record)."""
        raw = await self._records.get_many(RECORDS_NAMESPACE, sorted(set(keys)))
        out: dict[str, ExtractionRecord] = {}
        for key, value in raw.items():
            try:
                out[key] = ExtractionRecord.model_validate_json(value)
            except ValueError:
                logger.warning("stored extraction record %s is unreadable; extracting again", key)
        return out

    async def run(
        self,
        units: Sequence[UnitText],
        *,
        force: bool = False,
        progress: ProgressReporter | None = None,
        quarantined: Collection[str] = frozenset(),
    ) -> ExtractionOutcome:
        """Return a record for every unit that has one or could be extracted now.

        Args:
            units: the index's text units.
            force: ask the model again for every unit not quarantined (``--force-rebuild``).
            progress: receives ``extract`` progress.
            quarantined: fingerprints of quarantined extractions: not sent.

        Raises:
            ModelError: a failure that is not a unit's own (authentication, a server that is
                down); units finished before it keep their stored records.
            StoreError: the record store failed.
        """
        progress = progress or NULL_PROGRESS
        outcome = ExtractionOutcome()
        keys = outcome.fingerprints = {u.id: self.fingerprint(u.text) for u in units}
        stored = await self._load(keys.values())
        by_key = _partition(units, outcome, stored, quarantined, force=force)
        firsts = [group[0] for group in by_key.values()]
        judge = FailureJudge(self._chat, concurrency=self._concurrency, stage="extraction")
        progress.start("extract", len(firsts))

        async def one(unit: UnitText) -> ExtractionRecord:
            judge.check()
            try:
                record = await self._extract(unit)
            except Exception as exc:
                raise _UnitFailedError(await judge.judge(exc)) from exc
            finally:
                progress.advance("extract", note=spend_note())
            judge.answered()
            try:
                await self._records.put(
                    RECORDS_NAMESPACE, record.fingerprint, record.model_dump_json()
                )
            except Exception as exc:
                judge.halt(exc)
                raise
            return record

        with refresh_cache(force):  # --force-rebuild asks the model, not the response cache
            results = await map_bounded(firsts, one, concurrency=self._concurrency)
        progress.finish("extract")
        judge.raise_if_stopped()
        for result in results:
            group = by_key[keys[result.item.id]]
            self._collect(outcome, group, result.value, result.error, stored)
        return outcome

    def _collect(
        self,
        outcome: ExtractionOutcome,
        group: Sequence[UnitText],
        record: ExtractionRecord | None,
        error: BaseException | None,
        stored: dict[str, ExtractionRecord],
    ) -> None:
        """Enter one extraction's result for every unit of its text."""
        if record is not None:
            outcome.extracted += 1
            reason = ""
            if not record.complete:
                reason = (f"reply {describe_finish(record.finish_reason)}; the items before "
                          "the cut are kept and the next run asks again")
            for unit in group:
                outcome.records[unit.id] = record
                if record.truncated:
                    outcome.truncated.append(unit.id)
                if reason:
                    outcome.failed[unit.id] = reason
            if reason:
                logger.warning("extraction of %s: %s", group[0].path, reason)
            return
        if not isinstance(error, _UnitFailedError):
            raise error if error is not None else RuntimeError("no record and no error")
        partial = stored.get(outcome.fingerprints[group[0].id])
        for unit in group:
            outcome.failed[unit.id] = error.reason
            if partial is not None:  # an earlier cut reply's items
                outcome.records[unit.id] = partial
        logger.warning("extraction failed for %s: %s", group[0].path, error.reason)

    async def _extract(self, unit: UnitText) -> ExtractionRecord:
        cfg = self._config
        types = cfg.entity_types
        with accept_replies(parses(parse_extraction_reply)):
            reply = await self._chat.complete(
                render_extraction_messages(
                    unit.text, entity_types=types, template=self.extraction_template
                ),
                max_tokens=cfg.max_reply_tokens,
            )
        finish = reply.finish_reason
        parsed = read_reply(
            partial(parse_extraction_reply, finish_reason=finish), reply.text, "extraction"
        )
        record = ExtractionRecord(
            fingerprint=self.fingerprint(unit.text),
            entities=parsed.entities,
            relationships=parsed.relationships,
            truncated=parsed.truncated or not reply.complete,
            model=self._chat.model_id,
            finish_reason=finish,
        )
        if not record.complete:
            return record  # gleaning a cut reply waits for the next run's complete one
        for round_no in range(1, cfg.max_gleaning_rounds + 1):
            try:
                with accept_replies(parses(parse_gleaning_reply)):
                    reply = await self._chat.complete(
                        render_gleaning_messages(
                            unit.text, record, entity_types=types, template=self.gleaning_template
                        ),
                        max_tokens=cfg.max_reply_tokens,
                    )
                finish = reply.finish_reason
                gleaned = read_reply(
                    partial(parse_gleaning_reply, finish_reason=finish), reply.text, "gleaning"
                )
            except ModelError as exc:
                if not is_unit_error(exc):
                    raise
                # an unreadable reply, or a request the server rejects (the gleaning prompt
                # lists every item so far and can outgrow a small context): keep what the
                # extraction and earlier rounds found
                logger.info("gleaning round %d for %s stopped (%s); keeping what we have",
                            round_no, unit.path, exc)
                break
            merged = glean_merge(record.entities, record.relationships, gleaned)
            record = record.model_copy(
                update={
                    "entities": merged.entities,
                    "relationships": merged.relationships,
                    "truncated": record.truncated or gleaned.truncated or not reply.complete,
                    "gleaning_rounds": round_no,
                    "finish_reason": finish,
                }
            )
            if not merged.added or not reply.complete:
                break
        return record


def _partition(
    units: Sequence[UnitText],
    outcome: ExtractionOutcome,
    stored: dict[str, ExtractionRecord],
    quarantined: Collection[str],
    *,
    force: bool,
) -> dict[str, list[UnitText]]:
    """Enter the quarantined and reused units in ``outcome``; return the rest by fingerprint.

    Identical texts share a fingerprint and are extracted once.
    """
    by_key: dict[str, list[UnitText]] = {}
    for unit in units:
        key = outcome.fingerprints[unit.id]
        record = stored.get(key)
        if key in quarantined:
            outcome.quarantined.append(unit.id)
            if record is not None:  # the items of its last cut reply
                outcome.records[unit.id] = record
        elif record is not None and record.complete and not force:
            outcome.records[unit.id] = record
            outcome.reused += 1
        else:
            by_key.setdefault(key, []).append(unit)
    return by_key


def parses(parse: Callable[..., object]) -> Callable[[str], bool]:
    """Return a reply validator: True when ``parse`` reads the reply without raising."""

    def check(text: str) -> bool:
        try:
            read_reply(parse, text, "model")
        except ModelOutputError:
            return False
        return True

    return check
