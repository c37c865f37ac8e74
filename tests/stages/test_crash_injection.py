"""Crash injection (issue #7): a run killed at any store write is repaired by the next run.

Each scenario starts from the same built index (four tiny documents, graphrag + lightrag +
lazy, the word-graph model of `tests.support.word_graph` on a real HTTP server, real SQLite,
the bundled embedding model). A dry run counts the scenario's store writes (W, through
`tests.support.faults`); then for every N in 1..W the scenario runs on a fresh copy of the
built index with the N-th write raising `InjectedCrash` (a kill: no ``except Exception``
swallows it), and the recovery command runs without faults. The result must equal the
dry run's (`tests.support.index_compare.assert_same_index`: search records, vectors, BM25
statistics, lineage, registry, graph store, communities, reports, concept graph) and its
record store: the extraction records (a run killed after removing text but before the records
only that text had were deleted leaves them; the recovery run's graph build sweeps them,
issue #15) and the extraction-failure entries.

Scenarios:

- ``index``: one document changed, one file deleted, one added; ``run`` again to recover.
- ``delete``: `IndexPipeline.delete` of one document (its file removed too); recovered by
  the next ``run`` (the documented repair) or by repeating the same ``delete``.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.faults import FaultPlan, InjectedCrash, faulty
from tests.support.index_compare import COMPARED, assert_same_index, diff_keys, snapshot
from tests.support.openai_server import FakeOpenAIServer
from tests.support.word_graph import word_graph_reply
from unified_kg_rag.adapters.registry import EMBEDDERS
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ports import Embedder, IndexStores

pytestmark = pytest.mark.integration

BASE = {
    "d0.txt": "Ada sings, Babbage reads, London rains.",
    "d1.txt": "Kyoto rains, Yukawa sings.",
    "d2.txt": "Ada reads, Kyoto rains.",
    "d3.txt": "Babbage sings, Yukawa reads.",
    "d5.txt": "Paris rains, Tokyo sings.",
}
CHANGED = "Kyoto rains, Yukawa reads, Ada sings."
ADDED = "London rains, Babbage sings."

Step = Callable[[IndexPipeline, Path], Awaitable[Any]]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model, loaded once for the module."""
    return EMBEDDERS.get("local")(UkrConfig().embeddings)


def _config(server: FakeOpenAIServer) -> UkrConfig:
    return UkrConfig(
        llm={"kind": "openai", "retry_initial_s": 0.01, "retry_max_s": 0.05,
             "openai": {"base_url": server.base_url, "api_key": "k"}},
        graph={"communities": {"min_community_size": 2}},
        indexing={"methodologies": ["graphrag", "lightrag", "lazy"], "max_delete_share": 1.0},
    )  # type: ignore[arg-type]


def _pipeline(app: App, embedder: Embedder, stores: IndexStores) -> IndexPipeline:
    return IndexPipeline(
        stores, embedder=embedder, chunk_tokenizer=app.chunk_tokenizer, parsers=app.parsers,
        config=app.config, chat_model=app.chat_model, budget_tokenizer=app.budget_tokenizer,
        project_dir=app.project_dir, keyphrase_extractor=app.keyphrase_extractor,
    )


def _reset_corpus(corpus: Path, scenario: str | None) -> None:
    """The base corpus with the scenario's file changes applied (None: none)."""
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir()
    for name, text in BASE.items():
        (corpus / name).write_text(text, encoding="utf-8")
    if scenario is None:
        return
    if scenario == "index":
        (corpus / "d1.txt").write_text(CHANGED, encoding="utf-8")
        (corpus / "d2.txt").unlink()
        (corpus / "d4.txt").write_text(ADDED, encoding="utf-8")
    elif scenario == "unique":  # its entities and their community exist nowhere else
        (corpus / "d5.txt").unlink()
    else:
        (corpus / "d3.txt").unlink()


async def _index(pipeline: IndexPipeline, corpus: Path) -> Any:
    report = await pipeline.run([corpus], confirm_deletions=True)
    assert report.exit_code == 0, report
    return report


async def _delete(pipeline: IndexPipeline, corpus: Path) -> Any:
    return await pipeline.delete([str(corpus / "d3.txt")], confirm=True)


SCENARIOS: dict[str, tuple[str, Step, Step]] = {
    "index-then-index": ("index", _index, _index),
    "delete-then-index": ("delete", _delete, _index),
    "delete-then-delete": ("delete", _delete, _delete),
    "unique-then-index": ("unique", _index, _index),
}


async def _step_once(
    server: FakeOpenAIServer, embedder: Embedder, project: Path, corpus: Path,
    step: Step, recover: Step, plan: FaultPlan,
) -> tuple[dict[str, Any], bool]:
    """Run ``step`` under ``plan``; when it crashed, run ``recover``; return the snapshot."""
    async with build_app(_config(server), project) as app:
        with contextlib.suppress(InjectedCrash):
            await step(_pipeline(app, embedder, faulty(app.index(), plan)), corpus)
        crashed = plan.crashed
        if crashed:
            await recover(_pipeline(app, embedder, app.index()), corpus)
        return snapshot(app.backend.location), crashed


def _compare(got: dict[str, Any], want: dict[str, Any]) -> str:
    """Return "" when ``got`` converged to ``want`` (module docstring), else what differs."""
    problems = [diff_keys(got, want, k) for k in (*COMPARED, "extraction_failures")
                if got[k] != want[k]]
    if not problems:
        try:
            assert_same_index(got, want)
        except AssertionError as exc:
            problems.append(f"vectors: {exc}")
    return "; ".join(problems)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_run_killed_at_any_store_write_converges_on_the_next_run(
    tmp_path: Path, embedder: Embedder, name: str
) -> None:
    scenario, step, recover = SCENARIOS[name]
    corpus, base = tmp_path / "corpus", tmp_path / "base"
    with FakeOpenAIServer(reply=word_graph_reply) as server:

        async def build_base() -> None:
            _reset_corpus(corpus, None)
            async with build_app(_config(server), base) as app:
                await _index(_pipeline(app, embedder, app.index()), corpus)

        asyncio.run(build_base())

        _reset_corpus(corpus, scenario)
        dry = FaultPlan()
        shutil.copytree(base, tmp_path / "clean")
        clean, _ = asyncio.run(_step_once(server, embedder, tmp_path / "clean", corpus,
                                          step, recover, dry))
        writes = list(dry.calls)
        assert len(writes) >= 10, writes  # the scenario does write: the loop below is real
        if scenario == "unique":  # the graph-side deletions are among the crash points
            assert {"graph.delete_entities", "graph.delete_communities"} <= set(writes), writes
        failures: list[str] = []
        for n in range(1, len(writes) + 2):
            _reset_corpus(corpus, scenario)
            project = tmp_path / f"n{n}"
            shutil.copytree(base, project)
            plan = FaultPlan(crash_at=n)
            got, crashed = asyncio.run(_step_once(server, embedder, project, corpus,
                                                  step, recover, plan))
            assert crashed == (n <= len(writes)), (n, plan.calls)
            problem = _compare(got, clean)
            if problem:
                failures.append(f"crash at write {n} ({writes[n - 1] if crashed else '-'}): "
                                f"{problem}")
            shutil.rmtree(project)
    assert not failures, f"{len(failures)} of {len(writes)} crash points:\n" + "\n".join(failures)
