"""The MCP server of one project (`ukr mcp`): tools an agent calls over stdio.

Tools: ``query`` (an answer with numbered sources), ``search`` (the passages a question
retrieves, no answer), ``get_entity`` (a graph node with its edges, communities and sources,
`retrieval.graph_view`) and ``list_documents``. One `App` lives for the session, so the
embedding model and loaded graphs are kept between calls. A `UkrError` becomes a tool error
(``is_error``) whose text is ``ErrorType: message`` as the CLI prints it (after the SDK's
``Error executing tool NAME:`` prefix); the session goes on.
stdout carries the protocol: the caller sends logs to stderr.

Built on the MCP Python SDK's ``MCPServer`` (called ``FastMCP`` before SDK 2).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, Field

from unified_kg_rag import __version__
from unified_kg_rag.bootstrap import App, build_app, load_project_config
from unified_kg_rag.domain.models import DocStatus, MessageRef, MetadataValue, Source
from unified_kg_rag.retrieval.graph_view import GraphKind, NodeDetail
from unified_kg_rag.service.documents import DocumentInfo
from unified_kg_rag.util.errors import UkrError

if TYPE_CHECKING:  # the SDK loads when the server is built
    from mcp.server.mcpserver import MCPServer

__all__ = ["DocumentList", "PassageList", "ToolAnswer", "ToolSource", "create_mcp_server"]

_T = TypeVar("_T")
_TEXT_CHARS = 2000
"""Characters of a source's text a tool result carries."""


class ToolSource(BaseModel):
    """One numbered source of a tool result.

    Attributes:
        n: its number (``[n]`` in the answer).
        kind: ``text_unit``, ``entity``, ``relationship``, ``report`` ...
        id: its id.
        path: the document's path, when it has one.
        title: its title.
        text: its text (the first 2,000 characters).
        score: its retrieval score.
        messages: the messages it holds, for message archives (sender, time, thread).
    """

    n: int
    kind: str
    id: str
    path: str | None = None
    title: str | None = None
    text: str
    score: float = 0.0
    messages: list[MessageRef] = Field(default_factory=list)

    @classmethod
    def of(cls, source: Source) -> ToolSource:
        """The tool view of an answer's source."""
        return cls(n=source.n, kind=source.kind, id=source.id, path=source.path,
                   title=source.title, text=source.text[:_TEXT_CHARS], score=source.score,
                   messages=list(source.messages))  # fmt: skip


class ToolAnswer(BaseModel):
    """The result of ``query``: the answer, citing ``[n]`` the sources listed."""

    answer: str
    answer_kind: str
    strategy: str
    index: str
    cited: list[int]
    sources: list[ToolSource]


class PassageList(BaseModel):
    """The result of ``search``: the passages (and graph items) retrieved, best first."""

    strategy: str
    index: str
    sources: list[ToolSource]


class DocumentList(BaseModel):
    """The result of ``list_documents``: ``total`` matching, the first ``limit`` by path."""

    total: int
    documents: list[DocumentInfo]


@dataclass
class _Session:
    app: App | None = None

    async def call(self, work: Callable[[App], Awaitable[_T]]) -> _T:
        """Run ``work`` on the app; a `UkrError` becomes a tool error (``Type: message``)."""
        from mcp.server.mcpserver.exceptions import ToolError

        if self.app is None:
            raise ToolError("the server is not started")
        try:
            return await work(self.app)
        except UkrError as error:
            raise ToolError(f"{type(error).__name__}: {error}") from error


Filters = dict[str, MetadataValue | list[MetadataValue]]


