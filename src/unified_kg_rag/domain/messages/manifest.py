"""Transcripts in an index: text units of whole messages, the manifest diff, stored spans.

`chunk_transcript` cuts a transcript into text units that never split a message (so each
unit names exactly the messages it holds). `diff_manifest` classifies a fresh render against
what an index holds by content hash, and `respanned` picks the removed transcripts a bounded
build may delete. `spans_record`/`parse_spans_record` are the record an index keeps per
transcript: where each message sits in its text (the provenance index queries read).

Source: seed 001 (``WorkdirManifest.diff``/``respanned``, the manifest as durable provenance
index) and seed 004 (ADR-017 amendment of 2026-08-10: bounded builds prune their re-span
casualties).
"""

from __future__ import annotations

import json
import logging
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.messages.transcripts import (
    MessageSpan,
    TranscriptDoc,
    message_line_spans,
    transcript_hash,
)
from unified_kg_rag.domain.models import MessageRef
from unified_kg_rag.domain.text.chunking import ChunkSpan, chunk_text

logger = logging.getLogger(__name__)

__all__ = [
    "SPANS_NAMESPACE",
    "ManifestDiff",
    "ManifestEntry",
    "StoredTranscript",
    "chunk_transcript",
    "diff_manifest",
    "message_ref",
    "parse_spans_record",
    "parse_spans_records",
    "respanned",
    "spans_record",
]

