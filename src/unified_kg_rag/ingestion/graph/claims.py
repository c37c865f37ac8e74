"""Claim (covariate) extraction per text unit, with the claim record store in front of the model.

Runs inside the graph build after extraction and resolution when ``graph.claims.enabled``
(seed 000 §4 stages 8-9). Each text unit with a complete extraction record that lists
entities gets one claim call; the prompt lists those entity names, and the reply is stored as
a `ClaimRecord` keyed by `ClaimExtractor.fingerprint` (text, entity names, model, prompt,
settings), so a re-run, a resumed run and identical text elsewhere make no call. A unit whose
extraction failed, is quarantined or found no entity gets no call (its claims wait for a
complete extraction).

Failures follow extraction's rules (`ingestion.graph.failures.FailureJudge`): an unreadable
reply or a request the server rejects fails that unit only (its claims are missing from this
build, which is then not recorded complete, so the next run asks again); a cut reply keeps its
complete claims for this build and is asked again next run; authentication or a server that
is down stops the stage and the error propagates. Claim records no unit of this build reads
are swept after the stage (`sweep`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from unified_kg_rag.config.claims import ClaimsConfig
from unified_kg_rag.domain.extraction.claims import (
    ClaimRecord,
    claim_fingerprint,
    parse_claims_reply,
    render_claim_messages,
)
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.graph.claims import Claim, resolve_claims
from unified_kg_rag.domain.graph.resolution import ResolvedGraph
from unified_kg_rag.domain.index.attempts import UnitAttempts, is_quarantined
from unified_kg_rag.domain.llm.cache_control import accept_replies, refresh_cache
from unified_kg_rag.domain.llm.finish import describe_finish
from unified_kg_rag.domain.llm.usage import spend_note
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ingestion.units import UnitText
from unified_kg_rag.ports import ChatModel, ProgressReporter, RecordStore
from unified_kg_rag.util.aio import map_bounded

from .extract import ExtractionOutcome, parses
from .failures import FailureJudge, read_reply
from .report import ClaimFigures

__all__ = [
    "CLAIMS_NAMESPACE",
    "CLAIM_FAILURES_NAMESPACE",
    "CLAIM_PROMPT",
    "ClaimExtractor",
    "ClaimOutcome",
    "ClaimPlan",
    "claim_stage",
    "claim_units",
    "claims_to_ask",
    "sweep_claims_off",
]

logger = logging.getLogger(__name__)

CLAIMS_NAMESPACE = "claim_records"
"""RecordStore namespace of claim records, keyed by fingerprint."""

CLAIM_FAILURES_NAMESPACE = "claim_failures"
"""RecordStore namespace of the consecutive claim failures per claim fingerprint
(`UnitAttempts`); at ``indexing.quarantine_after`` the unit's claims are no longer asked."""

CLAIM_PROMPT = "extract_claims.v1"
"""The claim prompt (packaged; replaced by ``prompts.files.extract_claims`` or
``graph.claims.prompt_file``, see `config.prompts`)."""


def claim_units(
    units: Sequence[UnitText],
    records: Mapping[str, ExtractionRecord],
    skip: Collection[str] = frozenset(),
) -> list[tuple[UnitText, list[str]]]:
    """Return the units that get a claim call, each with its entity names (reply order).

    A unit qualifies when its extraction record is complete, lists an entity and the unit is
    not in ``skip`` (failed or quarantined extraction).
    """
    out: list[tuple[UnitText, list[str]]] = []
    for unit in units:
        record = records.get(unit.id)
        if record is None or not record.complete or not record.entities or unit.id in skip:
            continue
        out.append((unit, [e.name for e in record.entities]))
    return out


@dataclass(frozen=True)
class ClaimPlan:
    """The claim calls a build would make (``--estimate``): the prompt and the units asked."""

    template: str
    units: list[tuple[UnitText, list[str]]]


async def claims_to_ask(
    extractor: ClaimExtractor | None,
    units: Sequence[UnitText],
    stored: Mapping[str, ExtractionRecord],
) -> ClaimPlan | None:
    """Return the units a build would send a claim call (for ``--estimate``); None if off.

    A unit without a stored extraction record is counted (its entities are not known yet:
    its names are []); one with a complete stored record that lists entities is counted
    when its claim record is not stored.

    Raises:
        StoreError: the record store failed.
    """
    if extractor is None:
        return None
    known = claim_units(units, stored)
    have = await extractor.stored_keys([extractor.fingerprint(u.text, n) for u, n in known])
    out = [(u, n) for u, n in known if extractor.fingerprint(u.text, n) not in have]
    return ClaimPlan(extractor.template, out + [(u, []) for u in units if u.id not in stored])


