"""Finding the files of a corpus and reading them into documents.

Discovery walks the paths a user gave: a file is taken as given; a folder is walked
recursively in sorted order, skipping hidden entries (``.git``, ``.ukr``), files matching
``parsing.exclude`` and files whose extension no parser handles (counted as skipped). Reading
hashes the bytes (for the registry diff) without parsing; parsing happens only for documents
that need work.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.identity import document_id
from unified_kg_rag.domain.models import Document
from unified_kg_rag.ports import DocumentParser
from unified_kg_rag.util.errors import InputError, UsageError
from unified_kg_rag.util.hashing import sha256_bytes

__all__ = ["CorpusFile", "SkippedFile", "discover", "parse_file", "read_file"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusFile:
    """A file found by discovery.

    Attributes:
        path: the file on disk.
        display_path: the path as shown to the user (as given, or below the folder given).
        source_scope: the scope its document id is derived from.
        relative_path: POSIX path below the scope's folder.
        document_id: `domain.identity.document_id(source_scope, relative_path)`.
        explicit: True when the user named the file itself (an unsupported extension then fails
            instead of being skipped).
    """

    path: Path
    display_path: str
    source_scope: str
    relative_path: str
    document_id: str
    explicit: bool


@dataclass(frozen=True)
class SkippedFile:
    """A file discovery left out, with the reason."""

    display_path: str
    reason: str


def discover(
    paths: Sequence[Path],
    *,
    parsing: ParsingConfig,
    extensions: Sequence[str],
) -> tuple[list[CorpusFile], list[SkippedFile]]:
    """Find the files to index under ``paths``.

    Args:
        paths: files and folders as the user gave them.
        parsing: ``exclude`` globs and the optional fixed ``source_scope``.
        extensions: the extensions a parser is registered for (``.txt`` ...).

    Returns:
        ``(files, skipped)``: files in a stable order (sorted within each path), and files left
        out from folder walks (unsupported extension, excluded).

    Raises:
        UsageError: a path does not exist (nothing has been read yet).
    """
    for p in paths:
        if not p.exists():
            raise UsageError(f"{p}: no such file or directory", field="PATH")
    supported = {e.lower() for e in extensions}
    files: list[CorpusFile] = []
    skipped: list[SkippedFile] = []
    seen: set[str] = set()
    for given in paths:
        root = given.resolve()
        if root.is_file():
            entries = [(root, root.parent, str(given), True)]
        else:
            entries = [(f, root, str(given / f.relative_to(root)), False) for f in _walk(root)]
        for file, base, display, explicit in entries:
            rel = file.relative_to(base).as_posix()
            if not explicit and any(fnmatch.fnmatch(rel, pat) for pat in parsing.exclude):
                skipped.append(SkippedFile(display, "excluded by parsing.exclude"))
                continue
            if not explicit and file.suffix.lower() not in supported:
                skipped.append(SkippedFile(display, f"unsupported extension {file.suffix!r}"))
                continue
            scope = parsing.source_scope or base.as_posix()
            doc_id = document_id(scope, rel)
            if doc_id in seen:
                continue
            seen.add(doc_id)
            files.append(CorpusFile(file, display, scope, rel, doc_id, explicit))
    return files, skipped


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                found.append(Path(dirpath) / name)
    return found


def read_file(file: CorpusFile, *, parsing: ParsingConfig) -> tuple[bytes, str]:
    """Read a file's bytes and their SHA-256.

    Raises:
        InputError: the file cannot be read or is larger than ``parsing.max_file_bytes``.
    """
    try:
        size = file.path.stat().st_size
        if size > parsing.max_file_bytes:
            raise InputError(
                file.display_path,
                f"file is {size:,} bytes, over parsing.max_file_bytes ({parsing.max_file_bytes:,})",
            )
        data = file.path.read_bytes()
    except OSError as exc:
        raise InputError(file.display_path, f"cannot read: {exc.strerror or exc}") from exc
    return data, sha256_bytes(data)


def parse_file(
    file: CorpusFile,
    data: bytes,
    content_hash: str,
    parsers: Mapping[str, DocumentParser],
) -> Document:
    """Parse a file's bytes into a `Document`.

    Raises:
        InputError: no parser handles the extension, or the parser rejects the bytes.
    """
    ext = file.path.suffix.lower()
    parser = parsers.get(ext)
    if parser is None:
        known = ", ".join(sorted(parsers))
        raise InputError(file.display_path, f"unsupported extension {ext!r} (supported: {known})")
    parsed = parser.parse(data, path=file.display_path)
    if not parsed.text.strip():
        raise InputError(file.display_path, "empty document (no text)")
    title = parsed.title.strip() or file.path.stem
    metadata = dict(parsed.metadata)
    metadata.update(
        source_scope=file.source_scope,
        extension=ext,
        bytes=len(data),
    )
    return Document(
        id=file.document_id,
        path=file.relative_path,
        title=title,
        text=parsed.text,
        content_hash=content_hash,
        metadata=metadata,
    )
