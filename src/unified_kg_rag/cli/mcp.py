"""``ukr mcp``: the project's MCP server (`service.mcp`) on stdin/stdout, for agents."""

from __future__ import annotations

from typing import TYPE_CHECKING

from unified_kg_rag.cli.common import ConfigOpt, ProjectOpt, StoresOpt, VerboseOpt, load, run

if TYPE_CHECKING:  # the MCP SDK loads when the command runs
    from mcp.server.mcpserver import MCPServer

__all__ = ["mcp_command"]


def mcp_command(
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Serve the project to an MCP client (Claude Desktop, an agent) over stdio.

    Tools: query (an answer with numbered sources), search (passages, no answer), get_entity
    (a graph entity or concept with its relationships, communities and sources) and
    list_documents. stdout carries the protocol; logs go to stderr. Stops when the client
    closes the session.
    """

    async def build() -> MCPServer:
        from unified_kg_rag.service.mcp import create_mcp_server

        project_dir, _ = load(project, config_file, verbose=verbose, stores=stores)
        return create_mcp_server(project_dir, config_file=config_file, stores=stores)

    run(build, verbose=verbose).run("stdio")