@dataclass
class ClaimOutcome:
    """What the claim stage produced.

    Attributes:
        records: text unit id → its claim record (complete, or a cut reply's claims).
        failed: text unit id → one-line reason (the unit's own failure, a cut reply included).
        fingerprints: text unit id → its claim record key, for every unit asked or reused.
        reused: units answered from the record store.
        extracted: texts sent to the model this run (answered, cut or failed).
        capped: readable claims past ``max_per_unit`` in this run's replies, not kept.
        quarantined: units not asked: their claims failed on ``quarantine_after``
            consecutive runs (a cut reply's claims, if any, are used).
    """

    records: dict[str, ClaimRecord] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    fingerprints: dict[str, str] = field(default_factory=dict)
    reused: int = 0
    extracted: int = 0
    capped: int = 0
    quarantined: list[str] = field(default_factory=list)


class _UnitFailedError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ClaimExtractor:
    """Extracts the claims of text units through a chat model, one stored record per text.

    Args:
        chat: the wrapped chat model (the extraction model).
        records: the index's record store.
        config: ``graph.claims``.
        template: the claim prompt template.
        concurrency: units in flight at once.
        quarantine_after: ``indexing.quarantine_after``: consecutive failed runs after which
            a unit's claims are no longer asked (0: never).
    """

    def __init__(
        self,
        chat: ChatModel,
        records: RecordStore,
        config: ClaimsConfig,
        *,
        template: str,
        concurrency: int,
        quarantine_after: int = 0,
    ) -> None:
        self._chat = chat
        self._records = records
        self._config = config
        self.template = template
        self._concurrency = concurrency
        self._quarantine_after = quarantine_after

    @property
    def max_per_unit(self) -> int:
        """``graph.claims.max_per_unit``: claims kept per reply."""
        return self._config.max_per_unit

    def fingerprint(self, text: str, entity_names: Sequence[str]) -> str:
        """Return the claim record key of a text with these entity names (current settings)."""
        cfg = self._config
        return claim_fingerprint(
            text,
            entity_names,
            model_id=self._chat.model_id.split("@", 1)[0],
            template=self.template,
            settings={
                "description": cfg.description,
                "claim_types": list(cfg.claim_types),
                "max_per_unit": cfg.max_per_unit,
                "max_reply_tokens": cfg.max_reply_tokens,
            },
        )

    async def run(
        self,
        units: Sequence[tuple[UnitText, list[str]]],
        *,
        force: bool = False,
        progress: ProgressReporter | None = None,
    ) -> ClaimOutcome:
        """Return a claim record for every unit that has one or could be asked now.

        Args:
            units: `claim_units` (each unit with its entity names).
            force: ask the model again for every unit (``--force-rebuild``).
            progress: receives ``claims`` progress.

        Raises:
            ModelError: a failure that is not a unit's own (authentication, a server that is
                down); units finished before it keep their stored records.
            StoreError: the record store failed.
        """
        progress = progress or NULL_PROGRESS
        outcome = ClaimOutcome()
        keys = outcome.fingerprints = {u.id: self.fingerprint(u.text, n) for u, n in units}
        stored = await self._load(keys.values())
        attempts = await self._attempts(keys.values())
        groups: dict[str, list[tuple[UnitText, list[str]]]] = {}
        for unit, names in units:
            record = stored.get(keys[unit.id])
            held = keys[unit.id] in attempts and is_quarantined(
                attempts[keys[unit.id]].failures, self._quarantine_after)
            if record is not None and record.complete and not force:
                outcome.records[unit.id] = record
                outcome.reused += 1
            elif held and not force:
                outcome.quarantined.append(unit.id)
                if record is not None:  # the claims of its last cut reply
                    outcome.records[unit.id] = record
            else:
                groups.setdefault(keys[unit.id], []).append((unit, names))
        judge = FailureJudge(self._chat, concurrency=self._concurrency, stage="claims")
        firsts = [g[0] for g in groups.values()]
        progress.start("claims", len(firsts))

        async def one(item: tuple[UnitText, list[str]]) -> ClaimRecord:
            judge.check()
            try:
                record = await self._ask(*item)
            except Exception as exc:
                raise _UnitFailedError(await judge.judge(exc)) from exc
            finally:
                progress.advance("claims", note=spend_note())
            judge.answered()
            try:
                await self._records.put(CLAIMS_NAMESPACE, record.fingerprint,
                                        record.model_dump_json())  # fmt: skip
            except Exception as exc:
                judge.halt(exc)
                raise
            return record

        with refresh_cache(force):
            results = await map_bounded(firsts, one, concurrency=self._concurrency)
        progress.finish("claims")
        judge.raise_if_stopped()
        for result in results:
            group = groups[keys[result.item[0].id]]
            outcome.extracted += 1  # sent to the model, answered or not
            if result.value is not None:
                outcome.capped += result.value.capped
                reason = ""
                if not result.value.complete:
                    reason = (
                        f"claim reply {describe_finish(result.value.finish_reason)}; the "
                        "claims before the cut are kept and the next run asks again (raise "
                        "graph.claims.max_reply_tokens if replies are cut at the length limit)"
                    )
                    logger.warning("claim extraction of %s: %s", group[0][0].path, reason)
                for unit, _ in group:
                    outcome.records[unit.id] = result.value
                    if reason:
                        outcome.failed[unit.id] = reason
                continue
            error = result.error
            if not isinstance(error, _UnitFailedError):
                raise error if error is not None else RuntimeError("no record and no error")
            for unit, _ in group:
                outcome.failed[unit.id] = error.reason
                if (partial_record := stored.get(keys[unit.id])) is not None:
                    outcome.records[unit.id] = partial_record  # an earlier cut reply's claims
            logger.warning("claim extraction failed for %s: %s", group[0][0].path, error.reason)
        await self._count_failures(outcome, groups, attempts)
        return outcome

    async def _attempts(self, keys: Collection[str]) -> dict[str, UnitAttempts]:
        """Return the failure entries of ``keys`` (claim fingerprint → attempts)."""
        raw = await self._records.get_many(CLAIM_FAILURES_NAMESPACE, sorted(set(keys)))
        out: dict[str, UnitAttempts] = {}
        for key, value in raw.items():
            try:
                out[key] = UnitAttempts.model_validate_json(value)
            except ValueError:
                logger.warning("unreadable claim failure entry %s ignored", key[:12])
        return out

    async def _count_failures(
        self,
        outcome: ClaimOutcome,
        asked: Mapping[str, Sequence[tuple[UnitText, list[str]]]],
        attempts: Mapping[str, UnitAttempts],
    ) -> None:
        """Count this run's failures per claim fingerprint; clear those answered completely."""
        now = time.time()
        written: dict[str, str] = {}
        for unit_id, reason in sorted(outcome.failed.items()):
            key = outcome.fingerprints[unit_id]
            if key in written:
                continue
            before = attempts[key].failures if key in attempts else 0
            unit = asked[key][0][0] if key in asked else None
            written[key] = UnitAttempts(
                failures=before + 1, error=reason, text_unit_id=unit_id,
                path=unit.path if unit is not None else "", updated_at=now,
            ).model_dump_json()  # fmt: skip
        cleared = [k for k in asked if k in attempts and k not in written]
        if written:
            await self._records.put_many(CLAIM_FAILURES_NAMESPACE, written)
        if cleared:
            await self._records.delete(CLAIM_FAILURES_NAMESPACE, cleared)

    async def stored_keys(self, keys: Collection[str]) -> set[str]:
        """Return those of ``keys`` whose stored claim record is complete (no call needed)."""
        return {k for k, r in (await self._load(keys)).items() if r.complete}

    async def _load(self, keys: Collection[str]) -> dict[str, ClaimRecord]:
        raw = await self._records.get_many(CLAIMS_NAMESPACE, sorted(set(keys)))
        out: dict[str, ClaimRecord] = {}
        for key, value in raw.items():
            try:
                out[key] = ClaimRecord.model_validate_json(value)
            except ValueError:
                logger.warning("stored claim record %s is unreadable; asking again", key)
        return out

    async def _ask(self, unit: UnitText, names: list[str]) -> ClaimRecord:
        cfg = self._config
        parse = partial(parse_claims_reply, max_claims=cfg.max_per_unit)

        with accept_replies(parses(parse)):  # a broken reply is not cached: asked again
            reply = await self._chat.complete(
                render_claim_messages(
                    unit.text, names, template=self.template,
                    claim_description=cfg.description, claim_types=cfg.claim_types,
                ),
                max_tokens=cfg.max_reply_tokens,
            )  # fmt: skip
        finish = reply.finish_reason
        parsed = read_reply(partial(parse, finish_reason=finish), reply.text, "claim")
        return ClaimRecord(
            fingerprint=self.fingerprint(unit.text, names),
            claims=parsed.claims,
            truncated=parsed.truncated or not reply.complete,
            model=self._chat.model_id,
            finish_reason=finish,
            capped=parsed.capped,
        )

    async def sweep(self, keep: Collection[str]) -> int:
        """Delete the claim records (and failure entries) not in ``keep``; return the records'.

        Raises:
            StoreError: the record store failed (the next build sweeps what is left).
        """
        wanted = set(keep)
        swept = 0
        for namespace in (CLAIMS_NAMESPACE, CLAIM_FAILURES_NAMESPACE):
            doomed = [k for k in await self._records.keys(namespace) if k not in wanted]
            deleted = 0
            for i in range(0, len(doomed), 2000):
                deleted += await self._records.delete(namespace, doomed[i : i + 2000])
            if deleted:
                logger.info("deleted %d %s entries no text unit reads", deleted, namespace)
            if namespace == CLAIMS_NAMESPACE:
                swept = deleted
        return swept


