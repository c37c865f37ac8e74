"""The archive files of an index's message corpus, and the options of a message run.

An index remembers the archives it was built from (record ``message_files``/``files``:
`ArchiveRecord`), with the handle names and owner label it rendered with, so a later run reads
them again and renders with the same names. `archive_claim` is discovery's probe (structural
dispatch over the registered sources, or ``--source``); `archive_targets` and `forget_run`
serve `ukr delete ARCHIVE`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from unified_kg_rag.config.messages import MessagesConfig
from unified_kg_rag.domain.messages.transcripts import MessageSourceOptions
from unified_kg_rag.ports import MessageSource, RecordStore

__all__ = [
    "FILES_KEY",
    "FILES_NAMESPACE",
    "ArchiveRecord",
    "MessageRun",
    "archive_claim",
    "archive_targets",
    "find_source",
    "forget_run",
    "load_archive_record",
    "mtime",
]

logger = logging.getLogger(__name__)

FILES_NAMESPACE = "message_files"
"""Record store namespace of the archive files an index was built from (key ``files``)."""

FILES_KEY = "files"
"""Key of the `ArchiveRecord` in `FILES_NAMESPACE`."""


class ArchiveRecord(BaseModel):
    r"""What an index remembers of its message corpus (record ``message_files``/``files``).

    Stored as ASCII JSON (`to_json`): an archive path that is not valid UTF-8 (a name Python
    decoded to lone surrogates) is kept as ``\udcXX`` escapes and read back as the same path;
    pydantic's JSON would write U+FFFD for it, and the next run would not find the file.

    Attributes:
        archives: resolved archive path (as the file system gives it) → its source's name.
        handle_names: the handle → name map the last message run rendered with.
        owner_label: the owner label it rendered with.
    """

    model_config = ConfigDict(extra="forbid")

    archives: dict[str, str] = Field(default_factory=dict)
    handle_names: dict[str, str] = Field(default_factory=dict)
    owner_label: str = "Me"

    def to_json(self) -> str:
        """Return the record as stored: JSON, non-ASCII characters as escapes."""
        return json.dumps(self.model_dump(), ensure_ascii=True, separators=(",", ":"))


@dataclass(frozen=True)
class MessageRun:
    """Options of one run's message archives.

    Attributes:
        options: handle names and owner label.
        source: the source every named archive is read with (``--source``); None: dispatch.
        since: first day of a bounded build (``--since``).
        limit: most recent messages of a bounded build (``--message-limit``).
        max_chars: transcript size target, characters.
        timezone: IANA time zone of rendered times and day boundaries.
        names_given: ``options.handle_names`` was given (``--handles``, configuration);
            otherwise the names the index's last message run used are used again, so a run
            without ``--handles`` does not rename every sender (and re-index everything).
        owner_given: ``options.owner_label`` was given; otherwise the last run's is used.
        forget: archive paths to drop from the index's message corpus (`ukr delete ARCHIVE`).
    """

    options: MessageSourceOptions = field(default_factory=MessageSourceOptions)
    source: str | None = None
    since: date | None = None
    limit: int | None = None
    max_chars: int = 8000
    timezone: str = "UTC"
    names_given: bool = True
    owner_given: bool = True
    forget: tuple[str, ...] = ()

    @property
    def bounded(self) -> bool:
        """True for a bounded build (part of the corpus rendered on purpose)."""
        return self.since is not None or self.limit is not None


def archive_claim(
    sources: Sequence[MessageSource], run: MessageRun
) -> Callable[[Path, bool], str | None]:
    """Return discovery's archive probe: ``--source`` claims named files, else dispatch."""

    def claim(path: Path, explicit: bool) -> str | None:
        if explicit and run.source:
            return run.source
        return find_source(path, sources, run.source)

    return claim


async def archive_targets(records: RecordStore, targets: Sequence[str]) -> list[str]:
    """Return the deletion targets that are paths of the index's message archives.

    Raises:
        StoreError: the record store failed.
    """
    known = (await load_archive_record(records)).archives
    return [t for t in targets if _resolved(t) in known]


def forget_run(config: MessagesConfig, targets: Sequence[str]) -> MessageRun:
    """Return the message run that drops the archives ``targets`` and renders the rest."""
    return MessageRun(
        forget=tuple(_resolved(t) for t in targets), names_given=False, owner_given=False,
        max_chars=config.transcript_max_chars, timezone=config.timezone,
    )


def mtime(path: str) -> float:
    """Return a file's modification time (0.0 when it cannot be read)."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _resolved(target: str) -> str:
    return Path(target).expanduser().resolve().as_posix()


def find_source(
    path: Path, sources: Sequence[MessageSource], forced: str | None = None
) -> str | None:
    """Return the name of the source that reads ``path`` (structural dispatch), or None.

    With ``forced``, that source claims the file when its probe accepts it; a file named on
    the command line is claimed by the caller regardless (its parse then fails with a reason).
    """
    for source in sources:
        if forced is not None and source.name != forced:
            continue
        if source.matches(path):
            return source.name
    return None


async def load_archive_record(records: RecordStore) -> ArchiveRecord:
    """Return what the index remembers of its message corpus (empty when nothing).

    Raises:
        StoreError: the record store failed.
    """
    raw = await records.get(FILES_NAMESPACE, FILES_KEY)
    if not raw:
        return ArchiveRecord()
    try:
        value = json.loads(raw)  # not pydantic's JSON: it refuses a lone surrogate escape
    except ValueError:
        value = None
    try:
        return ArchiveRecord.model_validate(value)
    except ValidationError:
        pass
    try:  # the first form of the record: a bare path → source mapping
        return ArchiveRecord(archives=TypeAdapter(dict[str, str]).validate_python(value))
    except ValidationError:
        logger.warning("the index's message archive record is unreadable; ignoring it")
        return ArchiveRecord()
