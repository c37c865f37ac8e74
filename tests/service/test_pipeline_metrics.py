"""The service's pipeline metrics and request ids, on a real uvicorn server (issue 22).

The pipeline runs in a route the test adds to the real app (the query route's ``pipeline``
option is wired elsewhere): what is checked is the path from `Pipeline.execute` through the
observer the access middleware registers to ``GET /metrics``, and the ``X-Request-ID`` that
names the request and the query in the JSON logs.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.openai_server import FakeOpenAIServer
from tests.support.server import serving
from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import Candidate, Pipeline, StageInput, StageOutput
from unified_kg_rag.util.correlation import current_ids
from unified_kg_rag.util.log_format import configure_logging

pytestmark = pytest.mark.integration

pytest.importorskip("uvicorn")

logger = logging.getLogger("unified_kg_rag.tests.pipeline_metrics")

CONFIG = 'embeddings: {kind: openai, openai: {base_url: "%s", api_key: k, dimension: 8}}\n'


class Seed:
    name = "semantic"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        logger.info("seeding")
        return StageOutput([Candidate(str(i), signals={"semantic": i / 10}) for i in range(7)])


class Trim:
    name = "graph_2hop"

    async def execute(self, stage_input: StageInput) -> StageOutput:
        return StageOutput(stage_input.candidates[:4])


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app of an empty project (embeddings on a scripted server) plus a pipeline route."""
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("metrics")
    with FakeOpenAIServer() as server:
        (project / "ukr.yaml").write_text(CONFIG % server.base_url)
        api = create_app(project)
        pipeline = Pipeline([Seed(), Trim()], WeightedScorer({"semantic": 1.0}))

        async def ask(k: int = 3) -> dict[str, Any]:
            run = await pipeline.execute("owls", k)
            return {"ids": [r.candidate.id for r in run.results], **current_ids()}

        api.add_api_route("/test/pipeline", ask, methods=["GET"])
        with serving(api) as url:
            yield url


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text ``text``."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
        if match and match[1] == name:
            got = ",".join(sorted((match[2] or "").split(","))) if match[2] else ""
            if got == wanted:
                return float(match[3])
    raise AssertionError(f"no sample {name}{{{wanted}}}")


def test_metrics_show_each_stage_of_the_pipeline_queries(base_url: str) -> None:
    for _ in range(2):
        reply = httpx.get(f"{base_url}/test/pipeline", params={"k": 3})
        assert reply.status_code == 200 and reply.json()["ids"] == ["3", "2", "1"]
    text = httpx.get(f"{base_url}/metrics").text
    for stage in ("semantic", "graph_2hop"):
        assert sample(text, "ukr_pipeline_stage_duration_seconds_count", stage=stage) == 2
        assert sample(text, "ukr_pipeline_stage_duration_seconds_sum", stage=stage) > 0
    # candidates in and out: semantic 0 -> 7, graph_2hop 7 -> 4 (two runs each)
    assert sample(text, "ukr_pipeline_stage_candidates_sum", stage="semantic", side="out") == 14
    assert sample(text, "ukr_pipeline_stage_candidates_sum", stage="graph_2hop", side="in") == 14
    assert sample(text, "ukr_pipeline_stage_candidates_sum", stage="graph_2hop", side="out") == 8
    assert sample(text, "ukr_pipeline_stage_candidates_bucket", stage="graph_2hop", side="out",
                  le="1.0") == 0  # fmt: skip
    assert sample(text, "ukr_pipeline_stage_candidates_bucket", stage="graph_2hop", side="out",
                  le="5.0") == 2  # fmt: skip
    assert sample(text, "ukr_pipeline_duration_seconds_count") == 2
    assert sample(text, "ukr_pipeline_results_sum") == 6


def test_a_request_id_is_echoed_and_names_the_query(base_url: str) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    buffer = io.StringIO()
    configure_logging(logging.INFO, "json", stream=buffer)
    try:
        given = httpx.get(f"{base_url}/test/pipeline", headers={"X-Request-ID": "abc-123"})
        fresh = httpx.get(f"{base_url}/test/pipeline")
        odd = httpx.get(f"{base_url}/test/pipeline", headers={"X-Request-ID": "a b"})
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    assert given.headers["x-request-id"] == "abc-123"
    assert given.json()["request_id"] == "abc-123"
    generated = fresh.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated) and fresh.json()["request_id"] == generated
    assert odd.headers["x-request-id"] != "a b" and len(odd.headers["x-request-id"]) == 32
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    seeding = [line for line in lines if line["message"] == "seeding"]
    assert [line["request_id"] for line in seeding] == ["abc-123", generated,
                                                        odd.headers["x-request-id"]]
    # every other answer carries an id too, errors included
    missing = httpx.get(f"{base_url}/v1/no-such-route", headers={"X-Request-ID": "r-404"})
    assert missing.status_code == 404 and missing.headers["x-request-id"] == "r-404"


