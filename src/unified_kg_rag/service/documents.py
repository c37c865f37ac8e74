"""Routes over an index's documents: list, upload, index a server-side path, delete.

Uploading, indexing a path and deleting answer 202 with a job (`service.job_store.Job`);
``GET /v1/jobs/{id}`` and its events follow it. Uploads are kept in
``PROJECT/uploads/INDEX/`` (`ingestion.uploads`); a server-side path must lie below
``service.allowed_roots``.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from unified_kg_rag.domain.models import DocRecord, DocStatus
from unified_kg_rag.ingestion.deletion import match_documents
from unified_kg_rag.ingestion.messages import archive_targets
from unified_kg_rag.ingestion.uploads import (
    UploadBatch,
    UploadLimits,
    allowed_path,
    uploads_dir,
)
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.deps import app_of, jobs_of
from unified_kg_rag.service.job_store import Job, JobInputs
from unified_kg_rag.service.upload_stream import read_upload
from unified_kg_rag.util.errors import NotFoundError, UsageError

__all__ = ["DocumentInfo", "DocumentPage", "PathRequest", "router"]

router = APIRouter(prefix="/v1")


class DocumentInfo(BaseModel):
    """One document of an index, as ``GET /v1/documents`` lists it.

    Attributes:
        document_id: its id (``ukr delete`` takes it, or a prefix of 8 characters or more).
        path: relative to the folder it was indexed from.
        source_scope: that folder.
        status: ``processed``, ``failed``, ``quarantined``, ``pending`` or ``deleting``.
        text_units: passages it holds.
        updated_at: when its record last changed, Unix seconds.
        error: why it failed, when it did.
        failures: failed runs in a row.
    """

    document_id: str
    path: str
    source_scope: str
    status: DocStatus
    text_units: int
    updated_at: float
    error: str | None = None
    failures: int = 0

    @classmethod
    def of(cls, record: DocRecord) -> DocumentInfo:
        """The listing of a registry record."""
        return cls(
            document_id=record.document_id, path=record.path, source_scope=record.source_scope,
            status=record.status, text_units=len(record.text_unit_ids),
            updated_at=record.updated_at, error=record.error, failures=record.failure_count,
        )  # fmt: skip


class DocumentPage(BaseModel):
    """A page of ``GET /v1/documents``: ``total`` matching, from ``offset``."""

    total: int
    offset: int
    documents: list[DocumentInfo]


@router.get("/documents", dependencies=[Depends(requires("read"))])
async def documents(
    request: Request,
    index: str | None = None,
    status: DocStatus | None = None,
    path_prefix: str = "",
    offset: int = Query(default=0, ge=0),
    limit: int = Query(default=100, ge=1, le=1000),
) -> DocumentPage:
    """The documents of an index, by path: status, passages, last change, last error."""
    records = await app_of(request).index(index).registry.list_records()
    chosen = sorted(
        (r for r in records
         if (status is None or r.status is status) and r.path.startswith(path_prefix)),
        key=lambda r: (r.path, r.source_scope),
    )  # fmt: skip
    return DocumentPage(
        total=len(chosen), offset=offset,
        documents=[DocumentInfo.of(r) for r in chosen[offset : offset + limit]],
    )  # fmt: skip


@router.post("/documents", status_code=202, dependencies=[Depends(requires("write"))])
async def upload(request: Request) -> Job:
    """Upload files (multipart ``files``, optional ``index`` field) and index them in a job.

    The files are kept in ``PROJECT/uploads/INDEX/`` (a name uploaded again replaces its
    document). Limits: ``service.max_upload_file_bytes`` a file, ``max_upload_files`` files,
    ``max_upload_total_bytes`` in all (413, nothing kept). A name with a path separator,
    NUL or a control character, or empty, is refused (400).
    """
    app = app_of(request)
    service = app.config.service
    limits = UploadLimits(file_bytes=service.max_upload_file_bytes,
                          files=service.max_upload_files,
                          total_bytes=service.max_upload_total_bytes)  # fmt: skip
    with UploadBatch(app.project_dir, limits) as batch:
        fields = await read_upload(request, batch)
        if not batch.names:
            raise UsageError("the upload holds no file (send them as `files`)", field="files")

        def move_in(index: str) -> JobInputs:
            moved = batch.commit(uploads_dir(app.project_dir, index))
            return JobInputs(paths=[str(p) for p in moved], uploads=list(batch.names))

        return await jobs_of(request).submit("index", fields.get("index") or None, JobInputs(),
                                             prepare=move_in)  # fmt: skip


class PathRequest(BaseModel):
    """The body of ``POST /v1/documents/path``.

    Attributes:
        path: a file or folder on the server, below ``service.allowed_roots`` (relative:
            to the project directory).
        index: the index (default: ``query.index``).
        confirm: let the run delete more than ``indexing.max_delete_share`` of a folder's
            documents that are gone (``ukr index --yes``).
    """

    path: str
    index: str | None = None
    confirm: bool = False


@router.post("/documents/path", status_code=202, dependencies=[Depends(requires("write"))])
async def index_path(body: PathRequest, request: Request) -> Job:
    """Index a server-side file or folder in a job (``ukr index PATH``)."""
    app = app_of(request)
    path = await asyncio.to_thread(allowed_path, body.path, app.config.service.allowed_roots,
                                   app.project_dir)
    return await jobs_of(request).submit(
        "index", body.index, JobInputs(paths=[str(path)], confirm=body.confirm))


@router.delete("/documents/{document_id}", status_code=202,
               dependencies=[Depends(requires("write"))])  # fmt: skip
async def delete_document(request: Request, document_id: str, index: str | None = None,
                          confirm: bool = False) -> Job:  # fmt: skip
    """Delete a document by id (or an unique prefix of 8+ characters) in a job (``ukr delete``)."""
    return await _delete(request, document_id, index, confirm)


@router.delete("/documents", status_code=202, dependencies=[Depends(requires("write"))])
async def delete_by_path(request: Request, path: str, index: str | None = None,
                         confirm: bool = False) -> Job:  # fmt: skip
    """Delete a document by path (full, or relative to its folder when unique) in a job."""
    return await _delete(request, path, index, confirm)


async def _delete(request: Request, target: str, index: str | None, confirm: bool) -> Job:
    """Check that ``target`` names a document (404 otherwise), then start the delete job."""
    stores = app_of(request).index(index)
    _, unknown = match_documents(await stores.registry.list_records(), [target])
    if unknown and not await archive_targets(stores.records, [target]):
        raise NotFoundError(f"{target}: {unknown[0].reason}", field="document")
    return await jobs_of(request).submit(
        "delete", stores.name, JobInputs(targets=[target], confirm=confirm))