SPANS_NAMESPACE = "message_spans"
"""Record store namespace: document id → `spans_record` of its transcript."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def chunk_transcript(
    doc: TranscriptDoc, token_spans: Sequence[tuple[int, int]], *, size_tokens: int
) -> list[ChunkSpan]:
    """Cut a transcript into text units of whole messages, at most ``size_tokens`` each.

    Message blocks (`message_line_spans`) are packed greedily; a block longer than the window
    is cut alone by `domain.text.chunking.chunk_text` (no overlap). Units never cut a message
    otherwise, so each names exactly the messages it holds.

    Args:
        doc: the transcript.
        token_spans: ``(start, end)`` character offsets of every token of ``doc.text``.
        size_tokens: the window size, tokens.

    Returns:
        Chunks tiling the messages of ``doc`` in order (trailing whitespace excluded).

    Raises:
        ValueError: ``size_tokens`` is below 1.
    """
    if size_tokens < 1:
        raise ValueError(f"size_tokens must be at least 1; got {size_tokens}")
    starts = [s for s, _ in token_spans]
    chunks: list[ChunkSpan] = []
    first = last = -1
    tokens = 0

    def flush() -> None:
        if first >= 0:
            chunks.append(ChunkSpan(first, last, tokens))

    for start, end in message_line_spans(doc):
        n = bisect_left(starts, end) - bisect_left(starts, start)
        if n > size_tokens:
            flush()
            first, tokens = -1, 0
            inner = [(a - start, b - start) for a, b in token_spans if a >= start and b <= end]
            for piece in chunk_text(doc.text[start:end], inner, size_tokens=size_tokens,
                                    overlap_tokens=0):
                chunks.append(ChunkSpan(start + piece.start_char, start + piece.end_char,
                                        piece.n_tokens))
            continue
        # tokens between the previous block and this one (a tokenizer's newline token)
        gap = bisect_left(starts, start) - bisect_left(starts, last) if first >= 0 else 0
        if first >= 0 and tokens + gap + n > size_tokens:
            flush()
            first, tokens, gap = -1, 0, 0
        if first < 0:
            first = start
        last, tokens = end, tokens + gap + n
    flush()
    return chunks


class ManifestEntry(_Model):
    """What an index holds for one transcript.

    Attributes:
        doc_key: the transcript's key.
        document_id: its document id in the index.
        content_hash: `transcript_hash` of the indexed text.
        message_guids: its messages, in transcript order (empty when unknown).
    """

    doc_key: str
    document_id: str
    content_hash: str
    message_guids: tuple[str, ...] = ()


class ManifestDiff(_Model):
    """How a fresh render differs from what an index holds.

    Attributes:
        new: keys the index has never held, in render order.
        changed: keys whose rendered text hashes differently (their old text units go).
        unchanged: keys whose text is identical (no work).
        removed: keys the index holds that the render does not mention, sorted.
    """

    new: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


def diff_manifest(
    indexed: Mapping[str, ManifestEntry],
    rendered: Sequence[TranscriptDoc],
    *,
    hash_of: Callable[[TranscriptDoc], str] = transcript_hash,
) -> ManifestDiff:
    """Classify a render against the manifest by content hash (seed 001 ``diff``).

    Args:
        indexed: doc_key → what the index holds.
        rendered: the fresh transcripts.
        hash_of: the hash compared with `ManifestEntry.content_hash` (an index may fold its
            chunking settings into it, so a settings change reads as a change).

    Returns:
        The four-way split.
    """
    new: list[str] = []
    changed: list[str] = []
    unchanged: list[str] = []
    seen: set[str] = set()
    for doc in rendered:
        seen.add(doc.doc_key)
        known = indexed.get(doc.doc_key)
        if known is None:
            new.append(doc.doc_key)
        elif known.content_hash == hash_of(doc):
            unchanged.append(doc.doc_key)
        else:
            changed.append(doc.doc_key)
    removed = sorted(k for k in indexed if k not in seen)
    return ManifestDiff(
        new=tuple(new), changed=tuple(changed), unchanged=tuple(unchanged), removed=tuple(removed)
    )


def respanned(
    indexed: Mapping[str, ManifestEntry], removed: Sequence[str], rendered: Sequence[TranscriptDoc]
) -> list[str]:
    """Return the removed keys a bounded build may delete: its re-span casualties.

    Greedy day packing makes keys window-relative: moving a bounded window shifts pack
    boundaries and re-keys transcripts whose messages did not change. A removed key whose
    every message is in this render is re-indexed under a new key by this very build, so
    deleting it loses nothing; partial or unknown coverage reads as out-of-window content and
    is kept (seed 004, amendment of 2026-08-10).

    Args:
        indexed: doc_key → what the index holds.
        removed: `ManifestDiff.removed` of the same render.
        rendered: the bounded build's transcripts.

    Returns:
        The keys of ``removed`` that are fully covered, in input order.
    """
    covered = {guid for doc in rendered for guid in doc.message_guids}
    out: list[str] = []
    for key in removed:
        known = indexed.get(key)
        if known is not None and known.message_guids and covered.issuperset(known.message_guids):
            out.append(key)
    return out


# ----------------------------------------------------------------------------- provenance


@dataclass(frozen=True)
class StoredTranscript:
    """What an index keeps of a transcript besides its text: where each message sits.

    Attributes:
        doc_key: the transcript's key.
        thread_id: its thread.
        thread_name: the thread's display name.
        messages: the message spans, in transcript order.
    """

    doc_key: str
    thread_id: str
    thread_name: str
    messages: tuple[MessageSpan, ...]


def spans_record(doc: TranscriptDoc) -> str:
    """Return the JSON record an index stores for ``doc`` (see `parse_spans_record`)."""
    return json.dumps(
        {
            "doc_key": doc.doc_key,
            "thread_id": doc.thread_id,
            "thread_name": doc.thread_name,
            "messages": [m.model_dump(exclude_defaults=True) for m in doc.messages],
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def parse_spans_record(raw: str) -> StoredTranscript:
    """Read a `spans_record`.

    Raises:
        ValueError: the record is not one (malformed JSON or fields).
    """
    try:
        value = json.loads(raw)
        return StoredTranscript(
            doc_key=str(value["doc_key"]),
            thread_id=str(value["thread_id"]),
            thread_name=str(value["thread_name"]),
            messages=tuple(MessageSpan.model_validate(m) for m in value["messages"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a message spans record: {exc}") from exc


def parse_spans_records(raw: Mapping[str, str]) -> dict[str, StoredTranscript]:
    """Read the `spans_record` values of a record-store read (document id → record).

    An unreadable record is logged and left out: its document's sources name no messages.
    """
    out: dict[str, StoredTranscript] = {}
    for key, value in raw.items():
        try:
            out[key] = parse_spans_record(value)
        except ValueError:
            logger.warning("unreadable message spans of document %s; ignored", key)
    return out


def message_ref(
    stored: StoredTranscript, span: MessageSpan, text: str, label: str = ""
) -> MessageRef:
    """Return the `MessageRef` of one message (``text``: its rendered block)."""
    return MessageRef(
        guid=span.guid, thread_id=stored.thread_id, thread_name=stored.thread_name,
        sender_name=span.sender_name, sender_handle=span.sender_handle,
        is_from_me=span.is_from_me, timestamp=span.timestamp, text=text, label=label,
        edited=span.edited, edited_at=span.edited_at, edits=span.edits,
    )