def create_mcp_server(
    project_dir: Path, *, config_file: Path | None = None, stores: str | None = None
) -> MCPServer:
    """Return the MCP server of the project at ``project_dir`` (run it with ``.run("stdio")``).

    The configuration is read now (a bad one fails before the session starts); the providers
    are built when the session starts and closed when it ends.

    Raises:
        ConfigurationError: the configuration is invalid.
    """
    from mcp.server.mcpserver import MCPServer

    config = load_project_config(project_dir, config_file=config_file, stores=stores)
    session = _Session()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        async with build_app(config, project_dir) as app:
            session.app = app
            try:
                yield
            finally:
                session.app = None

    server = MCPServer(
        "unified-kg-rag", version=__version__, lifespan=lifespan,
        instructions="Answers questions over a unified-kg-rag index with numbered sources; "
        "search passages, read graph entities and list the indexed documents.",
    )  # fmt: skip

    @server.tool()
    async def query(
        question: str,
        strategy: str | None = None,
        index: str | None = None,
        filters: Filters | None = None,
        top_k: int | None = None,
    ) -> ToolAnswer:
        """Answer a question from the index, citing numbered sources as [n].

        Args:
            question: the question.
            strategy: naive, local, global, drift, hybrid, mix, ppr, lazy, auto ... (default:
                the project's query.strategy).
            index: the index (default: the project's query.index).
            filters: equality filters on passage fields (path, document_id ...); a list
                means any of these.
            top_k: sources per type.
        """

        async def work(app: App) -> ToolAnswer:
            extra = {"strategy": strategy, "top_k": top_k}
            out = await app.chain(index).ainvoke(
                question, filters=filters or None, **{k: v for k, v in extra.items() if v}
            )
            return ToolAnswer(answer=out.answer, answer_kind=out.answer_kind,
                              strategy=out.strategy, index=out.index, cited=list(out.cited),
                              sources=[ToolSource.of(s) for s in out.sources])  # fmt: skip

        return await session.call(work)

    @server.tool()
    async def search(
        query: str,
        strategy: str | None = None,
        index: str | None = None,
        filters: Filters | None = None,
        top_k: int | None = None,
    ) -> PassageList:
        """Return the passages (and graph items) a question retrieves, without an answer.

        Args:
            query: what to look for.
            strategy: the retrieval strategy (default: the project's query.strategy).
            index: the index (default: the project's query.index).
            filters: equality filters on passage fields (path, document_id ...).
            top_k: sources per type.
        """

        async def work(app: App) -> PassageList:
            extra = {"strategy": strategy, "top_k": top_k}
            out = await app.chain(index).retrieve(
                query, filters=filters or None, **{k: v for k, v in extra.items() if v}
            )
            return PassageList(strategy=out.strategy, index=out.index,
                               sources=[ToolSource.of(s) for s in out.sources])  # fmt: skip

        return await session.call(work)

    @server.tool()
    async def get_entity(
        name: str, index: str | None = None, graph: GraphKind | None = None, limit: int = 20
    ) -> NodeDetail:
        """Return a graph entity (or a lazy-graph concept) by name or id.

        Its description, relationships with the other end, communities with their reports,
        and the documents (and messages) it was read from.

        Args:
            name: the entity's name (case-insensitive) or id.
            index: the index (default: the project's query.index).
            graph: entities (the LLM graph) or concepts (default: entities when held).
            limit: the most relationships and text units listed.
        """

        async def work(app: App) -> NodeDetail:
            return await app.graph_reader(index).node(
                name, graph=graph, links_limit=max(1, limit), units_limit=max(1, limit)
            )

        return await session.call(work)

    @server.tool()
    async def list_documents(
        index: str | None = None,
        status: DocStatus | None = None,
        path_prefix: str = "",
        limit: int = 100,
    ) -> DocumentList:
        """List the documents of an index by path: status, passages, last error.

        Args:
            index: the index (default: the project's query.index).
            status: only documents with this status (processed, failed ...).
            path_prefix: only paths starting with this.
            limit: the most documents listed.
        """

        async def work(app: App) -> DocumentList:
            records = await app.index(index).registry.list_records()
            chosen = [r for r in records
                      if (status is None or r.status is status) and r.path.startswith(path_prefix)]
            chosen.sort(key=lambda r: (r.path, r.source_scope))
            return DocumentList(total=len(chosen),
                                documents=[DocumentInfo.of(r) for r in chosen[: max(0, limit)]])

        return await session.call(work)

    return server