async def claim_stage(
    extractor: ClaimExtractor,
    units: Sequence[UnitText],
    outcome: ExtractionOutcome,
    resolved: ResolvedGraph,
    *,
    records: Mapping[str, ExtractionRecord] | None = None,
    force: bool = False,
    progress: ProgressReporter | None = None,
) -> tuple[list[Claim], ClaimFigures]:
    """Ask (or reuse) every qualifying unit's claims, sweep stale records, resolve them.

    Units whose extraction failed or is quarantined this run get no claim call. Claim
    records no unit of this build reads are swept once the stage has finished.

    Args:
        extractor: the claim extractor.
        units: the build's text units.
        outcome: the extraction stage's outcome (records, failures, quarantine).
        resolved: the resolved graph (entity keys → ids, display names).
        records: text unit id → the extraction record resolution read (after grounding
            and the schema step): the prompt lists these entities, so nothing is asked
            about an entity the build dropped. None: ``outcome.records``.
        force: ask the model again for every unit.
        progress: receives ``claims`` progress.

    Returns:
        The resolved claims (sorted by id) and the stage's figures.

    Raises:
        ModelError: the stage stopped (authentication, a server that is down).
        StoreError: a store failed.
    """
    skip = {*outcome.failed, *outcome.quarantined}
    read = outcome.records if records is None else records
    asked = claim_units(units, read, skip)
    found = await extractor.run(asked, force=force, progress=progress)
    figures = ClaimFigures(
        units_asked=found.extracted,
        records_reused=found.reused,
        units_failed=len(found.failed),
        units_quarantined=len(found.quarantined),
        claims_capped=found.capped,
        records_swept=await extractor.sweep(found.fingerprints.values()),
    )
    result = resolve_claims(
        [(u.id, read[u.id], found.records[u.id])
         for u, _ in asked if u.id in found.records],
        resolved.key_to_entity_id,
        {e.id: e.name for e in resolved.entities},
    )  # fmt: skip
    figures.claims = len(result.claims)
    figures.dropped_subject = result.dropped_subject
    if found.capped:
        logger.warning("%d claims past graph.claims.max_per_unit (%d) not kept",
                       found.capped, extractor.max_per_unit)  # fmt: skip
    if result.dropped_subject:
        logger.info("%d claim statements dropped: their subject is not one of their text "
                    "unit's entities", result.dropped_subject)  # fmt: skip
    return list(result.claims), figures


