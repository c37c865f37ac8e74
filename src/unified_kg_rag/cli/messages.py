"""The message-archive options of ``ukr index`` (planned by `ingestion.message_plan`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "HandlesOpt",
    "LimitOpt",
    "OwnerOpt",
    "SinceOpt",
    "SourceOpt",
]

SourceOpt = Annotated[
    str | None,
    typer.Option("--source", help="Read the files named with this message source "
                 "(imessage, jsonl) instead of recognising archives by their content."),
]
HandlesOpt = Annotated[
    Path | None,
    typer.Option("--handles", help="YAML file naming people: `+15551234567: Bob`, or "
                 "`Bob: [+15551234567, bob@example.com]`. [default: messages.handles_file]"),
]
OwnerOpt = Annotated[
    str | None,
    typer.Option("--owner", help="Display name of the archive's owner. "
                 "[default: messages.owner_label]"),
]
SinceOpt = Annotated[
    str | None,
    typer.Option("--since", help="Bounded build: only messages from this day on (YYYY-MM-DD). "
                 "Transcripts outside the window are kept."),
]
LimitOpt = Annotated[
    int | None,
    typer.Option("--message-limit", min=1, help="Bounded build: only the N most recent "
                 "messages. Transcripts outside the window are kept."),
]
