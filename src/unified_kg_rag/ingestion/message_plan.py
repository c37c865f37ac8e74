"""Planning a message-archive run: the handles file and the options of one index run.

The CLI (``ukr index --source/--handles/--owner/--since/--message-limit``) and the service
both call `plan_message_run`; the configuration gives the defaults, the call's options
override them.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import yaml

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.messages.transcripts import MessageSourceOptions
from unified_kg_rag.domain.text.decoding import escape_undecodable, has_surrogates
from unified_kg_rag.ingestion.messages import MessageRun
from unified_kg_rag.util.errors import InputError, UsageError

__all__ = ["load_handles", "plan_message_run"]


def load_handles(path: Path) -> dict[str, str]:
    """Read a handles file: ``handle: name`` entries, or ``name: [handle, ...]`` entries.

    Every scalar is read as text (YAML's base loader): an unquoted ``+15551234567`` keeps its
    ``+`` and ``yes``/``no`` stay words, instead of becoming an integer and booleans.

    Raises:
        InputError: the file cannot be read, is not UTF-8 or YAML, is not such a mapping,
            names one handle twice with different names, or holds a name or handle that is
            not valid Unicode (a lone surrogate escape).
    """
    try:
        raw = path.read_bytes()
        data = yaml.load(raw.decode("utf-8-sig"), Loader=yaml.BaseLoader)
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"not UTF-8 text (bad byte 0x{raw[exc.start]:02x} at "
                         f"offset {exc.start})") from exc
    except yaml.YAMLError as exc:
        raise InputError(str(path), f"not a YAML file: {' '.join(str(exc).split())}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a mapping of handles to names")
    names: dict[str, str] = {}

    def add(handle: str, name: str) -> None:
        for text, what in ((handle, "handle"), (name, "name")):
            if has_surrogates(text):
                shown = escape_undecodable(handle)
                raise InputError(str(path), f"{shown}: the {what} holds text that is not "
                                 "valid Unicode (a lone surrogate escape such as \\ud83d)")
        if names.get(handle, name) != name:
            raise InputError(str(path), f"{handle} is named twice ({names[handle]!r} and "
                             f"{name!r})")
        names[handle] = name

    for key, value in data.items():
        if isinstance(value, list):
            for handle in value:
                if not isinstance(handle, str) or not handle.strip():
                    raise InputError(str(path), f"{key}: handles must be strings")
                add(handle.strip(), str(key).strip())
        elif isinstance(value, str) and value.strip():
            add(str(key).strip(), value.strip())
        else:
            raise InputError(str(path), f"{key}: expected a name or a list of handles")
    return names


def plan_message_run(
    config: UkrConfig,
    project_dir: Path,
    *,
    source: str | None,
    handles: Path | None,
    owner: str | None,
    since: str | None,
    limit: int | None,
) -> MessageRun:
    """Return the message options of one index run (the configuration overridden by options).

    Raises:
        UsageError: ``--since`` is not a date, or ``--owner`` is not valid Unicode.
        InputError: the handles file is unreadable or malformed.
    """
    if owner is not None and has_surrogates(owner):
        raise UsageError("holds text that is not valid Unicode (a byte that is not UTF-8: "
                         f"{escape_undecodable(owner)})", field="--owner")
    messages = config.messages
    names = dict(messages.handle_names)
    path = handles
    if path is None and messages.handles_file:
        path = Path(messages.handles_file)
        if not path.is_absolute():
            path = project_dir / path
    if path is not None:
        names.update(load_handles(path))
    day: date | None = None
    if since is not None:
        try:
            day = date.fromisoformat(since)
        except ValueError:
            raise UsageError(f"--since {since!r}: expected a date YYYY-MM-DD",
                             field="--since") from None
    return MessageRun(
        options=MessageSourceOptions(handle_names=names,
                                     owner_label=owner or messages.owner_label),
        source=source.lower() if source else None,
        since=day,
        limit=limit,
        max_chars=messages.transcript_max_chars,
        timezone=messages.timezone,
        names_given=path is not None or "handle_names" in messages.model_fields_set,
        owner_given=owner is not None or "owner_label" in messages.model_fields_set,
    )
