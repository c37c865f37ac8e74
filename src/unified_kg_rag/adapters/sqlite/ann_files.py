"""The HNSW index files of the SQLite store: names, crash-safe saving, and the checks on load.

One collection of one index is one pair of files in ``<db dir>/ann/``:
``<stem>-<seq>.usearch`` (the `usearch` index) and ``<stem>-<seq>.json`` (its sidecar: the
database id, index, collection, dimension, dtype, graph degree, vector count and file size).
``seq`` is the position in the change log (``ann_log``) the file reflects. Each file is
written to a temporary name, flushed to disk (fsync) and renamed, and the directory is
synced, so a killed process leaves either the old pair or the new one, never half a file
under a final name; a pair missing either file is ignored. What this module does not do:
decide when a file is valid against the database (``ann.py`` checks the seq against the log
and samples the vectors against the rows).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["AnnFile", "Sidecar", "latest_file", "remove_files", "save_index", "stem_of"]

_NAME = re.compile(r"^(?P<stem>.+)-(?P<seq>\d+)\.usearch$")


@dataclass(frozen=True)
class Sidecar:
    """What a saved index file claims to hold (the ``.json`` beside it).

    Attributes:
        database_id: ``ann_database.database_id`` of the SQLite file it was built from.
        index_name: the index.
        collection: the collection.
        seq: the last change-log entry it reflects.
        ndim: vector dimension.
        dtype: ``f32``, ``f16`` or ``i8``.
        connectivity: HNSW graph degree.
        count: vectors held.
        file_size: bytes of the ``.usearch`` file.
    """

    database_id: str
    index_name: str
    collection: str
    seq: int
    ndim: int
    dtype: str
    connectivity: int
    count: int
    file_size: int


@dataclass(frozen=True)
class AnnFile:
    """A saved pair: the index file and its sidecar."""

    path: Path
    sidecar: Sidecar


def stem_of(index_name: str, collection: str) -> str:
    """Return the file-name stem of one collection: readable, and unique per index name."""
    safe = re.sub(r"[^A-Za-z0-9_.]+", "_", index_name)[:40]
    digest = hashlib.sha256(index_name.encode("utf-8")).hexdigest()[:10]
    return f"{safe}-{digest}-{collection}"


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a directory be synced
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_index(index: Any, directory: Path, sidecar: Sidecar) -> Path:
    """Save a `usearch.index.Index` and its sidecar under ``directory``, crash-safely.

    Both files are written to ``*.tmp`` names, fsynced and renamed (the index first, then
    the sidecar); then older pairs of the same stem are removed.

    Args:
        index: the `usearch` index (``len(index) == sidecar.count``).
        directory: the ``ann`` folder (created when missing).
        sidecar: its description; ``file_size`` is filled in here.

    Returns:
        The path of the saved ``.usearch`` file.

    Raises:
        OSError: the folder or a file could not be written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    stem = stem_of(sidecar.index_name, sidecar.collection)
    final = directory / f"{stem}-{sidecar.seq}.usearch"
    tmp = final.with_name(final.name + ".tmp")
    index.save(str(tmp))
    _fsync(tmp)
    meta = Sidecar(**{**asdict(sidecar), "file_size": tmp.stat().st_size})
    side = final.with_suffix(".json")
    side_tmp = side.with_name(side.name + ".tmp")
    side_tmp.write_text(json.dumps(asdict(meta), sort_keys=True), encoding="utf-8")
    _fsync(side_tmp)
    os.replace(tmp, final)
    os.replace(side_tmp, side)
    _fsync_dir(directory)
    remove_files(directory, sidecar.index_name, sidecar.collection, keep=final)
    return final


def _read_sidecar(path: Path) -> Sidecar | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Sidecar(**data)
    except (OSError, ValueError, TypeError):
        return None


def latest_file(directory: Path, index_name: str, collection: str) -> AnnFile | None:
    """Return the saved pair of one collection with the highest seq (None when none).

    A pair whose sidecar is missing or unreadable, or names another index or collection or
    seq, is skipped.
    """
    stem = stem_of(index_name, collection)
    best: AnnFile | None = None
    if not directory.is_dir():
        return None
    for path in directory.glob(f"{glob_escape(stem)}-*.usearch"):
        match = _NAME.match(path.name)
        if match is None or match.group("stem") != stem:
            continue
        sidecar = _read_sidecar(path.with_suffix(".json"))
        if sidecar is None or (sidecar.index_name, sidecar.collection, sidecar.seq) != (
            index_name, collection, int(match.group("seq"))
        ):
            continue
        if best is None or sidecar.seq > best.sidecar.seq:
            best = AnnFile(path, sidecar)
    return best


def glob_escape(text: str) -> str:
    """Return ``text`` with glob metacharacters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def remove_files(
    directory: Path, index_name: str, collection: str, *, keep: Path | None = None
) -> None:
    """Remove the files of one collection older than ``keep`` (all of them without ``keep``).

    Leftover temporary files of a killed save go too; files of a higher seq (another process
    saving a newer index at the same time) are left alone.
    """
    if not directory.is_dir():
        return
    stem = stem_of(index_name, collection)
    limit = None
    if keep is not None:
        match = _NAME.match(keep.name)
        limit = int(match.group("seq")) if match else None
    for path in directory.glob(f"{glob_escape(stem)}-*"):
        rest = path.name[len(stem) + 1:].split(".", 1)[0]
        if not rest.isdigit() or (limit is not None and int(rest) >= limit):
            continue
        with contextlib.suppress(OSError):
            path.unlink()
