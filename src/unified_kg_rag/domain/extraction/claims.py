"""Claims (GraphRAG covariates) as one text unit states them: record, prompt, reply reading.

A claim is a statement the text makes about one of its own entities: subject, object, type,
status (``TRUE``, ``FALSE``, ``SUSPECTED``), start and end dates, description and the source
text it rests on (Microsoft GraphRAG's claim extraction, ``extract_claims``). The claim prompt
lists the unit's extracted entity names, so a unit's claims depend on the unit alone, and one
`ClaimRecord` per text (keyed by `claim_fingerprint`) is stored like the extraction records.
Resolving claims against the graph's entities is `domain.graph.claims`.

Replies are a JSON object ``{"claims": [...]}`` (`domain.llm.json_reply`); a reply cut at the
length limit keeps its complete claim objects. Statuses are normalised (`normalize_status`:
an unknown word reads ``SUSPECTED``), dates read leniently (`claim_dates.parse_claim_date`:
a date that cannot be read is None, the claim stays). Source: seed 000 §4 stages 8-9, §4.1.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import regex
from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.extraction.claim_dates import parse_claim_date
from unified_kg_rag.domain.extraction.xml_records import FENCE, NONE_REPLY, strip_reasoning
from unified_kg_rag.domain.llm.finish import reply_complete
from unified_kg_rag.domain.llm.json_reply import parse_json_object, repair_json_strings
from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts.render import render_messages
from unified_kg_rag.util.errors import ModelOutputError
from unified_kg_rag.util.hashing import sha256_json

__all__ = [
    "CLAIM_FORMAT_VERSION",
    "CLAIM_STATUSES",
    "ClaimRecord",
    "ExtractedClaim",
    "ParsedClaims",
    "claim_fingerprint",
    "claim_type",
    "normalize_status",
    "parse_claims_reply",
    "render_claim_messages",
]

logger = logging.getLogger(__name__)

CLAIM_FORMAT_VERSION = 2
"""Bump when the record shape or the reading of replies changes (re-keys claim records)."""

CLAIM_STATUSES = ("TRUE", "FALSE", "SUSPECTED")
"""The statuses a stored claim has (Microsoft GraphRAG's)."""

_STATUS_WORDS = {
    "TRUE": (
        "true", "confirmed", "yes", "verified", "fact", "factual", "correct", "proven", "1",
        "vrai", "oui", "confirmé", "wahr", "ja", "bestätigt", "richtig", "verdadero", "sí",
        "si", "confirmado", "真", "是", "属实", "真实", "确认", "確認", "事実", "正しい", "はい",
    ),
    "FALSE": (
        "false", "refuted", "denied", "no", "untrue", "incorrect", "disproven", "debunked",
        "not true", "0", "faux", "non", "réfuté", "falsch", "nein", "unwahr", "widerlegt",
        "falso", "refutado", "假", "否", "不实", "不實", "虚假", "虛假", "错误", "錯誤", "偽",
        "誤り", "虚偽", "いいえ",
    ),
}  # fmt: skip
_STATUS_OF = {w: s for s, words in _STATUS_WORDS.items() for w in words}
_DECODER = json.JSONDecoder()
_MAX_SALVAGE_STARTS = 2000
"""Most ``{`` positions a broken reply is decoded from (bounds the cost of a reply of braces)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtractedClaim(_Model):
    """A claim as one text unit states it (names as written; not yet resolved).

    Attributes:
        subject: the subject entity's name as the reply writes it.
        object: the object entity's name, or "" when the claim has none.
        type: the claim type, upper snake case (``FRAUD`` ...); "" when the model gave none.
        status: ``TRUE``, ``FALSE`` or ``SUSPECTED`` (`normalize_status`).
        start_date: ISO-8601 (``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY``), or None.
        end_date: ISO-8601 likewise, or None.
        description: what the text claims, in the model's words.
        source_text: the verbatim text the claim rests on ("" when missing).
    """

    subject: str
    object: str = ""
    type: str = ""
    status: str = "SUSPECTED"
    start_date: str | None = None
    end_date: str | None = None
    description: str = ""
    source_text: str = ""


class ClaimRecord(_Model):
    """The claims of one text (identical text units share it).

    Attributes:
        fingerprint: `claim_fingerprint` of the text, its entity names, model, prompt and
            settings: the record store key.
        claims: the claims of the reply, in reply order, at most ``max_per_unit``.
        truncated: the reply was cut; the complete claims before the cut are kept.
        model: the chat model id that answered.
        finish_reason: the reply's finish reason (``stop`` when complete).
        capped: readable claims of the reply past ``max_per_unit``, not kept.
    """

    fingerprint: str
    claims: tuple[ExtractedClaim, ...] = ()
    truncated: bool = False
    model: str = ""
    finish_reason: str = "stop"
    capped: int = 0

    @property
    def complete(self) -> bool:
        """True when the reply was complete: a record that is not is asked again next run."""
        return reply_complete(self.finish_reason) and not self.truncated


class ParsedClaims(_Model):
    """A claim reply read: its claims and whether it was cut."""

    claims: tuple[ExtractedClaim, ...] = ()
    truncated: bool = False
    capped: int = 0
    """Readable claims past ``max_claims``, not kept."""


def claim_fingerprint(
    text: str,
    entity_names: Sequence[str],
    *,
    model_id: str,
    template: str,
    settings: dict[str, object],
) -> str:
    """Return the record-store key of a text unit's claims.

    Covers the unit's text, the entity names the prompt lists (extraction changed: ask
    again), the chat model, the prompt template and the settings that shape the reply.
    """
    return sha256_json(
        {
            "v": CLAIM_FORMAT_VERSION,
            "text": text,
            "entities": list(entity_names),
            "model": model_id,
            "prompt": template,
            "settings": settings,
        }
    )


def render_claim_messages(
    text: str,
    entity_names: Sequence[str],
    *,
    template: str,
    claim_description: str,
    claim_types: Sequence[str],
) -> list[Message]:
    """Return the claim prompt's messages for one text unit.

    Placeholders: ``{text}``, ``{entity_names}`` (one name a line), ``{claim_description}``,
    ``{claim_types}`` (comma-separated, or "any type the text suggests").
    """
    return render_messages(
        template,
        {
            "text": text,
            "entity_names": "\n".join(f"- {n}" for n in entity_names),
            "claim_description": claim_description,
            "claim_types": ", ".join(claim_types) or "any type the text suggests",
        },
    )


def normalize_status(value: object) -> str:
    """Return ``TRUE``, ``FALSE`` or ``SUSPECTED`` for a reply's status word.

    Case, spaces and punctuation are ignored; ``confirmed``/``yes``/``1`` read TRUE,
    ``refuted``/``denied``/``no``/``not true``/``untrue``/``0`` FALSE, and so do the common
    words for true and false in French, German, Spanish, Chinese and Japanese (``vrai``/
    ``faux``, ``wahr``/``falsch``, ``verdadero``/``falso``, ``真``/``假``/``否``/``不实``,
    ``事実``/``誤り``); anything else (``SUSPECTED``, ``alleged``, a word the model invented,
    nothing at all) reads ``SUSPECTED``: a claim whose status cannot be read is at most
    suspected (a deliberate choice: the claim is kept, not dropped).
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        value = {1: "1", 0: "0"}.get(int(value), "") if value in (0, 1) else ""
    word = " ".join(str(value or "").casefold().replace("_", " ").split()).strip(" .!\"'。！")
    return _STATUS_OF.get(word, "SUSPECTED")


