"""``ukr index PATH --reset``: an in-place rebuild that reuses what is stored (issue #7, B1).

A real OpenAI-compatible server on 127.0.0.1 answers with the replies of
``tests/stages/test_graph_build.py``; real SQLite stores; the hashing test embedder counts
what it embeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fakes import FakeEmbedder
from tests.stages.test_graph_build import DOCS, reply, write_docs
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.identity import entity_id
from unified_kg_rag.domain.models import Collection, Community, IndexRecord, SearchMode
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.retrieval.chain import RAGChain
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.integration


def _config(server: FakeOpenAIServer | None) -> UkrConfig:
    if server is None:
        return UkrConfig(indexing={"methodologies": ["lazy"]})  # type: ignore[arg-type]
    return UkrConfig(
        llm={"kind": "openai", "openai": {"base_url": server.base_url, "api_key": "k"},
             "retry_initial_s": 0.01, "retry_max_s": 0.05},
        graph={"communities": {"min_community_size": 2}},
    )  # type: ignore[arg-type]


def _pipeline(app: App, embedder: FakeEmbedder, *, chat: bool = True,
              force: bool = False, progress: Any = None) -> IndexPipeline:
    return IndexPipeline(
        app.index("default"), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers, config=app.config, progress=progress,
        chat_model=app.chat_model if chat else None, budget_tokenizer=app.budget_tokenizer,
        project_dir=app.project_dir, force_rebuild=force,
    )  # fmt: skip


async def _snapshot(app: App) -> dict[str, Any]:
    """Every graph item of the index, by id, with the fields a rebuild could change."""
    stores = app.index("default")
    communities = await stores.graph.get_communities()
    ids = [c.id for c in communities]
    entity_ids = sorted({m for c in communities for m in c.member_ids})
    reports = await stores.graph.get_reports(ids)
    entities = await stores.graph.get_entities(entity_ids)
    return {
        "counts": await stores.graph.counts(),
        "search": {c.value: await stores.search.count(c) for c in Collection},
        "communities": sorted((c.id, c.level, c.member_ids) for c in communities),
        "reports": sorted((r.community_id, r.title, r.full_content) for r in reports),
        "entities": sorted((e.id, e.name, e.type, e.description, e.text_unit_ids)
                           for e in entities),
        "relationships": sorted(
            (r.id, r.description, r.weight)
            for r in await stores.graph.edges_within(entity_ids)
        ),
    }


def test_reset_of_an_unchanged_corpus_asks_nothing_embeds_nothing_keeps_everything(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        embedder = FakeEmbedder()
        async with build_app(_config(server), tmp_path / "p") as app:
            first = await _pipeline(app, embedder).run([corpus])
            before = await _snapshot(app)
            calls, embedded = len(server.requests_to("/chat/completions")), embedder.embedded_texts
            reset = await _pipeline(app, embedder).run([corpus], reset=True)
            return {
                "first": first, "reset": reset, "before": before, "after": await _snapshot(app),
                "calls": len(server.requests_to("/chat/completions")) - calls,
                "embedded": embedder.embedded_texts - embedded,
            }

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    first: IndexReport = out["first"]
    reset: IndexReport = out["reset"]
    assert first.graph is not None and first.graph.complete and first.graph.reports >= 2
    assert reset.reset and reset.exit_code == 0
    # every document was processed again, every unit kept its vector
    assert reset.documents_unchanged == len(DOCS) and reset.text_units_reused == len(DOCS)
    assert reset.text_units_embedded == 0 and out["embedded"] == 0
    # the graph was derived again (not skipped) from the stored records and cached replies
    graph = reset.graph
    assert graph is not None and graph.skipped_reason == "" and graph.complete
    assert graph.records_reused == len(DOCS) and graph.units_extracted == 0
    assert graph.reports == first.graph.reports
    assert out["calls"] == 0 and reset.usage.calls == 0 and reset.usage.cache_hits > 0
    assert reset.text_units_orphaned == 0 and reset.graph_items_orphaned == 0
    assert out["after"] == out["before"]
    assert out["after"]["counts"]["communities"] >= 2


def test_reset_removes_orphans_a_normal_run_keeps(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")
    ghost_community = Community(id="ghost-community", level=0, member_ids=("ghost-entity",))

    async def main(server: FakeOpenAIServer) -> dict[str, Any]:
        embedder = FakeEmbedder()
        async with build_app(_config(server), tmp_path / "p") as app:
            stores = app.index("default")
            await _pipeline(app, embedder).run([corpus])
            vector = np.ones((1, embedder.dimension), dtype=np.float32)
            await stores.search.upsert(Collection.TEXT_UNITS, [IndexRecord(
                id="orphan-unit", text="Ada Lovelace left an orphaned note.",
                fields={"document_id": "gone", "path": "gone.txt"})], vector)
            await stores.search.upsert(Collection.ENTITIES, [IndexRecord(
                id="ghost-entity", text="Ghost (PERSON): left by an old version.",
                fields={"name": "Ghost", "type": "PERSON"})], vector)
            await stores.graph.upsert_communities([ghost_community])
            normal = await _pipeline(app, embedder).run([corpus])
            kept = (await stores.search.get(Collection.TEXT_UNITS, ["orphan-unit"]),
                    len(await stores.graph.get_communities()))
            reset = await _pipeline(app, embedder).run([corpus], reset=True)
            hits = await stores.search.search(
                Collection.TEXT_UNITS, query_text="orphaned note", mode=SearchMode.LEXICAL, k=5
            )
            return {
                "normal": normal, "kept": kept, "reset": reset, "hits": [h.id for h in hits],
                "unit": await stores.search.get(Collection.TEXT_UNITS, ["orphan-unit"]),
                "entity": await stores.search.get(Collection.ENTITIES, ["ghost-entity"]),
                "communities": [c.id for c in await stores.graph.get_communities()],
                "units": await stores.search.count(Collection.TEXT_UNITS),
            }

    with FakeOpenAIServer(reply=reply) as server:
        out = asyncio.run(main(server))
    normal: IndexReport = out["normal"]
    assert normal.graph is not None and normal.graph.skipped_reason  # nothing changed
    unit, n_communities = out["kept"]
    assert [u.id for u in unit] == ["orphan-unit"]  # a normal run cannot see the orphans
    reset: IndexReport = out["reset"]
    assert reset.text_units_orphaned == 1 and reset.graph_items_orphaned == 2
    assert out["unit"] == [] and out["entity"] == [] and "orphan-unit" not in out["hits"]
    assert "ghost-community" not in out["communities"]
    assert len(out["communities"]) == n_communities - 1
    assert out["units"] == len(DOCS)


class _Phases:
    """A progress reporter that remembers which stages have started and finished."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []

    def start(self, task: str, total: int | None) -> None:
        self.started.append(task)

    def advance(self, task: str, steps: int = 1, *, note: str | None = None) -> None:
        pass

    def finish(self, task: str) -> None:
        self.finished.append(task)

    def warn(self, message: str) -> None:
        pass


