"""Routes that read an answer's evidence in place: a passage in its document, a thread-day.

Thin over `retrieval.reading`: ``GET /v1/documents/{document_id}/text`` (a window of the
document's text around a source's passage) and ``GET /v1/messages/thread-day`` (the messages
of the thread-day that holds a message). An unknown document, thread, message or day answers
404 (``NotFoundError``); a parameter out of its bounds 422.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Query, Request

from unified_kg_rag.retrieval.reading import DocumentText, ThreadDay, read_document, thread_day
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.deps import app_of
from unified_kg_rag.util.errors import UsageError

__all__ = ["MAX_CHARS", "MAX_MESSAGES", "router"]

router = APIRouter(prefix="/v1", dependencies=[Depends(requires("read"))])

MAX_CHARS = 200_000
"""The most characters of text around a passage one request may ask for."""
MAX_MESSAGES = 2_000
"""The most messages of a thread-day one request may ask for."""

_UNITS = Query(default_factory=list, max_length=200, description="the passage's text units")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@router.get("/documents/{document_id}/text")
async def document_text(
    request: Request,
    document_id: str,
    index: str | None = None,
    start_char: int | None = Query(default=None, ge=0, description="passage offset"),
    end_char: int | None = Query(default=None, ge=0, description="passage end offset"),
    text_unit_ids: list[str] = _UNITS,
    max_chars: int = Query(default=20_000, ge=1, le=MAX_CHARS,
                           description="characters of text around the passage"),
) -> DocumentText:
    """A document's text as its text units in order, a window around a passage.

    The passage (a source's ``text_unit_ids``, or its ``start_char``/``end_char``) is
    located in the window by ``passage_start``/``passage_end``; ``more_before`` and
    ``more_after`` say the document goes on beyond it.
    """
    return await read_document(
        app_of(request).index(index), document_id, start_char=start_char, end_char=end_char,
        text_unit_ids=text_unit_ids, max_chars=max_chars,
    )  # fmt: skip


@router.get("/messages/thread-day")
async def messages_thread_day(
    request: Request,
    thread: str = Query(min_length=1, max_length=1000, description="the thread's id"),
    index: str | None = None,
    message: str | None = Query(default=None, min_length=1, max_length=1000,
                                description="a message guid: its thread-day"),
    day: str | None = Query(default=None, description="YYYY-MM-DD, when no message is named"),
    max_messages: int = Query(default=500, ge=1, le=MAX_MESSAGES),
) -> ThreadDay:
    """The messages of a thread on the day of ``message`` (or on ``day``), in order.

    ``days`` lists the thread's other transcripts the index holds, to move between days.
    """
    if day is not None and not _DAY.match(day):
        raise UsageError(f"day must be YYYY-MM-DD; got {day!r}", field="day")
    return await thread_day(app_of(request).index(index), thread, message=message, day=day,
                            max_messages=max_messages)  # fmt: skip