_EMPTY = frozenset({"none", "null", "n/a", "na", "nil", "-", "—", "unknown", "no object"})
_CONTROL = regex.compile(r"[\p{Cc}\p{Cs}]")
_NON_WORD = regex.compile(r"[^\p{L}\p{N}\p{M}]+")
_FIELDS = {
    "subject": ("subject", "subject_entity", "subject_id", "subject_name", "entity"),
    "object": ("object", "object_entity", "object_id", "object_name"),
    "type": ("type", "claim_type"),
    "status": ("status", "claim_status"),
    "start_date": ("start_date", "claim_date_start", "start"),
    "end_date": ("end_date", "claim_date_end", "end"),
    "description": ("description", "claim_description"),
    "source_text": ("source_text", "source", "span", "claim_source"),
}
"""Claim field → the keys a reply may give it under (GraphRAG's own names included)."""
_SUBJECT_KEYS = frozenset(_FIELDS["subject"])


def _key(key: object) -> str:
    """Return a reply key read case-insensitively: trimmed, lower case, spaces as ``_``."""
    return "_".join(str(key).casefold().replace("-", " ").split())


def _keyed(item: dict[str, object]) -> dict[str, object]:
    """Return a reply object with its keys read by `_key` (the first of equal keys wins)."""
    out: dict[str, object] = {}
    for k, v in item.items():
        out.setdefault(_key(k), v)
    return out


