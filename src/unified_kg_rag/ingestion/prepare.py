"""Turning one corpus entry into a document and its text units (a file, or a transcript).

A file is read, parsed by the parser of its extension and chunked at natural boundaries
(`domain.text.chunking.chunk_text`); a message transcript is already rendered and is cut into
units of whole messages (`domain.messages.transcripts.chunk_transcript`), so every unit names
exactly the messages it holds.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.index.attempts import carried_failures
from unified_kg_rag.domain.messages.manifest import chunk_transcript
from unified_kg_rag.domain.messages.transcripts import (
    MESSAGE_SCOPE,
    TranscriptDoc,
    messages_in_span,
    transcript_hash,
)
from unified_kg_rag.domain.models import DocRecord, DocStatus, Document, TextUnit
from unified_kg_rag.domain.text.chunking import CHUNKING_VERSION, build_text_units, chunk_text
from unified_kg_rag.domain.text.embedding_input import EMBEDDING_INPUT_VERSION
from unified_kg_rag.domain.text.unit_times import document_times, message_times
from unified_kg_rag.ingestion.corpus import CorpusFile, parse_file, read_file
from unified_kg_rag.ports import DocumentParser, TokenCounter
from unified_kg_rag.util.errors import InputError, UkrError
from unified_kg_rag.util.hashing import sha256_json

__all__ = [
    "TRANSCRIPT_CHUNKING",
    "failure_reason",
    "fingerprint",
    "parse_and_chunk",
    "registry_record",
    "transcript_document",
]

logger = logging.getLogger(__name__)

TRANSCRIPT_CHUNKING = 1
"""Version of the transcript chunking (whole messages per unit); bump when its units change."""


def fingerprint(config: UkrConfig, content_hash: str, *, transcript: bool = False) -> str:
    """Return what the registry compares for a document.

    The content's hash and every setting that shapes the text units and their vectors, so
    changing one re-indexes the corpus (for a transcript, the transcript chunking version).
    """
    chunking = config.chunking
    value: dict[str, object] = {
        "bytes": content_hash,
        "size_tokens": chunking.size_tokens,
        "overlap_tokens": chunking.overlap_tokens,
        "chunking": CHUNKING_VERSION,
        "embedding_input": EMBEDDING_INPUT_VERSION,
    }
    if transcript:
        value["transcripts"] = TRANSCRIPT_CHUNKING
    return sha256_json(value)


def transcript_document(file: CorpusFile, doc: TranscriptDoc, content_hash: str) -> Document:
    """Return the `Document` of a rendered transcript (path: its ``doc_key``).

    ``content_hash`` is `domain.messages.transcripts.transcript_hash` of the transcript.
    """
    return Document(
        id=file.document_id,
        path=doc.doc_key,
        title=doc.title,
        text=doc.text,
        content_hash=content_hash,
        metadata={"source_scope": MESSAGE_SCOPE, "thread_id": doc.thread_id,
                  "thread_name": doc.thread_name, "span": doc.span},
    )


def parse_and_chunk(
    file: CorpusFile,
    transcript: TranscriptDoc | None,
    *,
    config: UkrConfig,
    tokenizer: TokenCounter,
    parsers: Mapping[str, DocumentParser],
) -> tuple[Document, list[TextUnit]]:
    """Read, parse and chunk one corpus entry (blocking: run it in a worker thread).

    Each unit carries its time fields (`domain.text.unit_times`): a transcript unit the send
    times of its newest and oldest messages, a file's units the date the document states or
    else the file's modification time. They change no id or content hash.

    Args:
        file: the corpus entry.
        transcript: its rendered transcript when it is one (then nothing is read).
        config: ``parsing`` and ``chunking``.
        tokenizer: the tokenizer text units are measured in.
        parsers: parser per file extension.

    Raises:
        InputError: the file cannot be read or parsed, or has no text.
    """
    if transcript is not None:
        doc = transcript_document(file, transcript, transcript_hash(transcript))
        spans = tokenizer.token_spans(doc.text)
        chunks = chunk_transcript(transcript, spans, size_tokens=config.chunking.size_tokens)
    else:
        data, digest = read_file(file, parsing=config.parsing)
        doc = parse_file(file, data, digest, parsers)
        spans = tokenizer.token_spans(doc.text)
        chunks = chunk_text(
            doc.text,
            spans,
            size_tokens=config.chunking.size_tokens,
            overlap_tokens=config.chunking.overlap_tokens,
        )
        times = document_times(doc.metadata, _modified_s(file.path))
        doc = doc.model_copy(update={"metadata": {**doc.metadata, **times}})
    units = build_text_units(doc, chunks)
    if not units:
        raise InputError(file.display_path, "empty document (no text)")
    if transcript is not None:
        units = [_with_message_times(u, transcript) for u in units]
    return doc, units


def _modified_s(path: os.PathLike[str]) -> float | None:
    """The file's modification time, epoch seconds (None when it cannot be read)."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _with_message_times(unit: TextUnit, transcript: TranscriptDoc) -> TextUnit:
    """``unit`` with the send times of the messages it holds in its metadata."""
    held = messages_in_span(transcript.messages, unit.start_char, unit.end_char)
    times = message_times(m.timestamp for m in held)
    return unit.model_copy(update={"metadata": {**unit.metadata, **times}}) if times else unit


def registry_record(
    config: UkrConfig,
    file: CorpusFile,
    doc: Document | None,
    status: DocStatus,
    unit_ids: tuple[str, ...],
    *,
    content_hash: str = "",
    error: str | None = None,
    carry_from: DocRecord | None = None,
) -> DocRecord:
    """Build the registry record of a corpus entry.

    A parsed document's (or transcript's) fingerprint is taken from its content now (the
    file may have changed since it was hashed); without one, ``content_hash`` (a
    fingerprint) is recorded. ``carry_from`` (the record it replaces, for a write-ahead
    ``pending`` record) passes on its consecutive failures at the same content, so an
    interrupted attempt does not reset the count toward quarantine.
    """
    if doc is not None:
        transcript = doc.metadata.get("source_scope") == MESSAGE_SCOPE
        content_hash = fingerprint(config, doc.content_hash, transcript=transcript)
    return DocRecord(
        document_id=file.document_id,
        path=file.relative_path,
        source_scope=file.source_scope,
        content_hash=content_hash,
        status=status,
        text_unit_ids=unit_ids,
        error=error,
        updated_at=time.time(),
        failure_count=carried_failures(carry_from, content_hash),
    )


def failure_reason(file: CorpusFile, error: BaseException | None) -> str:
    """Return the one-line reason a corpus entry failed, or re-raise a fatal error.

    An `InputError` gives its reason; any other non-`UkrError` exception (a parser bug, an odd
    file) fails that entry only, its traceback logged at DEBUG.

    Raises:
        UkrError: ``error`` itself when it is a project error other than `InputError` (a store
            or model failure is never one document's problem).
    """
    if isinstance(error, InputError):
        return " ".join(error.reason.split())
    if isinstance(error, Exception) and not isinstance(error, UkrError):
        logger.debug("unexpected error on %s", file.display_path, exc_info=error)
        return " ".join(f"{type(error).__name__}: {error}".split())
    raise error if error is not None else RuntimeError("failure without an error")
