"""Claims resolved against the graph: the stored `Claim`, its search record and its text.

Resolution (seed 000 §4.1, "A claim's subject and object resolve only against the entities its
own text units stated"): a name resolves by its `entity_key` through
`ResolvedGraph.key_to_entity_id` (so it follows its entity through the graph's merges), and it
counts only when that entity is one the unit's own extraction listed. A claim whose subject
does not is dropped and counted; an object that does takes its entity's id, any other object
is kept as the literal name the claim states (``object_id`` empty).

A claim's id is the digest of its resolved content (subject and object ids or key, type,
status, dates, description): statements of several units that resolve to one id merge, their
text units joined, the first unit's (by id) source text kept. Everything is derived from the
stored records of the current units, so an incremental build yields exactly the claims of a
full one.

Not here: reading replies (`domain.extraction.claims`), storage (the ``claims`` search
collection, written by `ingestion.graph.write`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.extraction.claims import ClaimRecord
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.domain.models import IndexRecord
from unified_kg_rag.util.hashing import sha256_text

__all__ = [
    "Claim",
    "ResolvedClaims",
    "claim_from_record",
    "claim_order",
    "claim_record",
    "claim_text",
    "resolve_claims",
]


_STATUS_RANK = {"TRUE": 0, "SUSPECTED": 1, "FALSE": 2}


def claim_order(claim: Claim) -> tuple[int, int, str, str, str, str]:
    """Return the sort key of an entity's claims where they are listed (report Claims table).

    ``TRUE`` first, then ``SUSPECTED``, then ``FALSE``; within a status by start date (the
    undated last), then type, description and id (a total order: the same on every run).
    """
    return (_STATUS_RANK.get(claim.status, 1), claim.start_date is None,
            claim.start_date or "", claim.type, claim.description, claim.id)  # fmt: skip


class Claim(BaseModel):
    """A claim (covariate) of the graph: one statement about an entity, with its lineage.

    Attributes:
        id: digest of the resolved content (see the module docstring).
        subject_id: the id of the entity the claim is about.
        subject: that entity's display name.
        object_id: the object entity's id; "" when the object is not one of its units'
            entities (or there is none).
        object: the object's display name (the entity's, else the literal name), or "".
        type: claim type, upper snake case ("" when none was given).
        status: ``TRUE``, ``FALSE`` or ``SUSPECTED``.
        start_date: ISO-8601 date (``YYYY[-MM[-DD]]``) or None.
        end_date: ISO-8601 date or None.
        description: the claim's description.
        source_text: the verbatim text it rests on (of its first text unit).
        text_unit_ids: the text units stating it, sorted.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    subject_id: str
    subject: str
    object_id: str = ""
    object: str = ""
    type: str = ""
    status: str = "SUSPECTED"
    start_date: str | None = None
    end_date: str | None = None
    description: str = ""
    source_text: str = ""
    text_unit_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolvedClaims:
    """The claims of a build and what resolution dropped.

    Attributes:
        claims: sorted by id.
        dropped_subject: statements whose subject was not one of their unit's entities.
    """

    claims: tuple[Claim, ...]
    dropped_subject: int


def _claim_id(subject_id: str, object_ref: str, fields: Sequence[str | None]) -> str:
    return sha256_text("claim", subject_id, object_ref, *(f or "" for f in fields))


