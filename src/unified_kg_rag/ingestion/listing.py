"""What a client lists of an index's documents besides their records, and what a retry reads.

The doc registry stores no size: `file_size` reads the document's file when it is still on
disk. A message transcript (scope `MESSAGE_SCOPE`) has no file of its own; it is rendered from
the index's message archives (`ArchiveRecord`), listed by `list_archives`. Blocking (a ``stat``
per file): callers run these in a thread.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from unified_kg_rag.domain.index.paths import full_location_of
from unified_kg_rag.domain.messages.transcripts import MESSAGE_SCOPE
from unified_kg_rag.domain.models import DocRecord
from unified_kg_rag.ingestion.message_archives import ArchiveRecord
from unified_kg_rag.util.errors import UsageError

__all__ = ["ArchiveInfo", "file_size", "is_transcript", "list_archives", "retry_paths"]


class ArchiveInfo(BaseModel):
    """One message archive an index's message corpus was built from.

    Attributes:
        path: the archive file, absolute (as the file system gave it).
        source: the message source that reads it (``imessage``, ``jsonl`` ...).
        size_bytes: the file's size now, bytes; None when it is gone.
    """

    path: str
    source: str
    size_bytes: int | None


def is_transcript(record: DocRecord) -> bool:
    """True for a message transcript (a thread-day rendered from the index's archives)."""
    return record.source_scope == MESSAGE_SCOPE


def file_size(record: DocRecord) -> int | None:
    """The size of ``record``'s file now, bytes; None for a transcript or a file gone."""
    if is_transcript(record):
        return None
    return _size(full_location_of(record.source_scope, record.path))


def list_archives(archives: ArchiveRecord) -> list[ArchiveInfo]:
    """The archives of ``archives``, by path, with their size now."""
    return [ArchiveInfo(path=path, source=source, size_bytes=_size(path))
            for path, source in sorted(archives.archives.items())]  # fmt: skip


def retry_paths(record: DocRecord, archives: ArchiveRecord) -> list[Path]:
    """The paths an index run reads to try ``record`` again, keeping its document id.

    A file indexed on its own (a path without a folder part) is named itself; a file found in
    a folder walk is found again by walking that folder (naming it alone would give it another
    scope, so another id); a transcript is rendered again from the archives still on disk.

    Raises:
        UsageError: the file (or every archive) is no longer on disk (``field="document"``).
    """
    if is_transcript(record):
        paths = [Path(p) for p in sorted(archives.archives) if os.path.isfile(p)]
        if not paths:
            raise UsageError("the message archives of this transcript are no longer on disk",
                             field="document")  # fmt: skip
        return paths
    file = Path(full_location_of(record.source_scope, record.path))
    if not file.is_file():
        raise UsageError(f"{record.path}: its file is no longer on disk ({file})",
                         field="document")  # fmt: skip
    return [file] if "/" not in record.path else [Path(record.source_scope)]


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):  # gone, unreadable, or a name with NUL
        return None
