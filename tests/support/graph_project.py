"""A project with both kinds of graph, for the graph routes and the MCP server.

Two indexes: ``default`` holds the hand-written LLM graph of `tests.support.graph_fixture`
(entities, relationships, two community levels, reports); ``docs`` holds only the LLM-free
`lazy` concept graph of three documents and a JSON Lines chat archive (two threads), so
concept details name messages.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.corpus import write_good_docs
from tests.support.graph_fixture import graph_app
from unified_kg_rag.bootstrap import build_app, load_project_config

__all__ = ["CHAT", "build_project"]

CHAT = [
    {"thread_id": "birders", "thread_name": "Birders", "sender": "Alice",
     "timestamp": "2024-03-01T18:04:00Z", "text": "I saw a barn owl hunting voles near the mill."},
    {"thread_id": "birders", "thread_name": "Birders", "sender": "Bob",
     "timestamp": "2024-03-01T18:06:00Z", "text": "A barn owl? Lucky you, the mill is a great spot."},
    {"thread_id": "garden", "thread_name": "Garden", "is_from_me": True,
     "timestamp": "2024-03-02T09:00:00Z", "text": "The honey bees swarmed around the queen bee."},
]  # fmt: skip


def build_project(project: Path) -> None:
    """The LLM graph fixture in ``default``; documents and a chat archive in ``docs`` (lazy)."""
    write_good_docs(project / "docs")
    lines = "\n".join(json.dumps(m) for m in CHAT)
    (project / "docs" / "chat.jsonl").write_text(lines + "\n", encoding="utf-8")

    async def build() -> None:
        async with graph_app(project):
            pass
        async with build_app(load_project_config(project), project) as app:
            report = await app.index_pipeline("docs").run([project / "docs"])
            assert report.failed == []

    asyncio.run(build())
