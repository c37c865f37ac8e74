"""The OpenAPI page ``/docs`` (Swagger UI), served whole from this machine.

FastAPI's own ``/docs`` loads Swagger UI's script and style from a CDN, so offline (the
project's default) it shows a blank page; its ``/redoc`` does the same and is turned off.
Here the page is FastAPI's (`get_swagger_ui_html`), pointing at the Swagger UI files that the
``fastapi-offline`` package ships, served under ``/docs/assets/``. The page's
Content-Security-Policy admits this origin only, and its one inline script by its hash.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response

from unified_kg_rag.service.errors import error_response

__all__ = ["ASSETS", "DOCS_URL", "router"]

DOCS_URL = "/docs"
"""Where the Swagger UI page is."""

ASSETS = {"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
          "swagger-ui.css": "text/css; charset=utf-8", "favicon.png": "image/png"}  # fmt: skip
"""The files under ``/docs/assets/`` (from ``fastapi_offline/static``) and their media types."""

_OAUTH2_REDIRECT = f"{DOCS_URL}/oauth2-redirect"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_COMMON = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}

router = APIRouter(include_in_schema=False)


@router.get(DOCS_URL)
async def swagger_ui(request: Request) -> Response:
    """The Swagger UI page of the app's ``/openapi.json``, with no request off this origin."""
    root = request.scope.get("root_path", "")
    page = get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{root}{DOCS_URL}/assets/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{DOCS_URL}/assets/swagger-ui.css",
        swagger_favicon_url=f"{root}{DOCS_URL}/assets/favicon.png",
        oauth2_redirect_url=f"{root}{_OAUTH2_REDIRECT}",
        swagger_ui_parameters=request.app.swagger_ui_parameters,
    )
    return _with_csp(bytes(page.body))


@router.get(_OAUTH2_REDIRECT)
async def swagger_ui_redirect() -> Response:
    """Swagger UI's OAuth2 redirect page (FastAPI's)."""
    return _with_csp(bytes(get_swagger_ui_oauth2_redirect_html().body))


@router.get(DOCS_URL + "/assets/{name}")
async def asset(name: str) -> Response:
    """One file of `ASSETS`; any other name is 404."""
    media_type = ASSETS.get(name)
    if media_type is None:
        return error_response(404, "NotFound", f"no such asset: {name[:80]!r}")
    body = files("fastapi_offline").joinpath("static", name).read_bytes()
    return Response(body, media_type=media_type,
                    headers={**_COMMON, "Cache-Control": "public, max-age=86400"})  # fmt: skip


def _with_csp(html: bytes) -> HTMLResponse:
    """``html`` with a policy admitting this origin and the page's inline scripts by hash."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(script).digest()).decode() + "'"
        for script in (m.group(1).encode() for m in _INLINE_SCRIPT.finditer(html.decode()))
    )
    csp = (f"default-src 'self'; script-src 'self' {hashes}; style-src 'self' 'unsafe-inline'; "
           "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
           "frame-ancestors 'none'")  # fmt: skip
    headers = {**_COMMON, "Cache-Control": "no-cache", "Content-Security-Policy": csp}
    return HTMLResponse(html, headers=headers)
