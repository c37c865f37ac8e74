"""Orphan extraction records (issue #15 item 14): counted by status, swept by the next run.

An index built through a real OpenAI-compatible HTTP server on 127.0.0.1 and real SQLite is
given the records a killed run leaves behind (the record of a text no unit holds any more,
the record of a text under other extraction settings, the failure entry of a removed text),
as an older version's run killed between removing text units and collecting their records
left them. ``describe_index`` counts them; the next unchanged run (which makes no model call
and does not rebuild the graph) deletes them, and so does ``--reset``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import _config, _run, reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.domain.extraction.records import ExtractionRecord, extraction_fingerprint
from unified_kg_rag.domain.index.attempts import UnitAttempts
from unified_kg_rag.ingestion.graph.build import graph_extractor
from unified_kg_rag.ingestion.graph.extract import RECORDS_NAMESPACE
from unified_kg_rag.ingestion.graph.unit_attempts import FAILURES_NAMESPACE
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.status import describe_index

pytestmark = pytest.mark.integration


async def _plant_orphans(app: App) -> set[str]:
    """Store what killed runs leave; return the orphan record keys."""
    assert app.chat_model is not None
    records = app.index().records
    extractor = graph_extractor(app.config, app.chat_model, records)
    removed = extractor.fingerprint("A passage that was deleted from the corpus.")
    other = extraction_fingerprint("Ada Lovelace worked with Charles Babbage.", model_id="old",
                                   prompts={}, settings={})
    for key in (removed, other):
        await records.put(RECORDS_NAMESPACE, key, ExtractionRecord(fingerprint=key,
                                                                   finish_reason="stop")
                          .model_dump_json())
    await records.put(FAILURES_NAMESPACE, removed,
                      UnitAttempts(failures=2, error="x").model_dump_json())
    return {removed, other}


async def _orphans(app: App) -> int | None:
    assert app.chat_model is not None
    index = app.index()
    status = await describe_index(
        index, extractor=graph_extractor(app.config, app.chat_model, index.records))
    return status.extraction_records_orphaned


def test_orphan_records_are_counted_then_swept_by_the_next_run_and_by_reset(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with build_app(_config(server), tmp_path / "p") as app:
            built = await _run(app, [corpus])
            records = app.index().records
            out["kept"] = await records.keys(RECORDS_NAMESPACE)
            out["orphans_built"] = await _orphans(app)
            out["planted"] = await _plant_orphans(app)
            out["orphans_planted"] = await _orphans(app)
            calls = len(server.requests_to("/chat/completions"))
            out["rerun"] = await _run(app, [corpus])
            out["rerun_calls"] = len(server.requests_to("/chat/completions")) - calls
            out["after_rerun"] = await records.keys(RECORDS_NAMESPACE)
            out["failures_after"] = await records.keys(FAILURES_NAMESPACE)
            out["orphans_after"] = await _orphans(app)
            await _plant_orphans(app)
            pipeline = IndexPipeline(
                app.index(), embedder=FakeEmbedder(), chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=app.config, chat_model=app.chat_model,
                budget_tokenizer=app.budget_tokenizer,
            )
            out["reset"] = await pipeline.run([corpus], reset=True)
            out["after_reset"] = await records.keys(RECORDS_NAMESPACE)
            out["built"] = built
        return out

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    assert out["built"].exit_code == 0 and len(out["kept"]) == 4
    assert out["orphans_built"] == 0 and out["orphans_planted"] == 2
    # the unchanged re-run deletes them without rebuilding the graph or calling the model
    rerun = out["rerun"]
    assert rerun.graph.skipped_reason and rerun.records_removed == 2 and rerun.exit_code == 0
    assert out["rerun_calls"] == 0
    assert out["after_rerun"] == out["kept"] and out["failures_after"] == []
    assert out["orphans_after"] == 0
    # --reset sweeps them too
    assert out["reset"].records_removed == 2 and out["after_reset"] == out["kept"]
