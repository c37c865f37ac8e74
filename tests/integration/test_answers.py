"""Answers through `RAGChain`: generative with a real OpenAI-compatible HTTP server, extractive
without an LLM, and "cannot answer" with no context and no model call."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from tests.fakes import FakeEmbedder
from tests.support.corpus import write_good_docs
from tests.support.openai_server import FakeOpenAIServer, Scripted

from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.retrieval.chain import CANNOT_ANSWER, RAGChain
from unified_kg_rag.util.errors import (
    ConfigurationError,
    FilterMatchesNothingError,
    ModelError,
    UsageError,
)

pytestmark = pytest.mark.integration


def _config(server: FakeOpenAIServer | None) -> UkrConfig:
    llm: dict[str, object] = {"kind": "none"}
    if server is not None:
        llm = {
            "kind": "openai",
            "max_retries": 1,
            "retry_initial_s": 0.01,
            "openai": {"base_url": server.base_url, "api_key": "k", "model": "test-model"},
        }
    return UkrConfig(llm=llm, query={"top_k": 3})  # type: ignore[arg-type]


async def _chain(project: Path, server: FakeOpenAIServer | None) -> tuple[App, RAGChain]:
    app = build_app(_config(server), project)
    embedder = FakeEmbedder()
    stores = app.index()
    await IndexPipeline(
        stores,
        embedder=embedder,
        chunk_tokenizer=app.chunk_tokenizer,
        parsers=app.parsers,
        config=app.config,
    ).run([project / "docs"])
    chain = RAGChain(
        stores,
        embedder=embedder,
        chat_model=app.chat_model,
        budget_tokenizer=app.budget_tokenizer,
        config=app.config.query,
    )
    return app, chain


async def _ask(project: Path, server: FakeOpenAIServer | None, question: str, **kw: object) -> RAGOutput:
    app, chain = await _chain(project, server)
    async with app:
        return await chain.ainvoke(question, **kw)


def test_generative_answer_sees_exactly_the_returned_sources(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    write_good_docs(tmp_path / "docs")
    openai_server.script(Scripted(reply="<think>hmm</think>Barn owls hunt voles [1]."))
    out = asyncio.run(_ask(tmp_path, openai_server, "What do barn owls hunt?"))
    assert out.answer_kind == "generative"
    assert out.answer == "Barn owls hunt voles [1]."  # reasoning block stripped
    assert out.cited == (1,)
    (request,) = openai_server.requests_to("/chat/completions")
    prompt = request.body["messages"][-1]["content"]
    blocks = re.findall(r"^\[(\d+)\] ", prompt, flags=re.MULTILINE)
    assert [int(b) for b in blocks] == [s.n for s in out.sources]
    for source in out.sources:
        assert source.text in prompt
    assert request.body["model"] == "test-model"
    assert "What do barn owls hunt?" in prompt
    assert out.usage.calls == 1 and out.usage.output_tokens > 0


def test_second_identical_question_is_served_from_the_cache(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    write_good_docs(tmp_path / "docs")

    async def main() -> tuple[RAGOutput, RAGOutput]:
        app, chain = await _chain(tmp_path, openai_server)
        async with app:
            return await chain.ainvoke("Who lays eggs?"), await chain.ainvoke("Who lays eggs?")

    first, second = asyncio.run(main())
    assert first.answer == second.answer
    assert len(openai_server.requests_to("/chat/completions")) == 1
    assert (second.usage.calls, second.usage.cache_hits) == (0, 1)


def test_no_context_means_cannot_answer_without_a_model_call(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    write_good_docs(tmp_path / "docs")
    out = asyncio.run(
        _ask(tmp_path, openai_server, "zyzzyva quux", search_mode="lexical")
    )
    assert (out.answer_kind, out.answer, out.sources) == ("cannot_answer", CANNOT_ANSWER, ())
    assert openai_server.requests == []


def test_a_filter_matching_nothing_says_no_passage_passes_it(tmp_path: Path) -> None:
    """Issue 16 item 8: not a "cannot answer" as if the question were at fault."""
    write_good_docs(tmp_path / "docs")

    async def main() -> RAGOutput:
        app, chain = await _chain(tmp_path, None)
        async with app:
            return await chain.ainvoke("owls", filters={"path": "nope.md"})

    with pytest.raises(FilterMatchesNothingError, match=r"no passage passes the filter "
                       r"path='nope\.md'"):
        asyncio.run(main())


def test_extractive_answer_quotes_packed_sources(tmp_path: Path) -> None:
    write_good_docs(tmp_path / "docs")
    out = asyncio.run(_ask(tmp_path, None, "queen bee eggs hive"))
    assert out.answer_kind == "extractive"
    assert "A queen bee lays the eggs of the hive." in out.answer
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", out.answer)}
    assert cited <= {s.n for s in out.sources}


def test_context_budget_truncates_and_sources_show_the_cut(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "long.txt").write_text("Alpha beta gamma delta. " * 400, "utf-8")

    async def main() -> RAGOutput:
        app, chain = await _chain(tmp_path, None)
        async with app:
            return await chain.ainvoke("alpha", max_context_tokens=120)

    out = asyncio.run(main())
    assert out.sources[-1].truncated
    total = sum(len(s.text.split()) for s in out.sources)
    assert total < 120
    last = out.sources[-1]
    assert last.end_char is not None and last.start_char is not None
    assert last.end_char - last.start_char == len(last.text)


def test_model_auth_failure_is_an_error_not_an_empty_answer(
    tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    write_good_docs(tmp_path / "docs")
    openai_server.script(Scripted(status=401, message="bad key"))
    with pytest.raises(ModelError, match="auth"):
        asyncio.run(_ask(tmp_path, openai_server, "owls"))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"strategy": "graph"}, ConfigurationError,
         "unknown strategy 'graph'; registered: auto, drift, global, hybrid, iterative, lazy, "
         "local, mix, naive, ppr, simple, tree"),
        ({"top_k": 0}, UsageError, "query"),
        ({"colour": "blue"}, UsageError, "unknown query setting"),
    ],
)
def test_bad_query_settings_fail_before_any_model_call(
    tmp_path: Path,
    openai_server: FakeOpenAIServer,
    kwargs: dict[str, object],
    error: type[Exception],
    message: str,
) -> None:
    write_good_docs(tmp_path / "docs")
    with pytest.raises(error, match=message):
        asyncio.run(_ask(tmp_path, openai_server, "owls", **kwargs))
    assert openai_server.requests == []


class _OtherModel(FakeEmbedder):
    @property
    def model_id(self) -> str:
        return "fake:another-model"


def test_querying_with_another_embedding_model_is_refused(tmp_path: Path) -> None:
    from unified_kg_rag.util.errors import EmbeddingMismatchError

    write_good_docs(tmp_path / "docs")

    async def main() -> None:
        app, _ = await _chain(tmp_path, None)
        async with app:
            other = RAGChain(
                app.index(),
                embedder=_OtherModel(),
                chat_model=None,
                budget_tokenizer=app.budget_tokenizer,
                config=app.config.query,
            )
            await other.ainvoke("owls")

    with pytest.raises(EmbeddingMismatchError, match="built with embedding model 'fake:hash-64'") as err:
        asyncio.run(main())
    assert err.value.exit_code == 2


@pytest.mark.parametrize("reply", ["", "   ", "<think>only reasoning, never closed"])
def test_an_empty_reply_is_an_error_and_is_not_cached(
    tmp_path: Path, openai_server: FakeOpenAIServer, reply: str
) -> None:
    write_good_docs(tmp_path / "docs")
    openai_server.script(Scripted(reply=reply), Scripted(reply="Owls hunt voles [1]."))

    async def main() -> RAGOutput:
        app, chain = await _chain(tmp_path, openai_server)
        async with app:
            with pytest.raises(ModelError, match="empty answer"):
                await chain.ainvoke("What do owls hunt?")
            return await chain.ainvoke("What do owls hunt?")

    out = asyncio.run(main())
    assert out.answer == "Owls hunt voles [1]."
    assert len(openai_server.requests_to("/chat/completions")) == 2


def test_conflicting_statements_are_both_quoted(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "memo-2023.md").write_text("Deadline for the Falcon project is March 3.", "utf-8")
    (docs / "memo-2024.md").write_text("Deadline for the Falcon project is October 9.", "utf-8")
    out = asyncio.run(_ask(tmp_path, None, "When is the Falcon project deadline?"))
    assert "March 3" in out.answer and "October 9" in out.answer


def test_sources_carry_the_full_location_of_same_named_files(tmp_path: Path) -> None:
    roots = [tmp_path / "projA", tmp_path / "projB"]
    for root in roots:
        root.mkdir()
        (root / "notes.md").write_text(f"{root.name} notes on owls.", "utf-8")

    async def main() -> RAGOutput:
        async with build_app(_config(None), tmp_path) as app:
            embedder = FakeEmbedder()
            await IndexPipeline(
                app.index(),
                embedder=embedder,
                chunk_tokenizer=app.chunk_tokenizer,
                parsers=app.parsers,
                config=app.config,
            ).run(roots)
            chain = RAGChain(
                app.index(),
                embedder=embedder,
                chat_model=None,
                budget_tokenizer=app.budget_tokenizer,
                config=app.config.query,
            )
            return await chain.ainvoke("owls notes")

    out = asyncio.run(main())
    assert [s.path for s in out.sources] == ["notes.md", "notes.md"]
    assert sorted(s.location or "" for s in out.sources) == [
        f"{r.resolve().as_posix()}/notes.md" for r in roots
    ]
