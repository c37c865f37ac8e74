"""`App.index_pipeline` and `App.chain`: the application API the CLI and the service share
(issue 17), and the concept-graph cache the app owns instead of a module global."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.corpus import write_good_docs

from unified_kg_rag.bootstrap import build_app, load_project_config
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, LAZY_BUILD_KEY
from unified_kg_rag.retrieval.strategies.base import BuildCache

pytestmark = pytest.mark.integration


def test_build_cache_keeps_the_most_recent_builds() -> None:
    cache: BuildCache[str] = BuildCache(size=2)
    cache.put("default", "d1", "one")
    cache.put("default", "d2", "two")
    assert cache.get("default", "d1") == "one"  # now the most recent
    cache.put("other", "d3", "three")
    assert cache.get("default", "d2") is None
    assert (cache.get("default", "d1"), cache.get("other", "d3")) == ("one", "three")


def test_chains_of_one_app_share_its_concept_graphs_and_two_apps_do_not(tmp_path: Path) -> None:
    write_good_docs(tmp_path / "docs")

    async def main() -> None:
        config = load_project_config(tmp_path)
        async with build_app(config, tmp_path) as app:
            report = await app.index_pipeline().run([tmp_path / "docs"])
            assert report.failed == []
            digest = await app.index().records.get(INDEX_NAMESPACE, LAZY_BUILD_KEY)
            assert digest is not None
            assert app.concept_graphs.get("default", digest) is None
            out = await app.chain().ainvoke("Which birds hunt at night?", strategy="ppr")
            assert out.sources
            loaded = app.concept_graphs.get("default", digest)
            assert loaded is not None
            await app.chain().ainvoke("Who lays the eggs?", strategy="lazy")
            assert app.concept_graphs.get("default", digest) is loaded  # loaded once
        async with build_app(config, tmp_path) as other:
            assert other.concept_graphs.get("default", digest) is None

    asyncio.run(main())