async def sweep_claims_off(
    extractor_of: Callable[[], ClaimExtractor],
    records: RecordStore,
    units: Sequence[UnitText],
    read: Mapping[str, ExtractionRecord],
    skip: Collection[str] = frozenset(),
) -> int:
    """Sweep claim records (and failure entries) while ``graph.claims.enabled`` is off.

    Keeps the records the units of this build would read with claims on under the current
    claim settings (turning claims on again asks nothing the store still answers) and
    deletes the rest: a deleted document's claims, with their verbatim source text, go with
    it whether claims are on or off. Nothing is read when neither namespace holds an entry.

    Args:
        extractor_of: builds the claim extractor of the current settings (called only
            when there is something to sweep; an error building it skips the sweep with a
            warning: a claim prompt file that is gone while claims are off is no failure).
        records: the index's record store.
        units: the build's text units.
        read: text unit id → the extraction record resolution read.
        skip: units whose extraction failed or is quarantined.

    Returns:
        Claim records deleted.

    Raises:
        StoreError: the record store failed.
    """
    if not any([await records.count(ns) for ns in (CLAIMS_NAMESPACE, CLAIM_FAILURES_NAMESPACE)]):
        return 0
    try:
        extractor = extractor_of()
    except Exception as exc:  # a broken claim prompt file while claims are off
        logger.warning("claim records not swept (claims are off): %s", exc)
        return 0
    keep = [extractor.fingerprint(u.text, n) for u, n in claim_units(units, read, skip)]
    return await extractor.sweep(keep)
