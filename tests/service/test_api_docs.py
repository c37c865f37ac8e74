"""``/docs``: Swagger UI served from this machine, so it works offline (no CDN)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.server import serving

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of an empty project (the OpenAPI page needs no index), behind a key."""
    pytest.importorskip("uvicorn")
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("api-docs")
    with serving(create_app(project, environ={"UKR_API_KEYS": "docs-test-key:read"})) as base:
        yield base


def test_docs_names_no_outside_url_and_its_files_are_served(url: str) -> None:
    reply = httpx.get(f"{url}/docs")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/html")
    page = reply.text
    assert re.findall(r"https?://", page) == []
    assert "cdn.jsdelivr.net" not in page and "tiangolo" not in page
    refs = dict.fromkeys(re.findall(r'(?:src|href)="([^"]+)"', page))
    assert set(refs) == {"/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css",
                         "/docs/assets/favicon.png"}  # fmt: skip
    kinds = {"js": "text/javascript", "css": "text/css", "png": "image/png"}
    for ref in refs:
        asset = httpx.get(url + ref)
        assert asset.status_code == 200, ref
        assert asset.headers["content-type"].startswith(kinds[ref.rsplit(".", 1)[1]]), ref
        assert len(asset.content) > 1000, ref
    assert "SwaggerUIBundle" in httpx.get(url + "/docs/assets/swagger-ui-bundle.js").text
    csp = reply.headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in csp and "unsafe-inline" not in csp.split(";")[1]


def test_redoc_is_off_and_other_asset_names_are_404(url: str) -> None:
    assert httpx.get(f"{url}/redoc").status_code == 404
    missing = httpx.get(f"{url}/docs/assets/..%2F__init__.py")
    assert missing.status_code == 404
    assert httpx.get(f"{url}/docs/assets/swagger-ui-bundle.js.map").status_code == 404


def test_swagger_ui_renders_with_no_request_leaving_this_machine(url: str, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    outside: list[str] = []
    errors: list[str] = []

    def route(request_route: Any) -> None:
        if urlsplit(request_route.request.url).hostname == "127.0.0.1":
            request_route.continue_()
        else:
            outside.append(request_route.request.url)
            request_route.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{url}/docs")
    page.locator(".swagger-ui .info .title").wait_for()
    assert "unified-kg-rag" in page.locator(".swagger-ui .info .title").inner_text()
    page.locator(".swagger-ui .opblock-summary-path", has_text="/v1/health").first.wait_for()
    assert outside == []
    assert errors == []
    context.close()
