"""The times the ``temporal_decay`` stage scores: read from candidates, or looked up.

A text unit indexed by this version carries its time in its search record
(`domain.text.unit_times`: ``timestamp`` = the newest message of a transcript unit, or the
date a document states, else its file's modification time). A unit of an index built before
has no time field; rather than give it the stage's ``missing`` value, `StoredUnitTimes`
looks its time up in one batch per store: the stored message spans of its transcript (the
exact send times of the messages it holds) or, for a file, the doc registry's ``updated_at``
(when the document last changed in the index: its last indexing, not its file time).

Also here: `temporal_decay_stage`, which builds the stage from a pipeline definition
(``half_life_s`` or ``half_life_days``). Source: issue #22, seed 002 ("Temporal Decay").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from unified_kg_rag.domain.messages.manifest import SPANS_NAMESPACE, parse_spans_records
from unified_kg_rag.domain.messages.transcripts import messages_in_span
from unified_kg_rag.domain.models import Collection, MetadataValue
from unified_kg_rag.domain.text.unit_times import (
    FIRST_TIME_FIELD,
    TIME_FIELD,
    epoch_s,
    message_times,
)
from unified_kg_rag.ports import IndexStores

from .pipeline import Candidate

if TYPE_CHECKING:
    from .pipeline_stages import TemporalDecayStage

__all__ = [
    "DAY_S",
    "StoredUnitTimes",
    "UnitTimeSource",
    "candidate_times",
    "temporal_decay_stage",
]

logger = logging.getLogger(__name__)

DAY_S = 86_400.0
"""Seconds in a day (``half_life_days`` is converted with it)."""

_READ_BATCH = 500


class UnitTimeSource(Protocol):
    """Looks up the times of candidates that carry none (see `StoredUnitTimes`)."""

    async def times(
        self, candidates: Sequence[Candidate], *, oldest: bool = False
    ) -> dict[str, float]:
        """Return candidate id → epoch seconds for those whose time is known.

        Args:
            candidates: candidates without a readable time field.
            oldest: the time of a transcript unit's oldest message (``timestamp_first``)
                rather than its newest.
        """
        ...


@dataclass(frozen=True)
class StoredUnitTimes:
    """The times of text units stored without time fields, from the index's other stores.

    A transcript unit's time comes from its transcript's stored message spans (newest, or
    oldest, of the messages overlapping its ``start_char``..``end_char``); any other unit's
    from its document's doc-registry record (``updated_at``, epoch seconds). Candidates that
    are not text units, or whose document is unknown, get no time. Reads: the candidates'
    records when they are not hydrated, the spans and the registry records, each in one
    batch (per 500 ids).

    Attributes:
        stores: the index's stores.
    """

    stores: IndexStores

    async def times(
        self, candidates: Sequence[Candidate], *, oldest: bool = False
    ) -> dict[str, float]:
        """Return candidate id → epoch seconds (see the class docstring).

        Raises:
            StoreError: a store failed.
        """
        fields: dict[str, Mapping[str, MetadataValue]] = {
            c.id: c.metadata for c in candidates if c.kind == "text_unit"
        }
        unread = [i for i, f in fields.items() if not isinstance(f.get("document_id"), str)]
        for first in range(0, len(unread), _READ_BATCH):
            ids = unread[first : first + _READ_BATCH]
            for stored in await self.stores.search.get(Collection.TEXT_UNITS, ids):
                fields[stored.id] = {**stored.fields, **fields[stored.id]}
        document_of = {i: str(f["document_id"]) for i, f in fields.items()
                       if isinstance(f.get("document_id"), str)}  # fmt: skip
        documents = sorted(set(document_of.values()))
        spans = {}
        for first in range(0, len(documents), _READ_BATCH):
            raw = await self.stores.records.get_many(
                SPANS_NAMESPACE, documents[first : first + _READ_BATCH])
            spans.update(parse_spans_records(raw))
        rest = [d for d in documents if d not in spans]
        registry = await self.stores.registry.get(rest) if rest else {}
        out: dict[str, float] = {}
        for unit_id, document in document_of.items():
            if document in spans:
                start, end = _int(fields[unit_id].get("start_char")), \
                    _int(fields[unit_id].get("end_char"))  # fmt: skip
                if start is None or end is None:
                    continue
                held = messages_in_span(spans[document].messages, start, end)
                found = message_times(m.timestamp for m in held)
                stamp = epoch_s(found.get(FIRST_TIME_FIELD if oldest else TIME_FIELD))
            else:
                record = registry.get(document)
                stamp = record.updated_at if record is not None and record.updated_at > 0 \
                    else None  # fmt: skip
            if stamp is not None:
                out[unit_id] = stamp
        return out


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def candidate_times(
    candidates: Sequence[Candidate], field: str, fallback: UnitTimeSource | None
) -> list[float | None]:
    """Return each candidate's time, epoch seconds (None: unknown), in order.

    Read from the candidate's metadata ``field`` (epoch seconds or ISO-8601); a document
    unit asked for ``timestamp_first`` (which only transcript units carry) gives its
    ``timestamp``. The candidates without a readable time are looked up in ``fallback`` in
    one call when ``field`` is one of the unit time fields.

    Raises:
        StoreError: the fallback's store failed.
    """
    out = [epoch_s(c.metadata.get(field)) for c in candidates]
    if field == FIRST_TIME_FIELD:
        out = [t if t is not None else epoch_s(c.metadata.get(TIME_FIELD))
               for c, t in zip(candidates, out, strict=True)]  # fmt: skip
    lacking = [c for c, t in zip(candidates, out, strict=True) if t is None]
    if fallback is None or not lacking or field not in (TIME_FIELD, FIRST_TIME_FIELD):
        return out
    found = await fallback.times(lacking, oldest=field == FIRST_TIME_FIELD)
    if found:
        logger.debug("temporal: %d of %d candidate(s) without a stored time looked up",
                     len(found), len(lacking))
    return [t if t is not None else found.get(c.id) for c, t in zip(candidates, out, strict=True)]


def temporal_decay_stage(
    params: Mapping[str, Any], stores: IndexStores | None
) -> TemporalDecayStage:
    """Build ``temporal_decay`` from a pipeline definition's parameters.

    Args:
        params: `TemporalDecayStage` fields, with ``half_life_days`` accepted in place of
            ``half_life_s`` (default 90 days), and ``fallback`` (bool, default true): look up
            the times of units stored without one (`StoredUnitTimes`, when ``stores`` is given).
        stores: the index's stores (None: no fallback).

    Raises:
        ValueError: both ``half_life_s`` and ``half_life_days`` are given, either is not a
            positive number, or another field is invalid.
        TypeError: an unknown parameter.
    """
    from .pipeline_stages import TemporalDecayStage

    given = dict(params)
    if "half_life_days" in given:
        if "half_life_s" in given:
            raise ValueError("give half_life_s or half_life_days, not both")
        days = given.pop("half_life_days")
        if isinstance(days, bool) or not isinstance(days, int | float) or not days > 0:
            raise ValueError(f"half_life_days must be a positive number of days, got {days!r}")
        given["half_life_s"] = float(days) * DAY_S
    given.setdefault("half_life_s", 90 * DAY_S)
    use_fallback = given.pop("fallback", True)
    if not isinstance(use_fallback, bool):
        raise ValueError(f"fallback must be true or false, got {use_fallback!r}")
    fallback = StoredUnitTimes(stores) if use_fallback and stores is not None else None
    return TemporalDecayStage(**given, fallback=fallback)
