"""A methodology as a plugin: one profile, one derived-stage module, one strategy.

A test methodology ``wordcount`` (its stage counts the words of the stored text units into
the record store) is registered the way a new one would be, then indexed, served, refused
and derived again after a deletion on real SQLite files, with no change to the pipeline.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stages.test_lazy_and_ppr import TOPICS, _ask, _index
from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE, METHODOLOGIES_KEY
from unified_kg_rag.domain.index.methodologies import (
    METHODOLOGIES,
    MethodologyProfile,
    how_to_build,
    needs_llm,
    register_methodology,
)
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ingestion.stages import DERIVED_STAGES, StageContext, StageRun
from unified_kg_rag.ingestion.stages import register_stage as add_stage
from unified_kg_rag.ingestion.units import load_units, processed_unit_paths
from unified_kg_rag.retrieval.strategies import STRATEGIES, QueryContext, register_strategy
from unified_kg_rag.retrieval.strategies.base import Candidate
from unified_kg_rag.util.errors import MethodologyNotIndexedError

pytestmark = pytest.mark.integration


class WordCountStage:
    """Counts the words of every stored text unit (a stand-in for a real derived stage)."""

    name = "wordcount"
    report_field = ""  # no report of its own: the test reads the record store
    order = 40
    runs = 0

    async def run(self, ctx: StageContext, run: StageRun) -> tuple[str, ...]:
        WordCountStage.runs += 1
        units = await load_units(run.stores, await processed_unit_paths(run.stores))
        words = sum(len(u.text.split()) for u in units)
        await run.stores.records.put("wordcount", "total", json.dumps([len(units), words]))
        return ("wordcount",)


class WordCountStrategy:
    """Serves the stored count as one candidate."""

    async def retrieve(self, ctx: QueryContext) -> list[Candidate]:
        raw = await ctx.stores.records.get("wordcount", "total")
        return [Candidate("text_unit", "count", f"count {raw}", 1.0)]


@pytest.fixture
def wordcount() -> Iterator[None]:
    register_methodology(MethodologyProfile(
        "wordcount", "a word count", stage="wordcount", artifacts=(), llm="none",
    ))  # fmt: skip
    add_stage(WordCountStage())
    register_strategy("wordcount", methodology="wordcount", description="counts")(
        WordCountStrategy
    )
    WordCountStage.runs = 0
    try:
        yield
    finally:
        METHODOLOGIES.pop("wordcount")
        DERIVED_STAGES._items.pop("wordcount")
        STRATEGIES._items.pop("wordcount")


def test_a_registered_methodology_is_built_recorded_served_and_derived_again(
    tmp_path: Path, wordcount: None
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in TOPICS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    expected_words = sum(len(t.split()) for t in TOPICS.values())

    async def main() -> None:
        config = UkrConfig(indexing={"methodologies": ["lazy", "wordcount"]})
        async with build_app(config, tmp_path / "p") as app:
            await _index(app, [corpus])
            stores = app.index()
            held = json.loads(await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY) or "")
            assert held == ["lazy", "wordcount"]
            assert json.loads(await stores.records.get("wordcount", "total") or "") == [
                len(TOPICS), expected_words
            ]
            out = await _ask(app, "how many words?", strategy="wordcount")
            assert [s.text for s in out.sources] == [f"count [{len(TOPICS)}, {expected_words}]"]
            pipeline = IndexPipeline(
                stores, embedder=app.embedder, chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers, config=app.config, chat_model=app.chat_model,
                budget_tokenizer=app.budget_tokenizer,
            )  # fmt: skip
            await pipeline.delete(["bread.txt"])
            gone = len(TOPICS["bread.txt"].split())
            assert WordCountStage.runs == 2
            assert json.loads(await stores.records.get("wordcount", "total") or "") == [
                len(TOPICS) - 1, expected_words - gone
            ]
        async with build_app(UkrConfig(), tmp_path / "q") as app:  # `[lazy]` only
            await _index(app, [corpus])
            assert WordCountStage.runs == 2  # not selected: not run
            with pytest.raises(MethodologyNotIndexedError, match="include `wordcount`"):
                await _ask(app, "how many words?", strategy="wordcount")

    asyncio.run(main())


def test_profiles_drive_llm_need_and_help_text() -> None:
    assert needs_llm(["lazy", "raptor"]) is False
    assert needs_llm(["raptor", "hipporag"]) is True
    assert "include `raptor` in `indexing.methodologies`" in how_to_build(("raptor",))
    assert "an LLM (`llm.kind`) writes better summaries" in how_to_build(("raptor",))
    assert "(the default without an LLM)" in how_to_build(("hipporag", "lazy"))
    assert how_to_build(("graphrag",)).startswith("to build it, configure an LLM")


def test_an_unknown_methodology_is_a_config_error_naming_the_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown methodology 'raptr'; registered: graphrag, "
                       r"lightrag, hipporag, lazy, raptor"):  # fmt: skip
        UkrConfig(indexing={"methodologies": ["raptr"]})
