"""`RAGChain` with a staged pipeline as its retrieval step: the guide's worked example, run.

The code of ``docs/guides/pipeline.md`` (a custom stage and a custom scorer,
registered, then a chain over a real project) is executed as written, on the hand-written
graph fixture (real SQLite stores, the bundled embedder).
"""

from __future__ import annotations

import asyncio
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from tests.support.graph_fixture import DOCS, graph_app, unit

from unified_kg_rag.bootstrap import build_app, load_project_config
from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.retrieval.pipeline_strategy import choose_pipeline
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.integration

GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "pipeline.md"
QUESTION = "Where was Marie Curie born?"
TEXT = {unit(d): text for d, text in DOCS.items()}


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    """The worked example's first Python block, executed (it registers `brevity` and
    `semantic_gate`)."""
    guide = GUIDE.read_text(encoding="utf-8")
    example = guide[guide.index("## Worked example: a custom stage and a custom scorer"):]
    code = re.search(r"```python\n(.*?)```", example, re.S)
    assert code is not None
    module = types.ModuleType("custom_stage_example")  # dataclasses look their module up
    sys.modules[module.__name__] = module
    compiled = compile(code[1], str(GUIDE), "exec", dont_inherit=True)  # as a file would run
    exec(compiled, module.__dict__)
    return module.__dict__


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chain_pipeline")

    async def build() -> None:
        async with graph_app(path):
            pass

    asyncio.run(build())
    return path


def ask(example: dict[str, Any], project: Path, **overrides: object) -> RAGOutput:
    out = asyncio.run(example["ask"](project, QUESTION, **overrides))
    assert isinstance(out, RAGOutput)
    return out


def test_the_custom_stage_and_scorer_rank_and_the_sources_follow(
    example: dict[str, Any], project: Path
) -> None:
    out = ask(example, project)
    assert out.strategy == "pipeline:inline" and out.pipeline is not None
    assert [s.name for s in out.pipeline.stages] == ["semantic", "hydrate", "brevity"]
    assert [s.candidates_out for s in out.pipeline.stages] == [7, 7, 7]
    for result in out.pipeline.results:
        brevity = min(1.0, 90 / len(TEXT[result.id]))
        assert result.signals["brevity"] == pytest.approx(brevity)
        semantic = result.signals["semantic"]
        by_hand = semantic * 0.5 if semantic < 0.3 else 0.8 * semantic + 0.2 * brevity
        assert result.score == pytest.approx(by_hand)
    scores = [r.score for r in out.pipeline.results]
    assert scores == sorted(scores, reverse=True)
    assert [s.id for s in out.sources] == [r.id for r in out.pipeline.results]
    first = out.sources[0]
    assert (first.id, first.path, first.n, first.end_char) == (unit("marie"), "marie.txt", 1,
                                                               len(DOCS["marie"]))  # fmt: skip
    assert out.answer_kind == "extractive" and "[1]" in out.answer


def test_a_tiny_budget_keeps_the_first_results_only(
    example: dict[str, Any], project: Path
) -> None:
    whole = ask(example, project)
    tiny = ask(example, project, max_context_tokens=64)
    assert 1 <= len(tiny.sources) < len(whole.sources)
    ids = [s.id for s in tiny.sources]
    assert ids == [r.id for r in whole.pipeline.results][: len(ids)]  # type: ignore[union-attr]
    assert tiny.metadata["context_tokens"] <= 64


def test_filters_and_the_strategy_refusal(example: dict[str, Any], project: Path) -> None:
    out = ask(example, project, filters={"path": ["warsaw.txt", "vistula.txt"]})
    assert sorted(s.path or "" for s in out.sources) == ["vistula.txt", "warsaw.txt"]
    assert out.pipeline is not None and len(out.pipeline.results) == 2
    with pytest.raises(UsageError, match=r"give either a strategy \('naive'\) or a pipeline"):
        ask(example, project, strategy="naive")


def test_a_pipeline_chain_streams_the_model_answer(
    example: dict[str, Any], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UKR_LLM__KIND", "scripted")
    monkeypatch.setenv("UKR_LLM__SCRIPTED__DEFAULT_REPLY", "She was born in Warsaw [1].")

    async def stream() -> tuple[list[str], RAGOutput]:
        async with build_app(load_project_config(project), project) as app:
            step = choose_pipeline(example["DEFINITION"], await app.pipeline_components(),
                                   field="pipeline", files=False)  # fmt: skip
            pieces: list[str] = []
            final = None
            async for piece in app.chain(pipeline=step).stream(QUESTION, top_k=3):
                if isinstance(piece, RAGOutput):
                    final = piece
                else:
                    pieces.append(piece)
            assert final is not None
            return pieces, final

    pieces, final = asyncio.run(stream())
    assert "".join(pieces).strip() == "She was born in Warsaw [1]." == final.answer
    assert final.answer_kind == "generative" and final.cited == (1,)
    assert final.pipeline is not None and len(final.pipeline.results) == 3
    assert [s.id for s in final.sources] == [r.id for r in final.pipeline.results]


def test_retrieve_and_search_carry_the_trace_too(example: dict[str, Any], project: Path) -> None:
    async def both() -> tuple[Any, Any]:
        async with build_app(load_project_config(project), project) as app:
            step = choose_pipeline("minimal", await app.pipeline_components(),
                                   field="pipeline", files=False)  # fmt: skip
            chain = app.chain(pipeline=step)
            return await chain.retrieve(QUESTION, top_k=2), await chain.search(QUESTION)

    packed, found = asyncio.run(both())
    assert packed.strategy == found.strategy == "pipeline:minimal"
    assert [s.id for s in packed.sources] == [r.id for r in packed.pipeline.results][:2]
    assert packed.timings_ms["retrieve"] > 0 and packed.context_tokens > 0
    ranked = [r.id for r in found.pipeline.results]
    assert [s.id for s in found.results["text_unit"]] == ranked and len(ranked) == len(DOCS)
