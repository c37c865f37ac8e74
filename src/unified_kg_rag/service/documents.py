"""Routes over an index's documents: list them (with filters and paging)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from unified_kg_rag.domain.models import DocRecord, DocStatus
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.deps import app_of

__all__ = ["DocumentInfo", "DocumentPage", "router"]

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
