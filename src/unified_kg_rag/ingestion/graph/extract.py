"""Extraction and gleaning per text unit, with the extraction record store in front of the model.

A text unit whose fingerprint (text, model, prompts, settings: `extraction_fingerprint`) has a
stored record takes it without a model call, so a re-run, a resumed run and identical chunks
elsewhere cost nothing; ``force`` asks again and overwrites. Each record is stored as soon as
its unit is done, so a run killed halfway never asks for a finished unit twice. Records of
text the index no longer holds are deleted by `GraphExtractor.forget` after a removal.

Failures (seed 000 §4.1, issue #4): a reply that cannot be read or a request the server
rejects (HTTP 400/413/422) fails that unit only; it gets no record and the next run asks
again. Anything else (authentication, a server that is down after the retries, a timeout that
persists) stops the stage: the remaining units are not sent, and `ModelError` propagates with
the server's message. Nothing is written to the graph before extraction has finished.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

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
from unified_kg_rag.domain.llm.usage import spend_note
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ingestion.units import UnitText
from unified_kg_rag.ports import ChatModel, ProgressReporter, RecordStore
from unified_kg_rag.util.aio import map_bounded
from unified_kg_rag.util.errors import ModelError, ModelOutputError

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

_UNIT_ERROR_STATUS = frozenset({400, 404, 413, 422})


@dataclass
class ExtractionOutcome:
    """What the extraction stage produced.

    Attributes:
        records: text unit id → its record (reused or new).
        failed: text unit id → one-line reason.
        reused: units answered from the record store.
        extracted: units sent to the model.
        truncated: ids of units with a reply cut at the length limit.
    """

    records: dict[str, ExtractionRecord] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    reused: int = 0
    extracted: int = 0
    truncated: list[str] = field(default_factory=list)


def is_unit_error(exc: BaseException) -> bool:
    """True when ``exc`` fails only the item being processed (bad reply, rejected request)."""
    if isinstance(exc, ModelOutputError):
        return True
    return (
        isinstance(exc, ModelError)
        and not exc.transient
        and exc.status_code in _UNIT_ERROR_STATUS
    )


class _StopError(Exception):
    """Raised for units not sent after a fatal error stopped the stage."""


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
        self._extract_tpl = extraction_template
        self._glean_tpl = gleaning_template
        self._concurrency = concurrency
        self._fatal: BaseException | None = None

    def fingerprint(self, text: str) -> str:
        """Return the record key of ``text`` under the current model, prompts and settings."""
        return extraction_fingerprint(
            text,
            # the model, not where it is served: moving a server re-extracts nothing
            model_id=self._chat.model_id.split("@", 1)[0],
            prompts={"extract": self._extract_tpl, "glean": self._glean_tpl},
            settings={
                "entity_types": list(self._config.entity_types),
                "max_gleaning_rounds": self._config.max_gleaning_rounds,
                "max_reply_tokens": self._config.max_reply_tokens,
            },
        )

    async def stored(self, units: Sequence[UnitText]) -> dict[str, ExtractionRecord]:
        """Return the stored records of ``units`` (text unit id → record); no model call."""
        keys = {u.id: self.fingerprint(u.text) for u in units}
        found = await self._records.get_many(RECORDS_NAMESPACE, sorted(set(keys.values())))
        out: dict[str, ExtractionRecord] = {}
        for unit_id, key in keys.items():
            raw = found.get(key)
            if raw is None:
                continue
            try:
                out[unit_id] = ExtractionRecord.model_validate_json(raw)
            except ValueError:
                logger.warning("stored extraction record %s is unreadable; extracting again", key)
        return out

    async def forget(self, removed: Iterable[str], kept: Iterable[str]) -> int:
        """Delete the stored records of the ``removed`` texts that no ``kept`` text shares.

        The record-store garbage collection after a removal: a record is keyed by its text's
        fingerprint, so identical text in a surviving unit keeps the record. Only records
        under the current model, prompts and settings are found (older ones are left).

        Args:
            removed: texts of text units removed from the index (deleted documents' units,
                stale units of changed documents).
            kept: texts of every text unit the index still holds.

        Returns:
            The number of records deleted.

        Raises:
            StoreError: the record store failed.
        """
        gone = set(removed) - set(kept)
        if not gone:
            return 0
        keys = sorted({self.fingerprint(text) for text in gone})
        return await self._records.delete(RECORDS_NAMESPACE, keys)

    async def run(
        self,
        units: Sequence[UnitText],
        *,
        force: bool = False,
        progress: ProgressReporter | None = None,
    ) -> ExtractionOutcome:
        """Return a record for every unit that has one or could be extracted now.

        Raises:
            ModelError: a failure that is not the unit's own (authentication, server down,
                persistent timeouts); units finished before it keep their stored records.
        """
        progress = progress or NULL_PROGRESS
        outcome = ExtractionOutcome()
        if not force:
            outcome.records = await self.stored(units)
            outcome.reused = len(outcome.records)
        todo = [u for u in units if u.id not in outcome.records]
        # identical texts are extracted once and share the record
        key_of = {unit.id: self.fingerprint(unit.text) for unit in todo}
        by_key: dict[str, list[UnitText]] = {}
        for unit in todo:
            by_key.setdefault(key_of[unit.id], []).append(unit)
        firsts = [group[0] for group in by_key.values()]
        progress.start("extract", len(firsts))
        self._fatal = None

        async def one(unit: UnitText) -> ExtractionRecord:
            if self._fatal is not None:
                raise _StopError()
            try:
                record = await self._extract(unit)
            except Exception as exc:
                if not is_unit_error(exc) and self._fatal is None:
                    self._fatal = exc
                raise
            finally:
                progress.advance("extract", note=spend_note())
            await self._records.put(
                RECORDS_NAMESPACE, record.fingerprint, record.model_dump_json()
            )
            return record

        with refresh_cache(force):  # --force-rebuild asks the model, not the response cache
            results = await map_bounded(firsts, one, concurrency=self._concurrency)
        progress.finish("extract")
        if self._fatal is not None:
            raise self._fatal
        for result in results:
            group = by_key[key_of[result.item.id]]
            if result.value is not None:
                outcome.extracted += 1
                if result.value.truncated:
                    outcome.truncated.append(result.item.id)
                for unit in group:
                    outcome.records[unit.id] = result.value
            else:
                reason = " ".join(str(result.error).split()) or type(result.error).__name__
                for unit in group:
                    outcome.failed[unit.id] = reason
                logger.warning("extraction failed for %s: %s", result.item.path, reason)
        return outcome

    async def _extract(self, unit: UnitText) -> ExtractionRecord:
        cfg = self._config
        types = cfg.entity_types
        with accept_replies(parses(parse_extraction_reply)):
            reply = await self._chat.complete(
                render_extraction_messages(
                    unit.text, entity_types=types, template=self._extract_tpl
                ),
                max_tokens=cfg.max_reply_tokens,
            )
        parsed = parse_extraction_reply(reply.text, finish_reason=reply.finish_reason)
        record = ExtractionRecord(
            fingerprint=self.fingerprint(unit.text),
            entities=parsed.entities,
            relationships=parsed.relationships,
            truncated=parsed.truncated,
            model=self._chat.model_id,
        )
        for round_no in range(1, cfg.max_gleaning_rounds + 1):
            try:
                with accept_replies(parses(parse_gleaning_reply)):
                    reply = await self._chat.complete(
                        render_gleaning_messages(
                            unit.text, record, entity_types=types, template=self._glean_tpl
                        ),
                        max_tokens=cfg.max_reply_tokens,
                    )
                gleaned = parse_gleaning_reply(reply.text, finish_reason=reply.finish_reason)
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
                    "truncated": record.truncated or gleaned.truncated,
                    "gleaning_rounds": round_no,
                }
            )
            if not merged.added:
                break
        return record


def parses(parse: Callable[..., object]) -> Callable[[str], bool]:
    """Return a reply validator: True when ``parse`` reads the reply without raising."""

    def check(text: str) -> bool:
        try:
            parse(text)
        except ModelOutputError:
            return False
        return True

    return check
