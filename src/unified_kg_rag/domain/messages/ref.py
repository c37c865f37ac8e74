"""`MessageRef`: one message of a message archive as a source or an answer's evidence names it.

Kept apart from `domain.models` (which re-exports it) so the archive-specific provenance does
not grow the shared models module.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["MessageEdit", "MessageRef"]


class MessageEdit(BaseModel):
    """An earlier version of an edited message (its text before an edit).

    Attributes:
        timestamp: ISO 8601 UTC time this version was written (the send time for the first
            version, else the edit that produced it), ``""`` when unknown.
        text: the version's text.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timestamp: str = ""
    text: str


class MessageRef(BaseModel):
    """One message of a message archive, as a source or the evidence of an answer names it.

    Attributes:
        guid: the message's stable id (iMessage ``message.guid``).
        thread_id: its thread.
        thread_name: the thread's display name.
        sender_name: who sent it (the owner label for the owner).
        sender_handle: the sender's raw handle (``""`` for the owner).
        is_from_me: the owner sent it.
        timestamp: ISO 8601 UTC send time, ``""`` when unknown.
        text: the message as rendered in its transcript (time, sender, body, an ``(edited
            ...)`` mark, reactions).
        label: its citation label in the answer context (``3.2``: message 2 of source 3).
        edited: the sender edited the message after sending it; ``text`` is its last version.
        edited_at: ISO 8601 UTC time of the last edit, ``""`` when unknown or not edited.
        edits: the earlier versions of its text, oldest first (the edit history; empty when
            the archive does not keep it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    guid: str
    thread_id: str
    thread_name: str
    sender_name: str
    sender_handle: str = ""
    is_from_me: bool = False
    timestamp: str = ""
    text: str = ""
    label: str = ""
    edited: bool = False
    edited_at: str = ""
    edits: tuple[MessageEdit, ...] = ()
