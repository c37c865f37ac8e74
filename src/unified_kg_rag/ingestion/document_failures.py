"""A document's own failures: recording them, counting them toward quarantine, isolating them.

What belongs here (seed 000 §5.3 "Attempts and quarantine"):

- `is_document_error`: whether an exception escaping a batch's processing can be one
  document's fault, or is clearly the run's (a store, the configuration, the lease, an
  interruption, a model that is down: these propagate at once and never count).
- `write_isolating`: a batch whose write raises a document's error is split in halves and
  each half written again, down to single documents, so one poisoned document fails alone and
  the rest of the batch is committed. When every document of a batch of two or more fails
  alone with the same error, no document is at fault: the error is raised.
- `record_document_failure`: the registry record of a failed document: ``failed``, or
  ``quarantined`` once it failed on ``indexing.quarantine_after`` consecutive runs at the same
  content (`domain.index.attempts`). Its earlier text units are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.index.attempts import carried_failures, is_quarantined
from unified_kg_rag.domain.models import DocStatus
from unified_kg_rag.ingestion.corpus import CorpusFile
from unified_kg_rag.ingestion.prepare import registry_record
from unified_kg_rag.ingestion.report import FailedDocument, IndexReport
from unified_kg_rag.ports import IndexStores, ProgressReporter
from unified_kg_rag.util.errors import (
    BuildInProgress,
    ConfigurationError,
    EmbeddingMismatchError,
    IndexingInterruptedError,
    InputError,
    ModelError,
    ModelIntegrityError,
    StoreError,
    UsageError,
)

__all__ = ["is_document_error", "own_reason", "record_document_failure", "write_isolating"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_NOT_A_DOCUMENT = (
    StoreError,  # LeaseLostError and StoreConnectionError included
    ConfigurationError,
    EmbeddingMismatchError,
    UsageError,
    BuildInProgress,
    IndexingInterruptedError,
    ModelIntegrityError,
)
_AUTH_STATUS = frozenset({401, 403})


def is_document_error(exc: BaseException) -> bool:
    """True when ``exc`` may be the fault of the documents being written.

    False for a store error (a lost lease included), a configuration or usage error (an
    embedding model that differs from the index's among them), another run's lease, an
    interruption, a transient or authentication model error, and anything that is not an
    ``Exception`` (``KeyboardInterrupt``, ``CancelledError``). Anything else (a parser or
    embedder raising on a text, a model rejecting one input) may be a document's own.
    """
    if not isinstance(exc, Exception) or isinstance(exc, _NOT_A_DOCUMENT):
        return False
    if isinstance(exc, ModelError):
        return not exc.transient and exc.status_code not in _AUTH_STATUS
    return True


def own_reason(error: BaseException) -> str:
    """Return the one-line reason of a document's own failure (an `InputError`'s reason)."""
    if isinstance(error, InputError):
        return " ".join(error.reason.split())
    return " ".join(f"{type(error).__name__}: {error}".split())


def _signature(exc: BaseException) -> tuple[type[BaseException], str]:
    return type(exc), str(exc)


async def write_isolating(
    items: Sequence[T],
    write: Callable[[Sequence[T]], Awaitable[None]],
    fail: Callable[[T, BaseException], Awaitable[None]],
) -> None:
    """Write ``items`` together; on a document's error, bisect to the documents at fault.

    Args:
        items: the documents of one batch.
        write: writes (and commits) some of them; must be safe to call again on documents a
            failed call began to write (the pipeline's write-ahead records make it so).
        fail: records one document that failed alone, with its error.

    Raises:
        Exception: an error that is not a document's (`is_document_error`), at once; or the
            error every document of a batch of two or more raised alone (then it is the
            run's, not theirs, and nothing is recorded failed).
    """
    try:
        await write(items)
        return
    except Exception as exc:
        if not is_document_error(exc):
            raise
        first = exc
    if len(items) == 1:
        await fail(items[0], first)
        return
    logger.info("writing %d documents failed (%s); isolating the document(s) at fault",
                len(items), first)
    culprits: list[tuple[T, BaseException]] = []
    await _bisect(items, write, culprits)
    if len(culprits) == len(items) and len({_signature(e) for _, e in culprits}) == 1:
        raise culprits[0][1]  # every document fails alone, alike: not theirs
    for item, error in culprits:
        await fail(item, error)


async def _bisect(
    items: Sequence[T],
    write: Callable[[Sequence[T]], Awaitable[None]],
    culprits: list[tuple[T, BaseException]],
) -> None:
    """Write each half of ``items`` (which failed together); recurse into a half that fails."""
    mid = len(items) // 2
    for half in (items[:mid], items[mid:]):
        try:
            await write(half)
        except Exception as exc:
            if not is_document_error(exc):
                raise
            if len(half) == 1:
                culprits.append((half[0], exc))
            else:
                await _bisect(half, write, culprits)


async def record_document_failure(
    stores: IndexStores,
    config: UkrConfig,
    file: CorpusFile,
    content_hash: str,
    reason: str,
    report: IndexReport,
    progress: ProgressReporter,
) -> None:
    """Record a document that failed this run: ``failed``, or ``quarantined`` at the limit.

    The failure counts toward ``indexing.quarantine_after`` when its content is known
    (``content_hash`` is its fingerprint; "" for a file that could not be read, which is
    retried every run as reading it costs nothing). The text units its record lists are kept
    (an earlier version stays searchable; a write-ahead record's units stay accounted for).

    Args:
        stores: the index's (fenced) stores.
        config: ``indexing.quarantine_after`` and the fingerprint settings.
        file: the corpus entry.
        content_hash: the fingerprint of the content that failed ("" when unknown).
        reason: the one-line reason.
        report: receives the `FailedDocument`.
        progress: receives a warning.

    Raises:
        StoreError: the registry failed.
    """
    previous = (await stores.registry.get([file.document_id])).get(file.document_id)
    failures = carried_failures(previous, content_hash) + 1 if content_hash else 0
    quarantined = is_quarantined(failures, config.indexing.quarantine_after)
    status = DocStatus.QUARANTINED if quarantined else DocStatus.FAILED
    record = registry_record(
        config, file, None, status, previous.text_unit_ids if previous else (),
        content_hash=content_hash, error=reason,
    )
    await stores.registry.put([record.model_copy(update={"failure_count": failures})])
    report.failed.append(FailedDocument(
        path=file.display_path, reason=reason, failures=failures, quarantined=quarantined
    ))
    note = f" (quarantined after {failures} consecutive failures)" if quarantined else ""
    progress.warn(f"{file.display_path}: {reason}{note}")
    logger.info("failed to index %s: %s%s", file.display_path, reason, note)
