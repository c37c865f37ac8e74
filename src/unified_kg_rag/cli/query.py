"""``ukr query "QUESTION"``: answer a question from an index, with numbered sources."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    StoresOpt,
    VerboseOpt,
    load,
    out_console,
    printable,
    run,
)
from unified_kg_rag.domain.models import RAGOutput, Source

__all__ = ["query_command", "render_answer"]

_PREVIEW_CHARS = 160


_STRATEGY_NOTES = {
    "naive": "BM25 and vector search over text units, as --mode says",
    "ppr": "personalized PageRank over the index's graph",
    "lazy": "relevance tests over the concept graph's communities",
}


def render_answer(output: RAGOutput, *, show_sources: bool = True) -> None:
    """Print an answer, then the sources it cites, then the other sources in its context."""
    out_console.print(escape(printable(output.answer, keep_newlines=True)), soft_wrap=True)
    if not (show_sources and output.sources):
        return
    out_console.print(f"\n[dim]Retrieved by strategy {escape(output.strategy)} "
                      f"({_STRATEGY_NOTES.get(output.strategy, 'see the strategies guide')})[/]")
    cited = [s for s in output.sources if s.n in output.cited]
    other = [s for s in output.sources if s.n not in output.cited]
    if cited:
        out_console.print("\n[bold]Sources cited[/]")
        for s in cited:
            _print_source(s, preview=True)
    if other:
        out_console.print("\n[bold]Also in the context, not cited[/]")
        for s in other:
            _print_source(s, preview=not cited)


def _shown_path(s: Source) -> str:
    """The source's file, relative to the current directory when it is below it."""
    if s.location:
        try:
            return str(Path(s.location).relative_to(Path.cwd()))
        except ValueError:
            return s.location
    return s.path or s.id[:12]


def _print_source(s: Source, *, preview: bool) -> None:
    label = printable(s.title or s.path or s.id[:12])
    span = f" chars {s.start_char}-{s.end_char}" if s.start_char is not None else ""
    where = printable(_shown_path(s)) + span
    cut = " (truncated)" if s.truncated else ""
    line = f"  [{s.n}] [bold]{escape(label)}[/] — {escape(where)}{cut}"
    if preview:
        text = printable(" ".join(s.text.split()))
        if len(text) > _PREVIEW_CHARS:
            text = text[:_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"
        line += f"\n      [dim]{escape(text)}[/]"
    out_console.print(line, soft_wrap=True)


def query_command(
    question: Annotated[str, typer.Argument(help="The question.", show_default=False)],
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", "-s", help="Retrieval strategy. [default: query.strategy]"),
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option("--top-k", "-k", min=1, help="Text units retrieved. [default: query.top_k]"),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode", help="hybrid, vector or lexical search. [default: query.search_mode]"
        ),
    ] = None,
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to query. [default: query.index]")
    ] = None,
    sources: Annotated[
        bool, typer.Option("--sources/--no-sources", help="List the sources under the answer.")
    ] = True,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Answer a question from an index, citing the passages it used as [n].

    Without an LLM configured the answer is extractive (quoted sentences); with one it is
    written by the model from the same sources.
    """

    async def main() -> RAGOutput:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.retrieval.chain import RAGChain

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            chain = RAGChain(
                app.index(index),
                embedder=app.embedder,
                chat_model=app.chat_model,
                budget_tokenizer=app.budget_tokenizer,
                config=config.query,
            )
            return await chain.ainvoke(question, strategy=strategy, top_k=top_k, search_mode=mode)

    output = run(main, verbose=verbose)
    if json_out:
        typer.echo(output.model_dump_json(indent=2))
    else:
        render_answer(output, show_sources=sources)
