"""The web app's committed bundle (``service/static``) is what ``web/`` builds, and it is served.

Two checks of the bundle: ``build.json`` (written by ``npm run build``) must hold the hash of
``web/``'s sources as they are and of every built file as committed; this needs no Node, so
it runs everywhere. Where ``web/node_modules`` exists (after ``npm ci``), a fresh build is
also made and compared byte for byte (Vite's output is deterministic for one lockfile).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import index_good_docs, serving
from unified_kg_rag.service.web import STATIC_DIR

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
INPUTS = ("index.html", "viewer.html", "package.json", "package-lock.json", "tsconfig.json",
          "vite.config.ts", "src")
REBUILD = "run `make web` and commit src/unified_kg_rag/service/static"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _inputs_hash() -> str:
    paths = sorted(
        rel for name in INPUTS
        for rel in ([name] if (WEB / name).is_file() else [f"{name}/{p}" for p in _files(WEB / name)])
        if not rel.endswith(".test.ts")
    )  # fmt: skip
    return _sha256("".join(f"{p}\0{_sha256((WEB / p).read_bytes())}\n" for p in paths).encode())


def _built(folder: Path) -> dict[str, str]:
    return {p: _sha256((folder / p).read_bytes()) for p in _files(folder) if p != "build.json"}


def test_the_committed_bundle_is_built_from_web_as_it_is() -> None:
    stamp = json.loads((STATIC_DIR / "build.json").read_text(encoding="utf-8"))
    assert stamp["inputs"] == _inputs_hash(), f"web/ changed since the bundle was built: {REBUILD}"
    assert stamp["files"] == _built(STATIC_DIR), f"the bundle differs from its build: {REBUILD}"
    pages = {p: (STATIC_DIR / p).read_text(encoding="utf-8") for p in stamp["files"]
             if p.endswith((".html", ".js", ".json"))}  # fmt: skip
    for name in stamp["files"]:  # each asset is named by a page, a script (a lazy chunk) or
        if name.startswith("assets/"):  # the viewer's manifest
            base = name.removeprefix("assets/")
            assert any(base in text for p, text in pages.items() if p != name), name


def test_a_fresh_build_of_web_equals_the_committed_bundle(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    if npx is None or not (WEB / "node_modules").is_dir():
        pytest.skip("no npx or no web/node_modules (run `npm ci` in web/)")
    out = tmp_path / "static"
    subprocess.run([npx, "vite", "build", "--outDir", str(out), "--emptyOutDir", "--logLevel", "error"],
                   cwd=WEB, check=True, timeout=300)  # fmt: skip
    assert _built(out) == _built(STATIC_DIR), f"a fresh build differs: {REBUILD}"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A project whose API requires a key: the bundle is still served without one."""
    pytest.importorskip("uvicorn")
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("web")
    index_good_docs(project)
    with serving(create_app(project, environ={"UKR_API_KEYS": "k3y:read"})) as url:
        yield url


def test_the_page_and_its_assets_are_served_without_a_key(base_url: str) -> None:
    page = httpx.get(f"{base_url}/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-cache"
    kinds = {".js": "text/javascript", ".css": "text/css"}
    for name in _files(STATIC_DIR / "assets"):
        reply = httpx.get(f"{base_url}/assets/{name}")
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith(kinds[Path(name).suffix])
        assert "immutable" in reply.headers["cache-control"]
        assert reply.content == (STATIC_DIR / "assets" / name).read_bytes()


@pytest.mark.parametrize("name", ["missing.js", "..%2Fbuild.json", "%2E%2E%2Fweb.py", ".hidden.js",
                                  "index.html"])  # fmt: skip
def test_nothing_but_the_assets_is_served_from_assets(base_url: str, name: str) -> None:
    reply = httpx.get(f"{base_url}/assets/{name}")
    assert reply.status_code == 404
    assert reply.json()["error"]["type"] == "NotFound"


def test_the_api_docs_and_metrics_keep_their_routes(base_url: str) -> None:
    assert httpx.get(f"{base_url}/v1/indexes").status_code == 401
    auth = {"Authorization": "Bearer k3y"}
    assert httpx.get(f"{base_url}/v1/indexes", headers=auth).status_code == 200
    assert httpx.get(f"{base_url}/docs").status_code == 200
    assert httpx.get(f"{base_url}/openapi.json").json()["paths"].get("/") is None
    assert httpx.get(f"{base_url}/v1/health").json() == {"status": "ok"}
    assert httpx.get(f"{base_url}/build.json").status_code == 404
