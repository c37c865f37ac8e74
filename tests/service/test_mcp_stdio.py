"""`ukr mcp` spoken to by the MCP SDK's own client over stdio (a real subprocess; issue 17)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.graph_fixture import ent
from tests.support.graph_project import build_project

pytestmark = pytest.mark.integration

mcp = pytest.importorskip("mcp")

SRC = Path(__file__).resolve().parents[2] / "src"


@asynccontextmanager
async def session_of(project: Path, errlog: Any) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "unified_kg_rag.cli", "mcp", "-C", str(project)],
        env=env,
    )  # fmt: skip
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def test_every_tool_answers_over_stdio_and_errors_are_tool_errors(tmp_path: Path) -> None:
    project = tmp_path / "project"
    build_project(project)
    errlog = (tmp_path / "stderr.log").open("w")

    async def main() -> None:
        async with session_of(project, errlog) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            assert tools == {"query", "search", "get_entity", "list_documents"}

            answer = payload(await s.call_tool("query", {
                "question": "Where was Marie Curie born?", "strategy": "naive"}))  # fmt: skip
            assert answer["strategy"] == "naive" and answer["cited"]
            paths = [src["path"] for src in answer["sources"]]
            assert paths[0] == "marie.txt" and answer["sources"][0]["n"] == 1
            assert "Warsaw" in answer["answer"]

            found = payload(await s.call_tool("search", {
                "query": "barn owl", "index": "docs", "strategy": "naive",
                "filters": {"path": "owls.md"}}))  # fmt: skip
            assert [src["path"] for src in found["sources"]] == ["owls.md"]
            assert "answer" not in found

            entity = payload(await s.call_tool("get_entity", {"name": "warsaw", "limit": 2}))
            assert entity["id"] == ent("Warsaw") and entity["links_total"] == 3
            assert len(entity["links"]) == 2
            assert entity["communities"][0]["community"]["title"] == "Warsaw, Poland and the Vistula"
            concept = payload(await s.call_tool("get_entity", {"name": "barn owl", "index": "docs"}))
            senders = {m["sender_name"] for d in concept["documents"] for u in d["units"]
                       for m in u["messages"]}  # fmt: skip
            assert senders == {"Alice", "Bob"}

            docs = payload(await s.call_tool("list_documents", {"index": "docs"}))
            assert docs["total"] == 5
            assert {"owls.md", "bees.txt", "ships.md"} <= {d["path"] for d in docs["documents"]}

            bad = await s.call_tool("query", {"question": "owls", "strategy": "nonsense"})
            assert bad.is_error and bad.content[0].text.startswith(  # the SDK's prefix, then ours
                "Error executing tool query: ConfigurationError: query.strategy: unknown strategy "
                "'nonsense'; registered: auto, ")
            missing = await s.call_tool("get_entity", {"name": "Atlantis"})
            assert missing.is_error and "NotFoundError: no entity" in missing.content[0].text
            no_graph = await s.call_tool("get_entity", {"name": "x", "index": "docs",
                                                        "graph": "entities"})  # fmt: skip
            assert no_graph.is_error and "MethodologyNotIndexedError" in no_graph.content[0].text
            again = payload(await s.call_tool("list_documents", {"index": "docs", "limit": 1}))
            assert again["total"] == 5 and len(again["documents"]) == 1  # the session goes on

    anyio.run(main)
    errlog.close()
