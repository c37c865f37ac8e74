"""``POST /v1/query`` with ``pipeline``: presets, inline definitions, 422s naming the field.

A real uvicorn server over `tests.support.graph_project` (``default``: the entity-graph
fixture; ``docs``: a concept graph only).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.graph_fixture import unit
from tests.support.graph_project import build_project
from tests.support.server import serving

pytestmark = pytest.mark.integration
uvicorn = pytest.importorskip("uvicorn")

QUESTION = "Where was Marie Curie born?"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("pipeline_service")
    build_project(project)
    with serving(create_app(project)) as url:
        yield url


def ask(base_url: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{base_url}/v1/query", json={"question": QUESTION, **body}, timeout=120)


def test_a_preset_answers_with_its_stage_figures(base_url: str) -> None:
    reply = ask(base_url, pipeline="no_rerank", top_k=2)
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert out["strategy"] == "pipeline:no_rerank"
    stages = out["pipeline"]["stages"]
    assert [s["name"] for s in stages][:3] == ["semantic", "lexical", "hydrate"]
    assert stages[0]["candidates_in"] == 0 and stages[0]["candidates_out"] == 7
    assert all(b["candidates_in"] == a["candidates_out"] for a, b in itertools.pairwise(stages))
    ranked = [r["id"] for r in out["pipeline"]["results"]]
    assert ranked[0] == unit("marie") and len(ranked) == 2
    assert [s["id"] for s in out["sources"]] == ranked


def test_an_inline_definition_runs_and_streams(base_url: str) -> None:
    definition = {"stages": [{"stage": "lexical", "limit": 3}, {"stage": "hydrate"}],
                  "scorer": {"kind": "weighted", "weights": {"lexical": 1.0}}}
    reply = ask(base_url, pipeline=definition)
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert out["strategy"] == "pipeline:inline"
    assert out["pipeline"]["results"][0]["signals"] == {"lexical": 1.0}  # max-normalised BM25
    assert len(out["sources"]) == out["pipeline"]["stages"][0]["candidates_out"] <= 3
    streamed = ask(base_url, pipeline=definition, stream=True)
    assert streamed.status_code == 200
    result = [json.loads(line[len("data: "):]) for line in streamed.text.splitlines()
              if line.startswith("data: ") and '"pipeline"' in line]  # fmt: skip
    assert result[-1]["pipeline"]["results"] == out["pipeline"]["results"]


@pytest.mark.parametrize(("body", "field", "message"), [
    ({"pipeline": "fastest"}, "pipeline", "no pipeline preset 'fastest'; presets: minimal, "
     "no_rerank, standard; or an inline definition object"),
    ({"pipeline": "/etc/passwd.yaml"}, "pipeline", "the service reads no files"),
    ({"pipeline": "minimal", "strategy": "naive"}, "pipeline", "give either strategy or "
     "pipeline, not both"),
    ({"pipeline": {"stages": [{"stage": "vector"}]}}, "pipeline.stages.0.stage",
     "unknown pipeline stage 'vector'; registered: access, "),
    ({"pipeline": {"stages": [{"stage": "semantic", "limt": 3}]}}, "pipeline.stages.0.limt",
     "unknown parameter 'limt'"),
    ({"pipeline": "standard"}, "pipeline", "stage 'rerank' needs a reranker"),
    ({"pipeline": "no_rerank", "index": "docs"}, "pipeline", "stage 'graph' needs an entity "
     "graph"),
])  # fmt: skip
def test_bad_pipelines_are_422_naming_the_field(
    base_url: str, body: dict[str, Any], field: str, message: str
) -> None:
    reply = ask(base_url, **body)
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["type"] == "InvalidPipeline" and error["field"] == field
    assert message in error["message"] and "\n" not in error["message"]


@pytest.mark.parametrize(("pipeline", "field"), [
    ({"stages": []}, "body.pipeline.definition.stages"),
    ({"stages": "x"}, "body.pipeline.definition.stages"),
    ({"stages": [{"stage": "semantic"}], "stage_timeout_s": 0},
     "body.pipeline.definition.stage_timeout_s"),
    ([1, 2], "body.pipeline.definition"),
    (5, "body.pipeline.definition"),
])  # fmt: skip
def test_a_malformed_definition_is_a_validation_error_naming_its_field(
    base_url: str, pipeline: object, field: str
) -> None:
    reply = ask(base_url, pipeline=pipeline)
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == field, reply.json()


def test_the_openapi_document_describes_the_field(base_url: str) -> None:
    schema = httpx.get(f"{base_url}/openapi.json", timeout=30).json()
    request = schema["components"]["schemas"]["QueryRequest"]["properties"]["pipeline"]
    (choice,) = [option for option in request["anyOf"] if option != {"type": "null"}]
    kinds = {json.dumps(option, sort_keys=True) for option in choice["oneOf"]}
    assert json.dumps({"type": "string"}) in kinds
    assert json.dumps({"$ref": "#/components/schemas/PipelineDefinition"}) in kinds
    output = schema["components"]["schemas"]["RAGOutput"]["properties"]
    assert "pipeline" in output


def _caused(error: Exception, cause: Exception) -> Exception:
    try:
        raise error from cause
    except Exception as raised:
        return raised


def test_stage_errors_have_the_status_of_what_they_wrap() -> None:
    from unified_kg_rag.retrieval.pipeline import (
        PipelineError,
        RateLimitedError,
        StageConnectionError,
        StageTimeoutError,
    )
    from unified_kg_rag.service.errors import error_status
    from unified_kg_rag.util.errors import ModelError, StoreConnectionError

    store = _caused(StageConnectionError("semantic", "down"), StoreConnectionError("down"))
    limited = _caused(RateLimitedError("rerank", "429"), ModelError("429", status_code=429))
    timeout = _caused(StageTimeoutError("graph", "ran past 1 s"), TimeoutError())
    assert [error_status(e) for e in (store, limited, timeout)] == [503, 502, 504]
    assert error_status(PipelineError("custom", "bug")) == 500  # nothing it wraps says more
