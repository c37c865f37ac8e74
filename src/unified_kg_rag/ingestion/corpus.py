r"""Finding the files of a corpus and reading them into documents.

Discovery walks the paths a user gave: a file is taken as given; a folder is walked
recursively in sorted order, skipping hidden entries (``.git``, ``.ukr``), files matching
``parsing.exclude`` and files whose extension no parser handles (counted as skipped). Reading
hashes the bytes (for the registry diff) without parsing; parsing happens only for documents
that need work.

A file name that is not valid UTF-8 (Python decodes its odd bytes to lone surrogates) is
shown, and recorded as the document's path, with each such byte escaped (``caf\xe9.txt``,
`domain.text.decoding.escape_undecodable`), so two such names stay apart; the document id is
still derived from the name as the file system gives it, so ids do not change.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from unified_kg_rag.config.models import ParsingConfig
from unified_kg_rag.domain.identity import document_id
from unified_kg_rag.domain.models import Document
from unified_kg_rag.domain.text.analysis import replace_surrogates
from unified_kg_rag.domain.text.decoding import escape_undecodable
from unified_kg_rag.ports import DocumentParser
from unified_kg_rag.util.errors import InputError, UsageError
from unified_kg_rag.util.hashing import sha256_bytes

__all__ = ["CorpusFile", "SkippedFile", "discover", "parse_file", "read_file"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusFile:
    r"""A file found by discovery.

    Attributes:
        path: the file on disk.
        display_path: the path as shown to the user: relative to the folder indexed (the
            one form sources, ``ukr status`` and ``--filter path=`` use,
            `domain.index.paths`), bytes that are not UTF-8 escaped (``\xe9``).
        source_scope: the scope as recorded and shown (escaped like ``display_path``).
        relative_path: POSIX path below the scope's folder (escaped like ``display_path``).
        document_id: `domain.identity.document_id` of the scope and relative path as the
            file system gives them (before escaping).
        explicit: True when the user named the file itself (an unsupported extension then fails
            instead of being skipped).
        message_source: the message source that reads the file (a message archive), or None
            for a document.
    """

    path: Path
    display_path: str
    source_scope: str
    relative_path: str
    document_id: str
    explicit: bool
    message_source: str | None = None


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
    claim: Callable[[Path, bool], str | None] | None = None,
) -> tuple[list[CorpusFile], list[SkippedFile]]:
    """Find the files to index under ``paths``.

    A path that is a regular file (or a link to one) is taken as given; a folder is walked
    recursively, sorted, without following links to folders. In walks, hidden entries are
    ignored; links to folders, non-regular files (FIFOs, sockets, devices, which could block a
    read forever), folders that cannot be listed, excluded files and unsupported extensions
    are reported as skipped. A broken link is kept, so that reading it fails with a reason.

    Args:
        paths: files and folders as the user gave them.
        parsing: ``exclude`` globs and the optional fixed ``source_scope``.
        extensions: the extensions a parser is registered for (``.txt`` ...).
        claim: ``claim(file, explicit)`` names the message source of a message archive, or
            returns None for other files; asked before the extension check (an archive needs
            no document parser).

    Returns:
        ``(files, skipped)``: files in a stable order (sorted within each path), and what
        folder walks left out, with reasons.

    Raises:
        UsageError: a path does not exist or is neither a regular file nor a folder (nothing
            has been read yet).
    """
    for p in paths:
        if not p.exists():
            raise UsageError(f"{p}: no such file or directory", field="PATH")
        if not (p.is_dir() or p.is_file()):
            raise UsageError(f"{p}: not a regular file or a folder", field="PATH")
    supported = {e.lower() for e in extensions}
    files: list[CorpusFile] = []
    skipped: list[SkippedFile] = []
    seen: set[str] = set()
    for given in paths:
        root = given.resolve()
        if root.is_file():
            entries = [(root, root.parent, True)]
        else:
            found, unlisted = _walk(root, given)
            skipped.extend(unlisted)
            entries = [(f, root, False) for f in found]
        for file, base, explicit in entries:
            rel = file.relative_to(base).as_posix()
            shown = escape_undecodable(rel)
            if not explicit and any(fnmatch.fnmatch(rel, pat) for pat in parsing.exclude):
                skipped.append(SkippedFile(shown, "excluded by parsing.exclude"))
                continue
            source = claim(file, explicit) if claim is not None else None
            if source is None and not explicit and file.suffix.lower() not in supported:
                skipped.append(SkippedFile(shown, f"unsupported extension {file.suffix!r}"))
                continue
            scope = parsing.source_scope or base.as_posix()
            doc_id = document_id(scope, rel)
            if doc_id in seen:
                continue
            seen.add(doc_id)
            clean_scope, clean_rel = escape_undecodable(scope), escape_undecodable(rel)
            files.append(
                CorpusFile(file, shown, clean_scope, clean_rel, doc_id, explicit, source)
            )
    return files, skipped


def _walk(root: Path, given: Path) -> tuple[list[Path], list[SkippedFile]]:
    found: list[Path] = []
    skipped: list[SkippedFile] = []

    def shown(path: Path) -> str:  # below the folder indexed; the folder itself as given
        return escape_undecodable(path.relative_to(root).as_posix() if path != root else str(given))

    def unlisted(err: OSError) -> None:
        where = Path(err.filename) if err.filename else root
        skipped.append(SkippedFile(shown(where), f"cannot list folder: {err.strerror or err}"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted, followlinks=False):
        here = Path(dirpath)
        kept = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue
            if (here / d).is_symlink():
                skipped.append(SkippedFile(shown(here / d), "link to a folder (not followed)"))
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = here / name
            try:
                mode = path.stat().st_mode
            except OSError:
                found.append(path)  # a broken link: reading it fails with its reason
                continue
            if stat.S_ISREG(mode):
                found.append(path)
            else:
                skipped.append(SkippedFile(shown(path), "not a regular file"))
    return found, skipped


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
        raise InputError(
            file.display_path,
            f"unsupported extension {ext!r} (supported: {known}); no message source "
            "recognised it either (`--source NAME` reads it as that source and says why not)",
        )
    parsed = parser.parse(data, path=file.display_path)
    text = replace_surrogates(parsed.text)
    if not text.strip():
        raise InputError(file.display_path, "empty document (no text)")
    title = replace_surrogates(parsed.title.strip()) or escape_undecodable(file.path.stem)
    metadata = {
        k: replace_surrogates(v) if isinstance(v, str) else v for k, v in parsed.metadata.items()
    }
    metadata.update(
        source_scope=file.source_scope,
        extension=ext,
        bytes=len(data),
    )
    return Document(
        id=file.document_id,
        path=file.relative_path,
        title=title,
        text=text,
        content_hash=content_hash,
        metadata=metadata,
    )
