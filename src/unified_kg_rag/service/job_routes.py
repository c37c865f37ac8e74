"""Routes over jobs: list, read, follow as Server-Sent Events, cancel, resume; reset an index.

The jobs themselves run in `service.jobs`; these routes only read and steer them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.sse import format_sse_event

from unified_kg_rag.domain.index.paths import full_location_of
from unified_kg_rag.retrieval.request import no_such_index
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.deps import app_of, jobs_of
from unified_kg_rag.service.job_store import Job, JobInputs, JobState
from unified_kg_rag.service.jobs import JobManager

__all__ = ["job_events", "router"]

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/v1")


@router.get("/jobs", dependencies=[Depends(requires("read"))])
async def jobs(
    request: Request,
    index: str | None = None,
    state: JobState | None = None,
    limit: int = Query(default=100, ge=1, le=1000),
) -> list[Job]:
    """Jobs, newest first, optionally of one index and one state."""
    return await jobs_of(request).list_jobs(index=index, state=state, limit=limit)


@router.get("/jobs/{job_id}", dependencies=[Depends(requires("read"))])
async def job(request: Request, job_id: str) -> Job:
    """One job: state, progress counts, model spend, times, error, the run's report."""
    return await jobs_of(request).get(job_id)


@router.get("/jobs/{job_id}/events", dependencies=[Depends(requires("read"))])
async def events(request: Request, job_id: str) -> StreamingResponse:
    """Follow a job as Server-Sent Events: ``state``, then ``progress`` events, then ``end``."""
    manager = jobs_of(request)
    await manager.get(job_id)  # an unknown job is a 404, not an empty stream
    return StreamingResponse(job_events(manager, job_id), media_type="text/event-stream")


async def job_events(manager: JobManager, job_id: str) -> AsyncIterator[bytes]:
    """Encode a job's changes as Server-Sent Events (the HTML living standard's format).

    ``event: state`` with the job as JSON first, ``event: progress`` with the job on every
    change of its record (at most four a second), and ``event: end`` with the ended job
    last. A client that hangs up only ends its own stream; the job runs on.
    """
    first = True
    async for job in manager.watch(job_id):
        if not job.active:
            if first:
                yield format_sse_event(event="state", data_str=job.model_dump_json())
            yield format_sse_event(event="end", data_str=job.model_dump_json())
            return
        yield format_sse_event(event="state" if first else "progress",
                               data_str=job.model_dump_json())  # fmt: skip
        first = False


@router.post("/jobs/{job_id}/cancel", dependencies=[Depends(requires("write"))])
async def cancel(request: Request, job_id: str) -> Job:
    """Stop a job like Ctrl-C: committed documents are kept; the job ends ``cancelled``."""
    return await jobs_of(request).cancel(job_id)


@router.post("/jobs/{job_id}/resume", status_code=202, dependencies=[Depends(requires("write"))])
async def resume(request: Request, job_id: str) -> Job:
    """Run an interrupted (or cancelled) job's inputs again as a new job; what it kept stays.

    Resuming a reset job needs the ``admin`` scope.
    """
    manager = jobs_of(request)
    if (await manager.get(job_id)).kind == "reset":
        await requires("admin")(request)
    return await manager.resume(job_id)


@router.post("/indexes/{index}/reset", status_code=202,
             dependencies=[Depends(requires("admin"))])  # fmt: skip
async def reset(request: Request, index: str, confirm: bool = False) -> Job:
    """Rebuild an index in place in a job (``ukr index --reset``): queries keep working.

    Every document whose file is still on disk is processed again, text units no document
    names are removed and the graphs derived again (stored vectors and records reused).
    An index the project does not hold answers 404 (a mistyped name resets nothing).
    """
    app = app_of(request)
    stores = app.index(index)
    existing = await app.backend.list_indexes()
    if stores.name not in existing:
        raise no_such_index(stores.name, existing)
    records = await stores.registry.list_records()
    files = sorted({full_location_of(r.source_scope, r.path) for r in records})
    paths = await asyncio.to_thread(lambda: [f for f in files if Path(f).is_file()])
    return await jobs_of(request).submit("reset", stores.name,
                                         JobInputs(paths=paths, confirm=confirm))  # fmt: skip
