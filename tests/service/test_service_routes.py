"""The HTTP service on a real uvicorn server on 127.0.0.1, called with httpx (issue 17)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import serving_good_docs, sse_events

pytestmark = pytest.mark.integration

uvicorn = pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Index three small documents, then serve the project on a free loopback port."""
    with serving_good_docs(tmp_path_factory.mktemp("service")) as url:
        yield url


def test_health_and_version(base_url: str) -> None:
    assert httpx.get(f"{base_url}/v1/health").json() == {"status": "ok"}
    version = httpx.get(f"{base_url}/v1/version").json()
    assert version["name"] == "unified-kg-rag" and version["version"]


def test_indexes_list_the_strategies_each_serves(base_url: str) -> None:
    (default,) = httpx.get(f"{base_url}/v1/indexes").json()
    assert default["index"] == "default" and default["text_units"] >= 3
    served = {s["name"]: s["served"] for s in default["strategies"]}
    assert served["naive"] and served["ppr"] and not served["local"]


def test_status_is_what_ukr_status_json_prints(base_url: str) -> None:
    status = httpx.get(f"{base_url}/v1/status").json()
    (index,) = status["indexes"]
    assert index["documents"] == {"processed": 3}
    # a lazy index: its concept graph has communities, but drift measures the entity graph's
    assert index["methodologies"] == ["lazy"]
    assert index["drift"]["graph"] is None and index["drift"]["communities"] == 0


def test_query_answers_with_sources(base_url: str) -> None:
    reply = httpx.post(f"{base_url}/v1/query", timeout=120,
                       json={"question": "What do barn owls hunt?", "strategy": "naive"})
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert out["answer_kind"] == "extractive" and out["strategy"] == "naive"
    assert any("voles" in s["text"] for s in out["sources"])
    assert out["cited"]


@pytest.mark.parametrize(("body", "status", "kind"), [
    ({"question": "owls", "strategy": "local"}, 409, "MethodologyNotIndexedError"),
    ({"question": "owls", "strategy": "nonsense"}, 400, "ConfigurationError"),
    ({"question": "owls", "filters": {"path": "missing.md"}}, 400, "FilterMatchesNothingError"),
    ({"question": "   "}, 400, "UsageError"),
])
def test_errors_are_typed_json_with_the_status_of_their_kind(
    base_url: str, body: dict[str, object], status: int, kind: str
) -> None:
    reply = httpx.post(f"{base_url}/v1/query", json=body, timeout=120)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["type"] == kind and error["message"]


def test_a_malformed_body_is_refused_before_the_chain(base_url: str) -> None:
    reply = httpx.post(f"{base_url}/v1/query", content=b"{not json", timeout=30,
                       headers={"content-type": "application/json"})
    assert reply.status_code == 422
    assert httpx.post(f"{base_url}/v1/query", json={"question": "x", "top_k": 0}).status_code == 422