def _field(item: dict[str, object], name: str) -> object:
    """Return the first non-empty value of a claim field under any of its keys."""
    for key in _FIELDS[name]:
        if (value := item.get(key)) not in (None, "", [], {}):
            return value
    return None


def _text(value: object, *, name: bool = False) -> str:
    """Return a reply value as one line without control characters.

    A name may be given as ``{"name": ...}``; a name that is a placeholder ("None", "N/A")
    is "".
    """
    if name and isinstance(value, dict):
        value = _keyed(value).get("name") or _keyed(value).get("title")
    if value is None or isinstance(value, dict | list):
        return ""
    text = " ".join(_CONTROL.sub(" ", str(value)).split())
    return "" if name and text.casefold().strip(" .") in _EMPTY else text


def claim_type(value: object) -> str:
    """Return a claim type in upper snake case: runs of non-letters/digits are one ``_``.

    Letters of any script are kept (``anti competitive-practices`` → ``ANTI_COMPETITIVE_
    PRACTICES``, ``Täuschung`` → ``TÄUSCHUNG``, ``詐欺`` → ``詐欺``).
    """
    return _NON_WORD.sub("_", _text(value).upper()).strip("_")


def _claim(raw: dict[str, object]) -> ExtractedClaim | None:
    """Build a claim from one reply object; None without a usable subject."""
    item = _keyed(raw)
    subject = _text(_field(item, "subject"), name=True)
    if not any(ch.isalnum() for ch in subject):
        return None
    start = parse_claim_date(_field(item, "start_date"))
    end = parse_claim_date(_field(item, "end_date"))
    if start is not None and end is not None and end < start[: len(end)]:
        logger.info("claim end date %s before its start %s dropped", end, start)
        end = None  # an end before the start is no period: the start is kept
    return ExtractedClaim(
        subject=subject,
        object=_text(_field(item, "object"), name=True),
        type=claim_type(_field(item, "type")),
        status=normalize_status(_field(item, "status")),
        start_date=start,
        end_date=end,
        description=_text(_field(item, "description")),
        source_text=_text(_field(item, "source_text")),
    )


def _placeholder_subject(item: dict[str, object]) -> bool:
    """True when a claim object's subject is a placeholder ("None", "N/A").

    That is the model saying there is no claim, not a shape the reader misses.
    """
    value = _field(_keyed(item), "subject")
    return isinstance(value, str) and bool(value.strip()) and not _text(value, name=True)


def _objects(value: object) -> list[dict[str, object]]:
    """Return the objects of a decoded JSON list (other values skipped)."""
    return [i for i in value if isinstance(i, dict)] if isinstance(value, list) else []


