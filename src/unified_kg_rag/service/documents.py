"""Routes over an index's documents: list, upload, index a server-side path, retry, delete.

Also the index's message archives (``GET /v1/archives``). Uploading, indexing a path,
retrying and deleting answer 202 with a job (`service.job_store.Job`);
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
from unified_kg_rag.ingestion.listing import ArchiveInfo, file_size, list_archives, retry_paths
from unified_kg_rag.ingestion.message_archives import load_archive_record
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
        size_bytes: the size of its file now, bytes (`ingestion.listing.file_size`: the
            registry stores none); None for a message transcript or a file no longer on disk.
    """

    document_id: str
    path: str
    source_scope: str
    status: DocStatus
    text_units: int
    updated_at: float
    error: str | None = None
    failures: int = 0
    size_bytes: int | None = None

    @classmethod
    def of(cls, record: DocRecord, size_bytes: int | None = None) -> DocumentInfo:
        """The listing of a registry record (and its file's size, when known)."""
        return cls(
            document_id=record.document_id, path=record.path, source_scope=record.source_scope,
            status=record.status, text_units=len(record.text_unit_ids),
            updated_at=record.updated_at, error=record.error, failures=record.failure_count,
            size_bytes=size_bytes,
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
    """The documents of an index, by path: status, passages, size, last change, last error."""
    records = await app_of(request).index(index).registry.list_records()
    chosen = sorted(
        (r for r in records
         if (status is None or r.status is status) and r.path.startswith(path_prefix)),
        key=lambda r: (r.path, r.source_scope),
    )  # fmt: skip
    page = chosen[offset : offset + limit]
    sizes = await asyncio.to_thread(lambda: [file_size(r) for r in page])
    return DocumentPage(total=len(chosen), offset=offset,
                        documents=[DocumentInfo.of(r, n) for r, n in zip(page, sizes, strict=True)])


@router.get("/archives", dependencies=[Depends(requires("read"))])
async def archives(request: Request, index: str | None = None) -> list[ArchiveInfo]:
    """The message archives an index's transcripts (scope ``messages:``) are rendered from.

    ``DELETE /v1/documents?path=ARCHIVE`` drops one (``ukr delete ARCHIVE``).
    """
    record = await load_archive_record(app_of(request).index(index).records)
    return await asyncio.to_thread(list_archives, record)


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


@router.post("/documents/{document_id}/retry", status_code=202,
             dependencies=[Depends(requires("write"))])  # fmt: skip
async def retry(request: Request, document_id: str, index: str | None = None) -> Job:
    """Index a document's file again in a job, quarantined items tried again.

    ``ukr index PATH --retry-quarantined`` over the paths `ingestion.listing.retry_paths`
    gives: the file, the folder it was found in (walked again: a file gone from it is
    deleted), or a transcript's archives. A document id or an unique prefix of 8+ characters.
    A path outside ``service.allowed_roots`` (not an upload) is refused (400) as for
    ``POST /v1/documents/path``; 404 for an unknown document, 400 when its file is gone.
    """
    app = app_of(request)
    stores = app.index(index)
    matched, unknown = match_documents(await stores.registry.list_records(), [document_id])
    if unknown:
        raise NotFoundError(f"{document_id}: {unknown[0].reason}", field="document")
    paths = retry_paths(matched[0], await load_archive_record(stores.records))
    kept = uploads_dir(app.project_dir, stores.name).resolve()
    uploads = [p.name for p in paths if p.resolve().parent == kept]
    if len(uploads) < len(paths):  # checked now for a 400, and again when the job starts
        uploads = []
        for path in paths:
            await asyncio.to_thread(allowed_path, str(path), app.config.service.allowed_roots,
                                    app.project_dir)  # fmt: skip
    return await jobs_of(request).submit("index", stores.name, JobInputs(
        paths=[str(p) for p in paths], uploads=uploads, retry_quarantined=True))


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
