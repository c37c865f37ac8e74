"""Keys, scopes, CORS, limits, metrics and the access log on a real uvicorn server (issue 17).

One server: a project with three indexed documents, keys of each scope in the key file, one
key from the environment, small limits, one allowed CORS origin, and an LLM API key in the
configuration that must never reach a log. A test-only router adds write and admin routes
(no such route ships yet), a route with a path parameter and an upload-like echo route.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest
from fastapi import APIRouter, Depends, Request

from tests.support.server import index_good_docs, serving

pytestmark = pytest.mark.integration

uvicorn = pytest.importorskip("uvicorn")

LLM_SECRET = "sk-never-log-this-0123456789"
ENV_KEY = "env-secret-write-key-42"
WRONG_KEY = "ukr_wrong-key-that-must-not-be-echoed"
ORIGIN = "https://app.example.org"
QUESTION = "What do barn owls hunt at night?"
NAMES = {"read": "reader", "write": "writer", "admin": "root"}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self) -> str:
        return "\n".join(r.getMessage() + (r.exc_text or "") for r in self.records)


@dataclass
class Served:
    url: str
    keys: dict[str, str]
    api: object
    logs: _Records
    secrets: list[str] = field(default_factory=list)

    def get(self, path: str, key: str | None = None, **kw: object) -> httpx.Response:
        headers = {"authorization": f"Bearer {key}"} if key else {}
        return httpx.get(f"{self.url}{path}", headers=headers, timeout=60, **kw)  # type: ignore[arg-type]

    def wait_job(self, job_id: str, headers: dict[str, str], timeout_s: float = 120) -> None:
        """Wait until the job ends (so the next test's writes find the index free)."""
        deadline = time.monotonic() + timeout_s
        while httpx.get(f"{self.url}/v1/jobs/{job_id}", headers=headers).json()["state"] in (
            "queued", "running"
        ):
            assert time.monotonic() < deadline, "the job did not end"
            time.sleep(0.2)


def _test_router() -> APIRouter:
    from unified_kg_rag.service.auth import requires
    from unified_kg_rag.service.metrics import metrics_of

    router = APIRouter(prefix="/test")

    @router.post("/write", dependencies=[Depends(requires("write"))])
    async def write() -> dict[str, str]:
        return {"done": "write"}

    @router.post("/admin", dependencies=[Depends(requires("admin"))])
    async def admin() -> dict[str, str]:
        return {"done": "admin"}

    @router.get("/items/{item_id}", dependencies=[Depends(requires("read"))])
    async def item(item_id: str) -> dict[str, str]:
        return {"item": item_id}

    @router.post("/echo", dependencies=[Depends(requires("write"))])
    async def echo(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    @router.post("/job-finished", dependencies=[Depends(requires("write"))])
    async def job_finished(request: Request) -> dict[str, str]:
        metrics_of(request).job_state("default", "index", "succeeded")
        return {"done": "ok"}

    return router


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    from unified_kg_rag.service.app import create_app
    from unified_kg_rag.service.keys import add_key

    project = tmp_path_factory.mktemp("secure")
    index_good_docs(project)
    (project / "ukr.yaml").write_text(
        "llm:\n  kind: none\n  openai:\n    api_key: " + LLM_SECRET + "\n"
        "service:\n  max_body_bytes: 1024\n  max_upload_total_bytes: 8192\n"
        "  max_question_chars: 60\n  max_query_string_bytes: 512\n"
        "  metrics_refresh_s: 3600\n  cors_origins: ['" + ORIGIN + "']\n",
        encoding="utf-8",
    )
    path = project / ".ukr" / "api_keys.json"
    keys = {scope: add_key(path, NAMES[scope], scope) for scope in ("read", "write", "admin")}
    logs = _Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(logs)
    root.setLevel(logging.DEBUG)
    try:
        api = create_app(project, environ={"UKR_API_KEYS": f"{ENV_KEY}:write"})
        api.include_router(_test_router())
        with serving(api) as url:
            yield Served(url, keys, api, logs,
                         [LLM_SECRET, ENV_KEY, WRONG_KEY, *keys.values()])
    finally:
        root.removeHandler(logs)
        root.setLevel(level)


def _error(reply: httpx.Response, status: int, kind: str) -> dict[str, str]:
    assert reply.status_code == status, reply.text
    error: dict[str, str] = reply.json()["error"]
    assert error["type"] == kind and error["message"]
    return error


def test_health_version_and_the_openapi_pages_need_no_key(served: Served) -> None:
    assert served.get("/v1/health").json() == {"status": "ok"}
    assert served.get("/v1/version").status_code == 200
    assert served.get("/docs").status_code == 200
    schemes = served.get("/openapi.json").json()["components"]["securitySchemes"]
    assert schemes["HTTPBearer"]["scheme"] == "bearer"
    assert schemes["APIKeyHeader"]["name"] == "X-API-Key"


def test_a_call_without_a_key_is_refused_401_with_a_bearer_challenge(served: Served) -> None:
    for path in ("/v1/indexes", "/v1/status", "/v1/documents", "/metrics",
                 "/v1/documents/some-id/text", "/v1/messages/thread-day?thread=t&message=m"):
        reply = served.get(path)
        error = _error(reply, 401, "AuthenticationError")
        assert reply.headers["www-authenticate"] == "Bearer"
        assert "API key is required" in error["message"]
    _error(httpx.post(f"{served.url}/v1/query", json={"question": "owls"}), 401,
           "AuthenticationError")


@pytest.mark.parametrize("headers", [
    {"authorization": f"Bearer {WRONG_KEY}"}, {"x-api-key": WRONG_KEY},
    {"authorization": f"Basic {WRONG_KEY}"},
])
def test_a_wrong_key_is_refused_401_and_never_echoed(
    served: Served, headers: dict[str, str]
) -> None:
    reply = httpx.get(f"{served.url}/v1/indexes", headers=headers)
    _error(reply, 401, "AuthenticationError")
    assert WRONG_KEY not in reply.text and WRONG_KEY not in str(reply.headers)


@pytest.mark.parametrize(("holder", "path", "status"), [
    ("read", "/test/write", 403), ("read", "/test/admin", 403),
    ("write", "/test/write", 200), ("write", "/test/admin", 403),
    ("admin", "/test/write", 200), ("admin", "/test/admin", 200),
])
def test_admin_includes_write_includes_read(
    served: Served, holder: str, path: str, status: int
) -> None:
    key = served.keys[holder]
    by_bearer = httpx.post(f"{served.url}{path}", headers={"authorization": f"Bearer {key}"})
    by_header = httpx.post(f"{served.url}{path}", headers={"x-api-key": key})
    assert by_bearer.status_code == by_header.status_code == status, by_bearer.text
    if status == 403:
        error = _error(by_bearer, 403, "PermissionDenied")
        assert f"'{NAMES[holder]}'" in error["message"] and key not in by_bearer.text
    assert served.get("/v1/indexes", key).status_code == 200


def test_a_key_from_the_environment_holds_its_scopes(served: Served) -> None:
    ok = httpx.post(f"{served.url}/test/write", headers={"x-api-key": ENV_KEY})
    assert ok.status_code == 200
    _error(httpx.post(f"{served.url}/test/admin", headers={"x-api-key": ENV_KEY}), 403,
           "PermissionDenied")


def test_a_body_over_the_limit_is_refused_413_by_length_and_as_it_streams(
    served: Served,
) -> None:
    auth = {"authorization": f"Bearer {served.keys['write']}"}
    body = b'{"question": "' + b"x" * 3000 + b'"}'
    by_length = httpx.post(f"{served.url}/v1/query", content=body, headers={
        **auth, "content-type": "application/json"})
    _error(by_length, 413, "RequestTooLarge")

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer encoding
        for _ in range(6):
            yield b"y" * 500

    chunked = httpx.post(f"{served.url}/test/echo", content=chunks(), headers=auth)
    assert "content-length" not in chunked.request.headers
    _error(chunked, 413, "RequestTooLarge")
    small = httpx.post(f"{served.url}/test/echo", content=b"z" * 1000, headers=auth)
    assert small.json() == {"bytes": 1000}


def test_an_upload_has_its_own_total_and_needs_write_before_its_body_is_read(
    served: Served,
) -> None:
    files = {"files": ("a.txt", b"u " * 2500, "text/plain")}
    auth = {"x-api-key": served.keys["write"]}
    upload = httpx.post(f"{served.url}/v1/documents", files=files, headers=auth)
    assert upload.status_code == 202, upload.text  # over max_body_bytes, under the upload's
    served.wait_job(upload.json()["id"], auth)
    gone = httpx.delete(f"{served.url}/v1/documents", params={"path": "a.txt"}, headers=auth)
    assert gone.status_code == 202, gone.text  # the index as the other tests expect it
    served.wait_job(gone.json()["id"], auth)
    big = {"files": ("a.txt", b"u" * 9000, "text/plain")}
    _error(httpx.post(f"{served.url}/v1/documents", files=big, headers=auth), 413,
           "PayloadTooLargeError")
    _error(httpx.post(f"{served.url}/v1/documents", files=files), 401, "AuthenticationError")
    reader = {"x-api-key": served.keys["read"]}
    _error(httpx.post(f"{served.url}/v1/documents", files=files, headers=reader), 403,
           "PermissionDenied")
    # a multipart body to any other route is a body like any other: a read key is enough,
    # and max_body_bytes holds
    _error(httpx.post(f"{served.url}/test/echo", files=files, headers=reader), 413,
           "RequestTooLarge")


def test_a_long_query_string_is_refused_414(served: Served) -> None:
    reply = served.get("/v1/documents", served.keys["read"], params={"path_prefix": "p" * 600})
    _error(reply, 414, "QueryStringTooLong")


def test_a_question_over_max_question_chars_is_refused_422(served: Served) -> None:
    auth = {"x-api-key": served.keys["read"]}
    reply = httpx.post(f"{served.url}/v1/query", headers=auth, json={"question": "q" * 61})
    error = _error(reply, 422, "QuestionTooLong")
    assert error["field"] == "question" and "at most 60" in error["message"]


def test_cors_preflight_allows_the_listed_origin_only(served: Served) -> None:
    ask = {"access-control-request-method": "POST",
           "access-control-request-headers": "authorization, x-api-key, content-type"}
    allowed = httpx.options(f"{served.url}/v1/query", headers={"origin": ORIGIN, **ask})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    granted = allowed.headers["access-control-allow-headers"].lower()
    assert "authorization" in granted and "x-api-key" in granted
    refused = httpx.options(f"{served.url}/v1/query",
                            headers={"origin": "https://evil.example", **ask})
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers


def _scrape(served: Served) -> str:
    reply = served.get("/metrics", served.keys["read"])
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    return reply.text


def test_metrics_count_requests_by_route_template_and_queries_by_stage(served: Served) -> None:
    read = served.keys["read"]
    assert served.get("/test/items/abc123?token=zzz", read).json() == {"item": "abc123"}
    answer = httpx.post(f"{served.url}/v1/query", headers={"x-api-key": read}, timeout=120,
                        json={"question": QUESTION, "strategy": "naive"})
    assert answer.status_code == 200, answer.text
    text = _scrape(served)
    assert ('ukr_http_requests_total{method="GET",route="/test/items/{item_id}",status="200"} '
            "1.0") in text
    assert "abc123" not in text and "zzz" not in text
    assert 'ukr_http_requests_total{method="GET",route="/v1/indexes",status="401"}' in text
    assert 'ukr_http_requests_total{method="GET",route="/openapi.json",status="200"}' in text
    assert 'ukr_http_request_duration_seconds_count{method="POST",route="/v1/query"' in text
    for stage in ("retrieve", "answer", "total"):
        assert (f'ukr_query_stage_duration_seconds_count{{stage="{stage}",strategy="naive"}}'
                in text)
    assert 'ukr_queries_total{answer_kind="extractive",strategy="naive"}' in text


def test_index_counts_come_from_a_cache_refreshed_when_a_job_ends(served: Served) -> None:
    from unified_kg_rag.service.metrics import ServiceMetrics

    metrics: ServiceMetrics = served.api.state.metrics  # type: ignore[attr-defined]
    metrics.job_progress("default", "index", 3, 10)
    text = _scrape(served)
    assert 'ukr_index_items{index="default",kind="documents"} 3.0' in text
    assert 'ukr_index_items{index="default",kind="entities"} 0.0' in text
    assert 'ukr_job_done{index="default",kind="index"} 3.0' in text
    assert 'ukr_job_total{index="default",kind="index"} 10.0' in text
    metrics.index_counts.clear()  # as if the index changed; the hourly refresh is far off
    assert 'index="default"' not in _scrape(served).split("ukr_index_items")[-1]
    done = httpx.post(f"{served.url}/test/job-finished", headers={"x-api-key": ENV_KEY})
    assert done.status_code == 200
    deadline = time.monotonic() + 10
    while 'ukr_index_items{index="default",kind="text_units"}' not in (text := _scrape(served)):
        assert time.monotonic() < deadline, "the counts were not refreshed after the job"
        time.sleep(0.2)
    assert 'ukr_job_state{index="default",kind="index",state="succeeded"} 1.0' in text
    assert 'ukr_job_state{index="default",kind="index",state="running"} 0.0' in text


def test_the_access_log_names_route_status_key_and_client_never_the_question(
    served: Served,
) -> None:
    read = served.keys["read"]
    before = len(served.logs.records)
    httpx.post(f"{served.url}/v1/query", headers={"x-api-key": read}, timeout=120,
               json={"question": QUESTION, "strategy": "naive"})
    served.get("/test/items/abc123?token=zzz", read)
    httpx.post(f"{served.url}/test/admin", headers={"x-api-key": read})
    served.get("/v1/indexes")
    # an earlier test's request may be logged just after `before` (the line is written once
    # the reply is sent), so only these four requests' lines are kept
    lines = [r.getMessage() for r in served.logs.records[before:]
             if r.name == "unified_kg_rag.service.access"
             and r.getMessage().startswith(("POST /v1/query ", "GET /test/items/",
                                            "POST /test/admin ", "GET /v1/indexes "))]  # fmt: skip
    assert len(lines) == 4, lines
    query, item, admin, anonymous = lines
    assert query.startswith("POST /v1/query 200 ") and " key=reader client=127.0.0.1:" in query
    assert item.startswith("GET /test/items/{item_id} 200 ") and "zzz" not in item
    assert admin.startswith("POST /test/admin 403 ") and "key=reader" in admin
    assert anonymous.startswith("GET /v1/indexes 401 ") and "key=- " in anonymous
    assert float(query.split()[3]) > 0 and query.split()[4] == "ms"
    assert "barn owls" not in served.logs.text()


def test_no_key_or_configured_secret_reaches_any_log(served: Served) -> None:
    text = served.logs.text()
    assert "serving" in text and "4 API key(s) (reader, writer, root, env:1)" in text
    assert "unified_kg_rag.service.access" in {r.name for r in served.logs.records}
    for secret in served.secrets:
        assert secret not in text
