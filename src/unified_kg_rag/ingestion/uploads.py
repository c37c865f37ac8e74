"""Files handed to a project from outside: uploads kept in the project, server-side paths.

Uploaded files live in ``PROJECT/uploads/INDEX/NAME`` (`uploads_dir`): inside the project, so
they survive restarts and ``ukr status`` keeps finding them (drift, missing files), and each
is indexed as an explicit file whose source scope is that folder, so uploading a name again
replaces its document. An upload is written to a staging folder first (`UploadBatch`, below
``uploads/.staging/``) while it streams in, with its limits enforced per chunk, and moved into
place only once complete; a refused upload leaves nothing behind.

`allowed_path` admits a server-side file or folder only below a configured root (symlinks
resolved, links inside a folder included). Not here: HTTP parsing (``service``), the
indexing itself (`ingestion.pipeline`).
"""

from __future__ import annotations

import os
import shutil
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from unified_kg_rag.ingestion.report import DeletedDocument
from unified_kg_rag.util.errors import PayloadTooLargeError, UsageError

__all__ = [
    "UPLOADS_DIR_NAME",
    "UploadBatch",
    "UploadLimits",
    "allowed_path",
    "remove_uploaded",
    "safe_file_name",
    "uploads_dir",
]

UPLOADS_DIR_NAME = "uploads"
"""The project's folder of uploaded files (one subfolder per index)."""

_MAX_NAME_BYTES = 255


def uploads_dir(project_dir: Path, index: str) -> Path:
    """Return ``PROJECT/uploads/INDEX``, where the uploads of ``index`` are kept."""
    return project_dir / UPLOADS_DIR_NAME / index


