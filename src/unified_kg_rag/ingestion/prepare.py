"""Turning one corpus entry into a document and its text units (a file, or a transcript).

A file is read, parsed by the parser of its extension and chunked at natural boundaries
(`domain.chunking.chunk_text`); a message transcript is already rendered and is cut into
units of whole messages (`domain.messages.chunk_transcript`), so every unit names exactly the
messages it holds.
"""

from __future__ import annotations

from collections.abc import Mapping

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.chunking import CHUNKING_VERSION, build_text_units, chunk_text
from unified_kg_rag.domain.embedding_input import EMBEDDING_INPUT_VERSION
from unified_kg_rag.domain.messages import (
    MESSAGE_SCOPE,
    TranscriptDoc,
    chunk_transcript,
    transcript_hash,
)
from unified_kg_rag.domain.models import Document, TextUnit
from unified_kg_rag.ingestion.corpus import CorpusFile, parse_file, read_file
from unified_kg_rag.ports import DocumentParser, TokenCounter
from unified_kg_rag.util.errors import InputError
from unified_kg_rag.util.hashing import sha256_json

__all__ = ["TRANSCRIPT_CHUNKING", "fingerprint", "parse_and_chunk", "transcript_document"]

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

    ``content_hash`` is `domain.messages.transcript_hash` of the transcript.
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
    units = build_text_units(doc, chunks)
    if not units:
        raise InputError(file.display_path, "empty document (no text)")
    return doc, units
