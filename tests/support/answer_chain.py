"""A small chain for answer tests: six short documents indexed for ``lazy`` (no model call),
answered by a real OpenAI-compatible test server (`FakeOpenAIServer`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes import FakeEmbedder
from tests.support.openai_server import FakeOpenAIServer
from unified_kg_rag.bootstrap import App, build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.retrieval.chain import RAGChain

__all__ = ["DOCS", "lazy_chain", "llm"]

DOCS = {
    "owls.md": "Owls are nocturnal birds of prey. The barn owl hunts voles at night.",
    "bees.txt": "Honey bees live in colonies. A queen bee lays the eggs of the hive.",
    "ships.md": "The clipper ship was a fast sailing vessel of the 19th century.",
    "moles.md": "Moles dig tunnels under lawns and eat earthworms they find there.",
    "foxes.md": "Red foxes hunt voles and mice in fields at dusk and at night.",
    "kites.md": "Red kites are birds of prey that glide over fields looking for voles.",
}


def llm(server: FakeOpenAIServer, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "openai", "max_retries": 0, "retry_initial_s": 0.01, "cache": False,
        "openai": {"base_url": server.base_url, "api_key": "k", "model": "test-model"},
        **extra,
    }  # fmt: skip


async def lazy_chain(project: Path, server: FakeOpenAIServer, **query: Any) -> tuple[App, RAGChain]:
    """Index `DOCS` (lazy methodology, no model call) and return a chain with the server."""
    docs = project / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    config = UkrConfig(
        llm=llm(server), indexing={"methodologies": ["lazy"]},  # type: ignore[arg-type]
        query={"top_k": 6, "llm_router": False, "llm_query_processing": False, **query},  # type: ignore[arg-type]
    )
    app = build_app(config, project)
    embedder = FakeEmbedder()
    stores = app.index()
    await IndexPipeline(stores, embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
                        parsers=app.parsers, config=app.config).run([docs])  # fmt: skip
    chain = RAGChain(stores, embedder=embedder, chat_model=app.chat_model,
                     budget_tokenizer=app.budget_tokenizer, config=app.config.query)  # fmt: skip
    return app, chain
