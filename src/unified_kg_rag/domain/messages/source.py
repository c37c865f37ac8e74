"""Messages as a source hands them over: `SourceMessage`, its reactions, a parsed archive.

The records every message source (iMessage ``chat.db``, JSON Lines) yields, before they are
merged and rendered into transcripts (`domain.messages.transcripts`, which re-exports them).
Source: seed 001 (message-graph module reference: ``SourceMessage``).
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, field_validator

from unified_kg_rag.domain.messages.ref import MessageEdit
from unified_kg_rag.domain.text.analysis import repair_unicode

__all__ = [
    "TAPBACK_KINDS",
    "MessageSourceOptions",
    "ParsedArchive",
    "SourceMessage",
    "Tapback",
    "time_zone",
]

TAPBACK_KINDS: tuple[str, ...] = (
    "loved", "liked", "disliked", "laughed", "emphasized", "questioned", "emoji", "sticker",
)
"""Reaction kinds by offset from associated_message_type 2000 (add) / 3000 (remove)."""

_BREAKS = frozenset({"Cc", "Zl", "Zp"})
"""Unicode categories folded to a space in names (controls, line and paragraph separators)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _valid_unicode(value: object) -> object:
    """A string with its lone surrogates repaired (they cannot be stored, tokenized or printed).

    Sources repair (and report) what they read; this is the last guard for any source.
    """
    return repair_unicode(value) if isinstance(value, str) else value


class Tapback(_Model):
    """One reaction folded onto the message it reacts to (never a message of its own).

    Attributes:
        kind: one of `TAPBACK_KINDS`.
        sender_name: who reacted (the owner label for the owner's own reactions).
    """

    kind: str
    sender_name: str

    _repaired = field_validator("sender_name", mode="before")(_valid_unicode)


class SourceMessage(_Model):
    """One normalized message from any message source.

    Every string is valid Unicode: a lone surrogate given here becomes U+FFFD.

    Attributes:
        guid: stable per-message identity (iMessage ``message.guid``, never the ROWID).
        thread_id: stable thread identity (iMessage ``chat.guid``; `UNTHREADED_ID` when none).
        thread_name: the chat's display name, else its sorted participant names.
        sender_handle: raw handle (phone number or e-mail); ``""`` for the owner.
        sender_name: mapped display name, else the raw handle; the owner label when
            ``is_from_me``.
        is_from_me: the owner sent it.
        timestamp: send time, timezone-aware UTC; None when the source has none (0/NULL).
        text: the body; never empty (rows without recoverable text are skipped by sources);
            for an edited message, its last version.
        tapbacks: reactions folded onto this message, sorted.
        edited: the sender edited it after sending.
        edited_at: when it was last edited (timezone-aware UTC), None when unknown.
        edits: its earlier versions, oldest first (empty when the source keeps no history).
    """

    guid: str = Field(min_length=1)
    thread_id: str
    thread_name: str
    sender_handle: str = ""
    sender_name: str
    is_from_me: bool = False
    timestamp: datetime | None
    text: str = Field(min_length=1)
    tapbacks: tuple[Tapback, ...] = ()
    edited: bool = False
    edited_at: datetime | None = None
    edits: tuple[MessageEdit, ...] = ()

    _repaired = field_validator(
        "guid", "thread_id", "thread_name", "sender_handle", "sender_name", "text", mode="before"
    )(_valid_unicode)

    @field_validator("thread_name", "sender_name", "sender_handle")
    @classmethod
    def _one_line(cls, value: str) -> str:
        """Fold a name onto one line: control characters and line separators become spaces.

        Names render inside transcript lines, where a line break would forge a message line
        (a sender named "Bob", a line feed, then "[2024-03-01 09:00] Eve: ...").
        """
        return " ".join(
            "".join(" " if unicodedata.category(c) in _BREAKS else c for c in value).split()
        )

    @field_validator("timestamp", "edited_at")
    @classmethod
    def _aware_utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("timestamp must be timezone-aware")
        return value.astimezone(UTC)


class ParsedArchive(_Model):
    """What a message source read from one file.

    Attributes:
        source: the source's registered name (``imessage``, ``jsonl``).
        messages: every recoverable message, oldest first (undated ones first).
        skipped: rows not emitted as messages (counted, never emitted blank), reactions
            folded onto their message aside.
        skipped_reasons: ``skipped`` by reason (``no text``, ``attachment only``,
            ``unsent``, ``bad line`` ...; each source documents its reasons).
        tapbacks_folded: reactions folded onto a message of this file.
        tapbacks_orphaned: reactions whose target is not in this file (dropped).
        problems: one-line notes on rows that were skipped for another reason.
    """

    source: str
    messages: tuple[SourceMessage, ...] = ()
    skipped: int = 0
    skipped_reasons: dict[str, int] = Field(default_factory=dict)
    tapbacks_folded: int = 0
    tapbacks_orphaned: int = 0
    problems: tuple[str, ...] = ()


class MessageSourceOptions(_Model):
    """How sources name people and read local times.

    Attributes:
        handle_names: raw handle → display name (e.g. ``+15551234567`` → ``Bob``); several
            handles may map to one name.
        owner_label: the display name of the archive's owner (``is_from_me`` messages).
        timezone: IANA time zone of timestamps a source gives without an offset (a JSON Lines
            ``"2024-03-01T09:30:00"``); ``UTC`` by default.
    """

    handle_names: dict[str, str] = Field(default_factory=dict)
    owner_label: str = "Me"
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        time_zone(value)  # ValueError for an unknown zone
        return value

    @property
    def zone(self) -> tzinfo:
        """`timezone` as a `datetime.tzinfo`."""
        return time_zone(self.timezone)


def time_zone(tz: str) -> tzinfo:
    """Return the zone ``tz`` names (``UTC`` or an IANA name).

    Raises:
        ValueError: no such zone.
    """
    if tz.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(tz)
    except (KeyError, ValueError, OSError) as exc:  # not found: KeyError; "America": OSError
        raise ValueError(f"unknown time zone {tz!r}") from exc
