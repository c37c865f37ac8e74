"""OpenTelemetry spans of an index run, a query and model calls, against real servers on
127.0.0.1 (the SDK's in-memory exporter; issue 22, observability)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.corpus import write_good_docs
from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.otel import by_name, children_of, recorded_spans

from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
from unified_kg_rag.adapters.llm.openai import OpenAIChatModel
from unified_kg_rag.bootstrap import build_app, load_project_config
from unified_kg_rag.config.models import LLMConfig, OpenAIChatConfig
from unified_kg_rag.domain.models import Message
from unified_kg_rag.util.errors import ModelError

pytestmark = pytest.mark.integration

__all__ = ["recorded_spans"]  # the fixture, used by name

CONFIG = 'embeddings: {kind: openai, openai: {base_url: "%s", api_key: k, dimension: 8}}\n'
QUESTION = [Message(role="user", content="What do barn owls hunt?")]


def project_on(server: FakeOpenAIServer, folder: Path) -> Path:
    (folder / "ukr.yaml").write_text(CONFIG % server.base_url)
    write_good_docs(folder / "docs")
    return folder


def test_an_index_run_is_one_root_span_with_its_phases(
    recorded_spans: Any, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    project = project_on(openai_server, tmp_path)

    async def index() -> Any:
        async with build_app(load_project_config(project), project) as app:
            return await app.index_pipeline().run([project / "docs"])

    report = asyncio.run(index())
    assert report.failed == [] and report.documents_found == 3
    spans = recorded_spans.get_finished_spans()
    (root,) = by_name(spans, "ukr.index.run")
    assert root.parent is None
    assert root.attributes["ukr.index.operation"] == "run"
    assert root.attributes["ukr.index.name"] == "default"
    assert len(root.attributes["ukr.run.id"]) == 32
    phases = [s.name for s in children_of(spans, root)]
    assert phases == ["ukr.index.hash", "ukr.index.diff", "ukr.index.deletions",
                      "ukr.index.remove", "ukr.index.documents", "ukr.index.derived"]
    (hashing,) = by_name(spans, "ukr.index.hash")
    assert hashing.attributes["ukr.files"] == 3
    (documents,) = by_name(spans, "ukr.index.documents")
    assert documents.attributes["ukr.documents"] == 3
    # every embedding request of the run is a span nested under the run, one per request
    embeds = by_name(spans, "ukr.embed")
    sent = openai_server.requests_to("/embeddings")
    assert embeds and len(embeds) == len(sent)
    assert sorted(s.attributes["ukr.embed.texts"] for s in embeds) == sorted(
        len(r.body["input"]) for r in sent)
    for embed in embeds:
        assert embed.context.trace_id == root.context.trace_id
        assert embed.attributes["gen_ai.request.model"].startswith("openai:")
        assert embed.attributes["gen_ai.operation.name"] == "embeddings"
    # no span is left open: each one ended inside the root's window
    assert all(root.start_time <= s.start_time <= s.end_time <= root.end_time for s in spans)


def test_a_query_is_one_span_with_its_strategy_and_id(
    recorded_spans: Any, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    project = project_on(openai_server, tmp_path)

    async def index_then_ask() -> Any:
        async with build_app(load_project_config(project), project) as app:
            await app.index_pipeline().run([project / "docs"])
            recorded_spans.clear()
            openai_server.requests.clear()
            return await app.chain("default").ainvoke("What do barn owls hunt?",
                                                      strategy="naive")  # fmt: skip

    output = asyncio.run(index_then_ask())
    assert output.strategy == "naive"
    spans = recorded_spans.get_finished_spans()
    (query,) = by_name(spans, "ukr.query")
    assert query.parent is None
    assert query.attributes["ukr.query.strategy"] == "naive"
    assert len(query.attributes["ukr.query.id"]) == 32
    # the query's embedding requests are spans inside the query's trace
    embeds = by_name(spans, "ukr.embed")
    assert len(embeds) == len(openai_server.requests_to("/embeddings")) >= 1
    assert all(e.context.trace_id == query.context.trace_id for e in embeds)
    assert all(query.start_time <= e.start_time <= e.end_time <= query.end_time for e in embeds)
    assert embeds[0].attributes["ukr.embed.texts"] == 1  # the question


def llm(server: FakeOpenAIServer) -> Any:
    openai = OpenAIChatConfig(base_url=server.base_url, api_key="test-key",  # type: ignore[arg-type]
                              model="test-model", timeout_s=10.0)  # fmt: skip
    config = LLMConfig.model_validate({"kind": "openai", "openai": openai, "max_retries": 1,
                                       "retry_initial_s": 0.0, "retry_max_s": 0.0})  # fmt: skip
    return wrap_chat_model(OpenAIChatModel(config.openai), config, None)


def test_a_model_call_is_a_span_with_model_and_tokens(
    recorded_spans: Any, openai_server: FakeOpenAIServer
) -> None:
    model = llm(openai_server)
    result = asyncio.run(model.complete(QUESTION, max_tokens=40))
    (call,) = by_name(recorded_spans.get_finished_spans(), "ukr.llm.complete")
    assert call.attributes["gen_ai.request.model"] == model.model_id
    assert call.attributes["gen_ai.request.max_tokens"] == 40
    assert call.attributes["gen_ai.usage.input_tokens"] == result.input_tokens == 5
    assert call.attributes["gen_ai.usage.output_tokens"] == result.output_tokens
    assert call.attributes["ukr.llm.cached"] is False
    assert call.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert call.status.status_code.name == "UNSET"


def test_a_failed_model_call_records_the_http_status(
    recorded_spans: Any, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script(Scripted(status=401, message="bad key"))
    with pytest.raises(ModelError):
        asyncio.run(llm(openai_server).complete(QUESTION))
    (call,) = by_name(recorded_spans.get_finished_spans(), "ukr.llm.complete")
    assert call.attributes["http.response.status_code"] == 401
    assert call.attributes["error.type"] == "ModelError"
    assert call.status.status_code.name == "ERROR"
    assert "gen_ai.usage.input_tokens" not in call.attributes


def test_a_streamed_call_is_a_span_counting_its_chunks(
    recorded_spans: Any, openai_server: FakeOpenAIServer
) -> None:
    async def collect() -> list[str]:
        return [c async for c in llm(openai_server).stream(QUESTION)]

    chunks = asyncio.run(collect())
    (call,) = by_name(recorded_spans.get_finished_spans(), "ukr.llm.stream")
    assert "".join(chunks) == "echo: What do barn owls hunt?"
    assert call.attributes["ukr.llm.chunks"] == len(chunks) >= 1


def test_a_failed_embedding_request_records_the_http_status(
    recorded_spans: Any, openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    project = project_on(openai_server, tmp_path)
    openai_server.script(Scripted(status=403, message="no", path="/v1/embeddings", times=None))

    async def embed() -> None:
        async with build_app(load_project_config(project), project) as app:
            await app.embedder.embed_query("owls")

    with pytest.raises(ModelError):
        asyncio.run(embed())
    embeds = by_name(recorded_spans.get_finished_spans(), "ukr.embed")
    assert embeds and all(s.attributes["http.response.status_code"] == 403 for s in embeds)
    assert all(s.status.status_code.name == "ERROR" for s in embeds)


USER_SETUP = """
import asyncio, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from unified_kg_rag.domain.ranking.signals import WeightedScorer
from unified_kg_rag.retrieval.pipeline import Candidate, Pipeline, StageOutput
from unified_kg_rag.util import telemetry