def _first_list(text: str) -> list[object] | None:
    """Return the first JSON list of claim objects in ``text`` (at most 16 ``[`` tried)."""
    start, tries = text.find("["), 0
    while start != -1 and tries < 16:
        tries += 1
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            start = text.find("[", start + 1)
            continue
        if isinstance(value, list) and (not value or any(isinstance(v, dict) for v in value)):
            return [repair_json_strings(v) for v in value]
        start = text.find("[", start + 1)
    return None


def _salvage(text: str) -> list[dict[str, object]]:
    """Return the complete claim objects of a reply whose outer JSON does not decode."""
    out: list[dict[str, object]] = []
    start, tries = text.find("{", max(text.find("["), 0)), 0
    while start != -1 and tries < _MAX_SALVAGE_STARTS:
        tries += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict) and _SUBJECT_KEYS & {_key(k) for k in value}:
            out.append({str(k): repair_json_strings(v) for k, v in value.items()})
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)
    return out


def parse_claims_reply(
    reply: str, *, finish_reason: str = "stop", max_claims: int = 200
) -> ParsedClaims:
    """Read a claim reply: ``{"claims": [{"subject": ..., ...}, ...]}``.

    Tolerates reasoning blocks, code fences and prose around the JSON, a bare list of claim
    objects, a reply that says there is nothing (``None``, ``{"claims": []}``), and a reply
    cut off (its complete claim objects are kept and ``truncated`` is set). A claim without a
    usable subject is skipped; a reply whose claim objects all lack one is unreadable (keys
    are read case-insensitively and trimmed, GraphRAG's own names such as ``subject_id``,
    ``claim_type``, ``claim_description``, ``claim_status`` and ``entity`` are accepted, and a
    name may be ``{"name": ...}``). An end date before the start date is dropped (logged).

    Args:
        reply: the model's reply text.
        finish_reason: the provider's finish reason; other than ``stop`` marks it truncated.
        max_claims: claims kept at most (the first ones).

    Raises:
        ModelOutputError: the reply is empty, holds no claim object and does not say there
            is none, or holds claim objects none of which names a readable subject.
    """
    if not reply.strip():
        raise ModelOutputError("claim reply is empty")
    text = strip_reasoning(reply)
    cut = not reply_complete(finish_reason)
    obj = parse_json_object(text)
    obj = _keyed(obj) if obj is not None else None
    if (obj is None or "claims" not in obj) and text != reply:
        # a "<think>" written inside a value (a description) cut the text: read it whole
        whole = parse_json_object(reply)
        if whole is not None and "claims" in (keyed := _keyed(whole)):
            text, obj = reply, keyed
    items: list[dict[str, object]] | None = None
    if obj is not None and isinstance(obj.get("claims"), list):
        items = _objects(obj["claims"])
    elif obj is not None and "claims" in obj and not obj["claims"]:  # "claims": null
        items = []
    elif (listed := _first_list(text)) is not None:
        items = _objects(listed)
    if items is None:
        items = _salvage(text)
        if not items:
            bare = FENCE.sub("", text).strip()
            if cut or NONE_REPLY.fullmatch(bare) or obj == {}:
                return ParsedClaims(truncated=cut)
            raise ModelOutputError(f"claim reply holds no claim object: {bare[:80]!r}")
        # one claim object alone is a whole reply; pieces of a list that does not decode are
        # what came before a cut (or a break)
        cut = cut or len(items) > 1 or "[" in text
    claims = [c for c in (_claim(i) for i in items) if c is not None]
    if items and not claims and not cut and not all(_placeholder_subject(i) for i in items):
        keys = sorted({_key(k) for i in items for k in i})[:8]
        raise ModelOutputError(f"claim reply has claim objects but no readable subject "
                               f"(keys: {', '.join(keys)})")  # fmt: skip
    return ParsedClaims(
        claims=tuple(claims[:max_claims]), truncated=cut, capped=max(0, len(claims) - max_claims)
    )