def safe_file_name(name: str) -> str:
    """Return ``name`` in NFC if it is a plain file name an upload may be stored under.

    Refused: an empty name, ``.`` and ``..``, a name holding a path separator (``/`` or a
    backslash), NUL or another control or format character (bidirectional overrides,
    zero-width characters, line and paragraph separators), bytes that were not UTF-8, or
    longer than 255 bytes in UTF-8. Names are compared in NFC, so ``café.md`` typed in NFD
    and in NFC name one document.

    Raises:
        UsageError: the name is refused (field ``files``; the message names it, escaped
            and cut at 100 characters).
    """
    shown = repr(name if len(name) <= 100 else name[:100] + "…")
    name = unicodedata.normalize("NFC", name)
    reason = ""
    if not name.strip():
        reason = "an empty file name"
    elif name in (".", ".."):
        reason = "not a file name"
    elif "/" in name or "\\" in name:
        reason = "a file name may not hold a path separator (send the base name only)"
    elif any(unicodedata.category(c) in _REFUSED_CATEGORIES for c in name):
        reason = "a file name may not hold NUL, control or format characters"
    elif "\ufffd" in name:
        reason = "a file name must be UTF-8"
    elif len(name.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES:
        reason = f"a file name may hold at most {_MAX_NAME_BYTES} bytes"
    if reason:
        raise UsageError(f"{shown}: {reason}", field="files")
    return name


_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories a file name may not hold: controls, format characters (bidirectional
overrides, zero-width), surrogates, line and paragraph separators."""


@dataclass(frozen=True)
class UploadLimits:
    """What one upload may hold (``service.max_upload_*``).

    Attributes:
        file_bytes: largest file, bytes.
        files: files per upload.
        total_bytes: all files together, bytes.
    """

    file_bytes: int
    files: int
    total_bytes: int


@dataclass
class _Open:
    name: str
    handle: BinaryIO
    size: int = 0


@dataclass
class UploadBatch:
    """The files of one upload, written to a staging folder as they stream in.

    Use as a context manager: leaving it without `commit` (a refusal, an error, a client
    that hung up) removes the staging folder and everything in it.

    Args:
        project_dir: the project directory.
        limits: the limits, checked on every `write`.
    """

    project_dir: Path
    limits: UploadLimits
    names: list[str] = field(default_factory=list)
    total_bytes: int = 0
    _staging: Path | None = None
    _current: _Open | None = None

    def __enter__(self) -> UploadBatch:
        self._staging = (self.project_dir / UPLOADS_DIR_NAME / ".staging" / uuid.uuid4().hex)
        self._staging.mkdir(parents=True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.discard()

    def open(self, name: str) -> None:
        """Start the next file, named ``name`` (`safe_file_name`); ends the current one.

        Raises:
            UsageError: the name is refused, or a file of that name is already in the batch.
            PayloadTooLargeError: more files than ``limits.files``.
        """
        self.close()
        name = safe_file_name(name)
        if name in self.names:
            raise UsageError(f"{name!r}: sent twice in one upload", field="files")
        if len(self.names) >= self.limits.files:
            raise PayloadTooLargeError(
                f"more than {self.limits.files} files in one upload (service.max_upload_files)",
                field="files",
            )
        if self._staging is None:
            raise RuntimeError("UploadBatch.open outside its context")
        self.names.append(name)
        self._current = _Open(name, (self._staging / name).open("xb"))

    def write(self, data: bytes) -> None:
        """Append ``data`` to the current file.

        Raises:
            PayloadTooLargeError: the file passed ``limits.file_bytes`` or the upload
                ``limits.total_bytes`` (nothing past the limit is written).
        """
        current = self._current
        if current is None:
            raise RuntimeError("UploadBatch.write before open")
        current.size += len(data)
        self.total_bytes += len(data)
        if current.size > self.limits.file_bytes:
            raise PayloadTooLargeError(
                f"{current.name!r}: larger than {self.limits.file_bytes:,} bytes "
                "(service.max_upload_file_bytes)", field="files")  # fmt: skip
        if self.total_bytes > self.limits.total_bytes:
            raise PayloadTooLargeError(
                f"the upload is larger than {self.limits.total_bytes:,} bytes in all "
                "(service.max_upload_total_bytes)", field="files")  # fmt: skip
        current.handle.write(data)

    def close(self) -> None:
        """End the current file, if any."""
        if self._current is not None:
            self._current.handle.close()
            self._current = None

    def commit(self, folder: Path) -> list[Path]:
        """Move the files into ``folder`` (created; a file of the same name is replaced).

        Returns:
            The files' new paths, in upload order.
        """
        self.close()
        if self._staging is None:
            raise RuntimeError("UploadBatch.commit outside its context")
        folder.mkdir(parents=True, exist_ok=True)
        moved = []
        for name in self.names:
            target = folder / name
            os.replace(self._staging / name, target)
            moved.append(target)
        self.discard()
        return moved

    def discard(self) -> None:
        """Remove the staging folder and what it holds (nothing after `commit`)."""
        self.close()
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None


def allowed_path(path: str, roots: Sequence[str], project_dir: Path) -> Path:
    """Return ``path`` resolved, if it lies below one of ``roots``.

    ``path`` and relative roots are taken from the project directory. Symlinks are resolved
    before the check, the path's own and, for a folder, every link inside it (a link in an
    allowed folder pointing elsewhere would let a walk read outside the roots).

    Args:
        path: a file or folder on the server.
        roots: ``service.allowed_roots``.
        project_dir: the project directory.

    Raises:
        UsageError: no root is configured; the path is outside every root or (inside one)
            does not exist, with one message for both so a refusal tells nothing of what
            exists elsewhere; it is not a regular file or folder (a FIFO, a device); a link
            inside it leads outside every root; it cannot be used (too long, unencodable,
            a link loop). Field ``path``.
    """
    if not roots:
        raise UsageError("the server indexes no server-side path: list the folders it may "
                         "read under service.allowed_roots in ukr.yaml", field="path")
    shown = path if len(path) <= 200 else path[:200] + "…"
    if "\x00" in path:
        raise UsageError(f"{shown!r}: a path may not hold NUL", field="path")
    outside = f"{shown}: not a file or folder below service.allowed_roots"
    try:
        resolved_roots = [(project_dir / r).resolve() for r in roots]
        target = (project_dir / path).resolve()  # links resolved; a missing path stays as is
        # roots first, so a refused path says nothing of what exists outside them
        if not _below(target, resolved_roots) or not target.exists():
            raise UsageError(outside, field="path")
        if not (target.is_file() or target.is_dir()):
            raise UsageError(f"{shown}: not a regular file or a folder", field="path")
        if target.is_dir():
            for folder, dirs, files in os.walk(target):
                for name in (*dirs, *files):
                    entry = Path(folder) / name
                    if entry.is_symlink() and not _below(entry.resolve(), resolved_roots):
                        raise UsageError(f"{outside} (the link {entry.relative_to(target)} "
                                         "leads out)", field="path")  # fmt: skip
    except (OSError, UnicodeError, RuntimeError) as error:  # too long, unencodable, a loop
        why = getattr(error, "strerror", None) or type(error).__name__  # never the whole path
        raise UsageError(f"{shown}: not a usable path ({why})", field="path") from error
    return target


def _below(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def remove_uploaded(project_dir: Path, deleted: Sequence[DeletedDocument]) -> int:
    """Remove the uploaded files of deleted documents; return how many were removed.

    Only files below ``PROJECT/uploads/`` are touched; a document indexed from elsewhere
    keeps its file.
    """
    base = (project_dir / UPLOADS_DIR_NAME).resolve()
    removed = 0
    for doc in deleted:
        file = Path(doc.source_scope) / doc.path
        if file.resolve().is_relative_to(base) and file.is_file():
            file.unlink()
            removed += 1
    return removed