class Seed:
    name = "semantic"
    async def execute(self, stage_input):
        return StageOutput([Candidate("a", signals={"semantic": 0.9})])

pipeline = Pipeline([Seed()], WeightedScorer({"semantic": 1.0}))
asyncio.run(pipeline.execute("q"))  # no provider yet: nothing is made
print("before:", telemetry.span("x") is telemetry.NOOP_SPAN, flush=True)

provider = TracerProvider()  # what a user writes (docs/guides/observability.md)
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
    formatter=lambda span: span.to_json(indent=None) + "\\n")))
trace.set_tracer_provider(provider)
asyncio.run(pipeline.execute("q"))
provider.shutdown()
"""


def test_a_provider_the_user_sets_receives_the_spans(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "user.py"
    script.write_text(USER_SETUP, encoding="utf-8")
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "before: True"
    spans = {s["name"]: s for s in map(json.loads, lines[1:])}
    assert set(spans) == {"ukr.pipeline", "ukr.stage.semantic", "ukr.pipeline.scoring"}
    root = spans["ukr.pipeline"]
    assert root["parent_id"] is None
    for child in ("ukr.stage.semantic", "ukr.pipeline.scoring"):
        assert spans[child]["parent_id"] == root["context"]["span_id"]
    assert spans["ukr.stage.semantic"]["attributes"] == {
        "ukr.stage.name": "semantic", "ukr.stage.candidates_in": 0, "ukr.stage.candidates_out": 1}