def test_queries_answer_while_a_reset_runs(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> tuple[IndexReport, list[tuple[str, int, int]]]:
        embedder = FakeEmbedder()
        async with build_app(_config(server), tmp_path / "p") as app:
            await _pipeline(app, embedder).run([corpus])
            phases = _Phases()
            chain = RAGChain(app.index("default"), embedder=embedder, chat_model=None,
                             budget_tokenizer=app.budget_tokenizer, config=app.config.query)
            task = asyncio.create_task(
                _pipeline(app, embedder, progress=phases).run([corpus], reset=True)
            )
            seen: list[tuple[str, int, int]] = []  # stage reached, sources, entity hits
            while not task.done():
                stage = phases.started[-1] if phases.started else ""
                out = await chain.retrieve("Who designed the Analytical Engine?",
                                           strategy="local")
                hits = await app.index("default").search.search(
                    Collection.ENTITIES, query_text="Babbage", mode=SearchMode.LEXICAL, k=3
                )
                if not task.done():
                    seen.append((stage, len(out.sources), len(hits)))
                await asyncio.sleep(0)
            return await task, seen

    with FakeOpenAIServer(reply=reply) as server:
        report, seen = asyncio.run(main(server))
    assert report.reset and report.exit_code == 0
    assert seen, "no query ran while the reset was in flight"
    assert all(sources > 0 and hits > 0 for _, sources, hits in seen), seen
    # queries ran while the text units and the graph were being rewritten
    assert {"index", "write"} & {stage for stage, _, _ in seen}, seen


def test_reset_with_force_rebuild_asks_the_model_again(tmp_path: Path) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def main(server: FakeOpenAIServer) -> IndexReport:
        embedder = FakeEmbedder()
        async with build_app(_config(server), tmp_path / "p") as app:
            await _pipeline(app, embedder).run([corpus])
            return await _pipeline(app, embedder, force=True).run([corpus], reset=True)

    with FakeOpenAIServer(reply=reply) as server:
        report = asyncio.run(main(server))
    assert report.graph is not None and report.graph.units_extracted == len(DOCS)
    assert report.graph.stages["extract"].usage.calls == 2 * len(DOCS)  # extraction + gleaning
    assert report.text_units_embedded == 0


def test_lazy_index_resets_without_a_model_and_a_graph_index_refuses_without_one(
    tmp_path: Path,
) -> None:
    corpus = write_docs(tmp_path / "corpus")

    async def lazy_main() -> tuple[IndexReport, int]:
        embedder = FakeEmbedder()
        async with build_app(_config(None), tmp_path / "lazy") as app:
            await _pipeline(app, embedder).run([corpus])
            embedded = embedder.embedded_texts
            report = await _pipeline(app, embedder).run([corpus], reset=True)
            return report, embedder.embedded_texts - embedded

    report, embedded = asyncio.run(lazy_main())
    assert report.lazy is not None and report.lazy.skipped_reason == ""
    assert report.lazy.text_units == len(DOCS) and report.lazy.concepts > 0
    assert embedded == 0 and report.graph is None

    async def graph_main(server: FakeOpenAIServer) -> Sequence[str]:
        embedder = FakeEmbedder()
        async with build_app(_config(server), tmp_path / "graph") as app:
            await _pipeline(app, embedder).run([corpus])
            with pytest.raises(ConfigurationError, match="nothing was reset"):
                await _pipeline(app, embedder, chat=False).run([corpus], reset=True)
            stores = app.index("default")
            return [e.id for e in await stores.graph.get_entities([entity_id("Ada Lovelace")])]

    with FakeOpenAIServer(reply=reply) as server:
        assert asyncio.run(graph_main(server)) == [entity_id("Ada Lovelace")]
