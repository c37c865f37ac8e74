"""Routes about the server and its indexes: health, version, indexes, status."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from unified_kg_rag import __version__
from unified_kg_rag.ingestion.status import StatusReport
from unified_kg_rag.retrieval.catalog import StrategyCatalog, strategy_catalog
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.deps import app_of

__all__ = ["router"]

router = APIRouter(prefix="/v1")


@router.get("/health")
async def health() -> dict[str, str]:
    """The server is up (no key needed)."""
    return {"status": "ok"}


@router.get("/version")
async def version() -> dict[str, str]:
    """The package version (no key needed)."""
    return {"name": "unified-kg-rag", "version": __version__}


@router.get("/indexes", dependencies=[Depends(requires("read"))])
async def indexes(request: Request) -> list[StrategyCatalog]:
    """Every index: its methodologies, text units and the strategies it serves."""
    app = app_of(request)
    return [await strategy_catalog(app.index(name)) for name in await app.backend.list_indexes()]


@router.get("/status", dependencies=[Depends(requires("read"))])
async def status(request: Request) -> StatusReport:
    """What ``ukr status --json`` prints: documents by status, counts, drift."""
    return await app_of(request).status()