def test_without_keys_or_origins_every_caller_is_admitted_and_cors_is_off(base_url: str) -> None:
    assert httpx.get(f"{base_url}/metrics").status_code == 200
    preflight = httpx.options(f"{base_url}/v1/query", headers={
        "origin": "https://app.example.org", "access-control-request-method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers


def test_ukr_serve_refuses_a_public_address_without_insecure(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from unified_kg_rag.cli.app import app

    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "0.0.0.0 is not a loopback address and the service has no API keys" in result.stderr
    assert "ukr keys add" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_streamed_query_sends_deltas_then_the_result(base_url: str) -> None:
    body = {"question": "Who lays the eggs of the hive?", "strategy": "naive", "stream": True}
    with httpx.stream("POST", f"{base_url}/v1/query", json=body, timeout=120) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        events = sse_events(list(reply.iter_lines()))
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "result" and set(kinds[:-1]) == {"delta"}
    result = events[-1][1]
    assert "".join(str(d["text"]) for _, d in events[:-1]) == result["answer"]
    assert any("queen" in str(s["text"]) for s in result["sources"])  # type: ignore[attr-defined,index]


def test_a_streamed_query_refused_before_it_starts_keeps_its_status(base_url: str) -> None:
    body = {"question": "owls", "strategy": "local", "stream": True}
    reply = httpx.post(f"{base_url}/v1/query", json=body, timeout=120)
    assert reply.status_code == 409
    assert reply.json()["error"]["type"] == "MethodologyNotIndexedError"


def test_a_client_leaving_mid_stream_breaks_nothing(base_url: str) -> None:
    body = {"question": "What do barn owls hunt?", "strategy": "naive", "stream": True}
    with httpx.stream("POST", f"{base_url}/v1/query", json=body, timeout=120) as reply:
        next(reply.iter_lines())  # read one line, then hang up
    assert httpx.get(f"{base_url}/v1/health").json() == {"status": "ok"}
    again = httpx.post(f"{base_url}/v1/query", json={**body, "stream": False}, timeout=120)
    assert again.status_code == 200 and again.json()["sources"]


def test_documents_are_listed_by_path_with_status_filters_and_paging(base_url: str) -> None:
    page = httpx.get(f"{base_url}/v1/documents").json()
    assert page["total"] == 3 and page["offset"] == 0
    paths = [d["path"] for d in page["documents"]]
    assert paths == sorted(paths)
    first = page["documents"][0]
    assert first["status"] == "processed" and first["text_units"] >= 1 and first["error"] is None
    second = httpx.get(f"{base_url}/v1/documents", params={"offset": 1, "limit": 1}).json()
    assert [d["path"] for d in second["documents"]] == paths[1:2] and second["total"] == 3
    owls = httpx.get(f"{base_url}/v1/documents", params={"path_prefix": "owl"}).json()
    assert [d["path"] for d in owls["documents"]] == ["owls.md"]
    failed = httpx.get(f"{base_url}/v1/documents", params={"status": "failed"}).json()
    assert failed == {"total": 0, "offset": 0, "documents": []}
    assert httpx.get(f"{base_url}/v1/documents", params={"limit": 0}).status_code == 422
    assert httpx.get(f"{base_url}/v1/documents", params={"status": "nope"}).status_code == 422
    bad = httpx.get(f"{base_url}/v1/documents", params={"index": "../x"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "UsageError"


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"question": "x", "filters": {"path": []}}, 400, "filters.path"),
    ({"question": "x", "filters": {"chunk_index": 10**20}}, 400, "filters.chunk_index"),
    ({"question": "x", "top_k": "many"}, 422, "body.top_k"),
    ({"question": "x", "deadline_s": -1}, 422, "body.deadline_s"),
])
def test_bad_query_values_are_typed_errors_naming_the_field(
    base_url: str, body: dict[str, object], status: int, field: str
) -> None:
    reply = httpx.post(f"{base_url}/v1/query", json=body, timeout=60)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["field"] == field and error["message"].startswith(field)


def test_nan_and_infinity_are_refused_without_echoing_them(base_url: str) -> None:
    for raw in (b'{"question": "x", "top_k": NaN}', b'{"question": "x", "deadline_s": -Infinity}'):
        reply = httpx.post(f"{base_url}/v1/query", content=raw, timeout=60,
                           headers={"content-type": "application/json"})
        assert reply.status_code == 422, reply.text
        assert reply.json()["error"]["type"] == "RequestValidationError"


def test_the_frameworks_own_refusals_have_the_same_shape(base_url: str) -> None:
    missing = httpx.get(f"{base_url}/v1/no-such-route")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "NotFound"
    wrong = httpx.delete(f"{base_url}/v1/query")
    assert wrong.status_code == 405
    assert wrong.json()["error"]["type"] == "MethodNotAllowed"


def test_made_up_methods_make_no_metric_series(base_url: str) -> None:
    for i in range(3):
        httpx.request(f"Z{i:03d}", f"{base_url}/v1/indexes")
    text = httpx.get(f"{base_url}/metrics").text
    assert 'method="Z000"' not in text and 'method="OTHER"' in text