def resolve_claims(
    units: Sequence[tuple[str, ExtractionRecord, ClaimRecord]],
    key_to_entity_id: Mapping[str, str],
    names: Mapping[str, str],
) -> ResolvedClaims:
    """Resolve every unit's claims against its own entities and merge them by id.

    Args:
        units: ``(text_unit_id, the unit's extraction record, its claim record)``.
        key_to_entity_id: `ResolvedGraph.key_to_entity_id` (entity key → entity id).
        names: entity id → display name (the graph's entities).

    Returns:
        The claims (sorted by id) and the count of statements dropped for their subject.
    """
    merged: dict[str, Claim] = {}
    lineage: dict[str, set[str]] = {}
    dropped = 0
    for unit_id, extraction, record in sorted(units, key=lambda u: u[0]):
        own = {key_to_entity_id.get(entity_key(e.name)) for e in extraction.entities} - {None}
        for stated in record.claims:
            subject_id = key_to_entity_id.get(entity_key(stated.subject))
            if subject_id is None or subject_id not in own:
                dropped += 1
                continue
            object_key = entity_key(stated.object) if stated.object else ""
            object_id = key_to_entity_id.get(object_key, "")
            object_id = object_id if object_id in own else ""
            object_name = names.get(object_id, stated.object) if object_id else stated.object
            cid = _claim_id(
                subject_id,
                object_id or object_key,
                (entity_key(stated.type) if stated.type else "", stated.status,
                 stated.start_date, stated.end_date, " ".join(stated.description.split())),
            )  # fmt: skip
            lineage.setdefault(cid, set()).add(unit_id)
            merged.setdefault(cid, Claim(
                id=cid, subject_id=subject_id, subject=names.get(subject_id, stated.subject),
                object_id=object_id, object=object_name, type=stated.type,
                status=stated.status, start_date=stated.start_date, end_date=stated.end_date,
                description=stated.description, source_text=stated.source_text,
            ))  # fmt: skip
    claims = tuple(
        merged[c].model_copy(update={"text_unit_ids": tuple(sorted(lineage[c]))})
        for c in sorted(merged)
    )
    return ResolvedClaims(claims=claims, dropped_subject=dropped)


def _period(claim: Claim) -> str:
    if claim.start_date and claim.end_date and claim.start_date != claim.end_date:
        return f"{claim.start_date} to {claim.end_date}"
    return claim.start_date or claim.end_date or ""


def claim_text(claim: Claim) -> str:
    """Return the text a claim is searched and shown by.

    ``subject — TYPE — object [STATUS, period]: description`` (the object, type and period
    parts only when present), e.g. ``Acme — FRAUD — Bank [SUSPECTED, 2021-03]: Acme is
    suspected of ...``.
    """
    head = " — ".join(p for p in (claim.subject, claim.type, claim.object) if p)
    tags = ", ".join(p for p in (claim.status, _period(claim)) if p)
    return f"{head} [{tags}]: {claim.description}".rstrip(": ")


def claim_record(claim: Claim) -> IndexRecord:
    """Return the search record of a claim (collection ``claims``).

    Fields: every attribute of the claim (dates as "" when unknown) and ``text_unit_ids``
    as a JSON list (fields are scalars); ``subject_id`` and ``object_id`` are filterable.
    """
    fields = claim.model_dump(exclude={"id", "text_unit_ids"})
    fields["start_date"] = claim.start_date or ""
    fields["end_date"] = claim.end_date or ""
    fields["text_unit_ids"] = json.dumps(list(claim.text_unit_ids))
    return IndexRecord(id=claim.id, text=claim_text(claim), fields=fields)


def claim_from_record(record: IndexRecord) -> Claim | None:
    """Return the claim a search record stores; None when its fields are not a claim's."""
    f = record.fields
    try:
        units = json.loads(str(f.get("text_unit_ids") or "[]"))
        return Claim(
            id=record.id,
            subject_id=str(f["subject_id"]),
            subject=str(f.get("subject", "")),
            object_id=str(f.get("object_id") or ""),
            object=str(f.get("object") or ""),
            type=str(f.get("type") or ""),
            status=str(f.get("status") or "SUSPECTED"),
            start_date=str(f.get("start_date") or "") or None,
            end_date=str(f.get("end_date") or "") or None,
            description=str(f.get("description") or ""),
            source_text=str(f.get("source_text") or ""),
            text_unit_ids=tuple(str(u) for u in units),
        )
    except (KeyError, ValueError, TypeError):
        return None
