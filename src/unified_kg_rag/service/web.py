"""The web app's bundle, served at ``/`` (no key needed: the app itself calls the API with one).

The bundle is built from ``web/`` by ``make web`` into ``service/static/`` and ships in the
wheel: ``index.html`` at ``/``, its hashed files under ``/assets/``. Only those two routes
exist here, so ``/docs``, ``/v1/*`` and ``/metrics`` keep their own. A hashed file never
changes, so it is cached for a year; ``index.html`` is checked each time. The page's
Content-Security-Policy admits scripts, styles and requests of this origin only, and web
workers made from ``blob:`` URLs (the Graph view's force layout runs in one).
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, PlainTextResponse, Response

from unified_kg_rag.service.errors import error_response

__all__ = ["STATIC_DIR", "router"]

STATIC_DIR = Path(__file__).parent / "static"
"""Where the built bundle lies: ``index.html``, ``assets/``, ``build.json``."""

_ASSET_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}")
_MEDIA_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
                ".png": "image/png", ".woff2": "font/woff2", ".ico": "image/x-icon"}  # fmt: skip
_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'")  # fmt: skip
_COMMON = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> Response:
    """The app's page (``index.html`` of the bundle)."""
    page = STATIC_DIR / "index.html"
    if not page.is_file():
        return PlainTextResponse("the web app is not built into this package: run `make web`",
                                 status_code=404)  # fmt: skip
    headers = {**_COMMON, "Cache-Control": "no-cache", "Content-Security-Policy": _CSP}
    return FileResponse(page, media_type="text/html; charset=utf-8", headers=headers)


@router.get("/assets/{name}")
async def asset(name: str) -> Response:
    """One hashed file of the bundle; any other name is 404 (no path leaves ``assets/``)."""
    path = STATIC_DIR / "assets" / name
    media_type = _MEDIA_TYPES.get(path.suffix)
    if _ASSET_NAME.fullmatch(name) is None or media_type is None or not path.is_file():
        return error_response(404, "NotFound", f"no such asset: {name[:80]!r}")
    headers = {**_COMMON, "Cache-Control": "public, max-age=31536000, immutable"}
    return FileResponse(path, media_type=media_type, headers=headers)
