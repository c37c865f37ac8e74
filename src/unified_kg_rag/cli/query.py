"""``ukr query "QUESTION"``: answer a question from an index, with numbered sources."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    StoresOpt,
    VerboseOpt,
    err_console,
    load,
    out_console,
    printable,
    run,
)
from unified_kg_rag.cli.query_steps import query_steps
from unified_kg_rag.domain.models import MessageRef, MetadataValue, RAGOutput, Source
from unified_kg_rag.domain.ranking.trace import PipelineTrace
from unified_kg_rag.util.correlation import as_query
from unified_kg_rag.util.errors import UsageError

__all__ = [
    "parse_filters",
    "pipeline_line",
    "query_command",
    "render_answer",
    "render_context",
    "render_warnings",
    "strategies_epilog",
]

_PREVIEW_CHARS = 160


_KIND_LABELS = {
    "entity": "entity",
    "relationship": "relationship",
    "claim": "claim",
    "report": "community report",
    "summary": "tree summary",
    "key_points": "key points",
    "notes": "intermediate answers",
}


def parse_filters(values: list[str] | None) -> dict[str, MetadataValue | list[MetadataValue]]:
    """Parse ``--filter key=value`` options (`retrieval.models.parse_filter_options`).

    Raises:
        UsageError: a malformed option.
    """
    from unified_kg_rag.retrieval.models import parse_filter_options

    return parse_filter_options(values or [], field="--filter")


def render_context(output: RAGOutput) -> None:
    """Print the context exactly as the answer model saw it (``--show-context``)."""
    from unified_kg_rag.retrieval.answer import render_source

    out_console.print("[bold]Context given to the answer step[/]")
    for s in output.sources:
        out_console.print(escape(printable(render_source(s), keep_newlines=True)), soft_wrap=True)
        out_console.print("")


def render_answer(output: RAGOutput, *, show_sources: bool = True) -> None:
    """Print an answer, its warnings, the sources it cites, then the others in its context.

    Citation labels that name no source are marked (``[42]`` → ``[42?]``); the warnings
    (a cut answer, such labels, a passed deadline) are one line each under the answer.
    """
    from unified_kg_rag.domain.answers.citations import mark_invalid_citations

    text = output.answer
    if output.metadata.get("invalid_citations"):
        text = mark_invalid_citations(text, output.sources)
    out_console.print(escape(printable(text, keep_newlines=True)), soft_wrap=True)
    render_warnings(output)
    if show_sources:
        _render_sources(output)


def render_warnings(output: RAGOutput) -> None:
    """Print what a reader must know about the answer, one line each.

    An extractive answer's match verdict (``match: strong|weak, …``) comes first, then one
    ``warning:`` line per thing to flag.
    """
    from unified_kg_rag.domain.answers.match import describe_match
    from unified_kg_rag.domain.answers.warnings import answer_warnings

    verdict = describe_match(output.metadata)
    if verdict is not None:
        out_console.print(escape(verdict), soft_wrap=True)

    for line in answer_warnings(output):
        out_console.print(f"[yellow]warning:[/] {escape(printable(line))}", soft_wrap=True)


def _render_sources(output: RAGOutput) -> None:
    if not output.sources:
        return
    out_console.print(f"\n[dim]Retrieved by strategy {escape(output.strategy)} "
                      f"({escape(_strategy_line(output.strategy))})[/]")
    if output.evidence:
        out_console.print("\n[bold]Messages the answer rests on[/]")
        for m in output.evidence:
            out_console.print(f"  {_message_line(m)}", soft_wrap=True)
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


def _strategy_line(name: str) -> str:
    """The strategy's one line from the registry (a strategy not registered here: a pointer)."""
    from unified_kg_rag.retrieval.strategies import STRATEGIES

    if name.startswith("pipeline:"):
        return "a staged retrieval pipeline; --json and -v show its stages"
    return STRATEGIES.get(name).description if name in STRATEGIES else "see the strategies guide"


def pipeline_line(trace: PipelineTrace) -> str:
    """One line of a pipeline run: each stage's candidates out and time (``-v``)."""
    stages = " → ".join(f"{s.name} {s.candidates_out} ({s.duration_ms:.1f} ms)"
                        for s in trace.stages)  # fmt: skip
    return f"{trace.name}: {stages}; {len(trace.results)} result(s)"


def strategies_epilog() -> str:
    """The strategies with one line each, from the registry, for ``ukr query --help``."""
    from unified_kg_rag.retrieval.strategies import STRATEGIES

    lines = [f"- **{n}**: {STRATEGIES.get(n).description}" for n in STRATEGIES.names()]
    return ("**Strategies** (`ukr strategies` says which the index serves):\n\n"
            + "\n".join(lines))  # fmt: skip


def _shown_path(s: Source) -> str:
    """The source's file, relative to the folder it was indexed from (the one form shown).

    ``--filter path=`` takes this form (and the absolute one); ``--json`` has both
    (``path``, ``location``).
    """
    return s.path or s.id[:12]


def _message_line(m: MessageRef) -> str:
    """``[2.3] 2019-05-01 18:22 · Bob · Family: text`` (escaped for rich)."""
    when = m.timestamp[:16].replace("T", " ") if m.timestamp else "undated"
    body = printable(" ".join(m.text.split(": ", 1)[-1].split()))
    if len(body) > _PREVIEW_CHARS:
        body = body[:_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"
    label = f"[{m.label}] " if m.label else ""
    head = f"{label}{when} · {printable(m.sender_name)} · {printable(m.thread_name)}"
    return f"{escape(head)}: [dim]{escape(body)}[/] [dim]({escape(m.guid)})[/]"


def _print_source(s: Source, *, preview: bool) -> None:
    label = printable(s.title or s.path or s.id[:12])
    span = f" chars {s.start_char}-{s.end_char}" if s.start_char is not None else ""
    where = printable(_shown_path(s)) + span
    if s.messages and s.kind == "text_unit":
        senders = ", ".join(dict.fromkeys(m.sender_name for m in s.messages))
        dated = [m.timestamp[:16].replace("T", " ") for m in s.messages if m.timestamp]
        when = f", {dated[0]} to {dated[-1]}" if dated else ", undated"
        where = f"{len(s.messages)} message(s) from {senders}{when}"
    if s.kind in _KIND_LABELS:
        docs = len(set(s.document_ids) or ({s.document_id} if s.document_id else set()))
        where = _KIND_LABELS[s.kind] + (f", from {docs} document(s)" if docs else "")
    cut = " (truncated)" if s.truncated else ""
    line = f"  [{s.n}] [bold]{escape(label)}[/] — {escape(where)}{cut}"
    if preview:
        text = printable(" ".join(s.text.split()))
        if len(text) > _PREVIEW_CHARS:
            text = text[:_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"
        line += f"\n      [dim]{escape(text)}[/]"
    out_console.print(line, soft_wrap=True)
    if preview and s.messages and s.kind != "text_unit":
        for m in s.messages:
            out_console.print(f"      {_message_line(m)}", soft_wrap=True)


def query_command(
    question: Annotated[str, typer.Argument(help="The question.", show_default=False)],
    strategy: Annotated[
        str | None,
        typer.Option("--strategy", "-s", help="Retrieval strategy, listed below. --strategy "
                     "hybrid is LightRAG's graph strategy, not the search mode (--mode). "
                     "[default: query.strategy]"),
    ] = None,
    pipeline: Annotated[
        str | None,
        typer.Option("--pipeline", help="Retrieve with a staged pipeline instead of a "
                     "strategy: a preset (standard, minimal, no_rerank) or a FILE.yaml "
                     "definition (see the pipeline guide). Not with --strategy."),
    ] = None,
    top_k: Annotated[
        int | None,
        typer.Option("--top-k", "-k", min=1, help="Text units retrieved. [default: query.top_k]"),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode", help="Search mode of the passage searches: hybrid (BM25 + vector, "
            "fused), vector or lexical; not the hybrid strategy (--strategy hybrid). "
            "[default: query.search_mode]"
        ),
    ] = None,
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to query. [default: query.index]")
    ] = None,
    sources: Annotated[
        bool, typer.Option("--sources/--no-sources", help="List the sources under the answer.")
    ] = True,
    filters: Annotated[
        list[str] | None,
        typer.Option("--filter", "-f", help="Only passages whose field equals the value, "
                     "e.g. --filter path=notes/a.md (the path as sources show it, relative "
                     "to the indexed folder; the absolute or ./ form works too; repeat a key "
                     "for any of several values). A filter no passage passes exits 2."),
    ] = None,
    stream: Annotated[
        bool, typer.Option("--stream", help="Print the answer as the model writes it.")
    ] = False,
    show_context: Annotated[
        bool, typer.Option("--show-context", help="Print the context the answer model saw.")
    ] = False,
    conversation: Annotated[
        str | None,
        typer.Option("--conversation", help="Conversation id: a follow-up question is "
                     "rewritten from the earlier turns of this conversation."),
    ] = None,
    user: Annotated[
        str, typer.Option("--user", help="Whose conversation it is.")
    ] = "default",
    deadline: Annotated[
        float | None,
        typer.Option("--deadline", min=0.001, help="Longest the whole query may take, seconds: "
                     "past it the answer is built from what was found so far (flagged). "
                     "[default: query.deadline_s]"),
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Answer a question from an index, citing the passages it used as [n].

    Without an LLM configured the answer is extractive (quoted sentences); with one it is
    written by the model from the same sources. ``--json`` prints the answer, the sources,
    per-stage timings, usage and the strategy's metadata.
    """
    streaming = stream and not json_out

    async def main() -> RAGOutput:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.retrieval.chain import RAGInput

        parsed = parse_filters(filters)
        if pipeline is not None and strategy is not None:
            raise UsageError("give either --strategy or --pipeline, not both: the pipeline "
                             "is the whole retrieval step", field="--pipeline")  # fmt: skip
        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            step = None
            if pipeline is not None:
                from unified_kg_rag.retrieval.pipeline_strategy import choose_pipeline

                components = await app.pipeline_components(index)
                step = choose_pipeline(pipeline, components, field="--pipeline", files=True)
            chain = app.chain(index, pipeline=step)
            request = RAGInput(
                question=question, strategy=strategy, filters=dict(parsed),
                conversation_id=conversation, user_id=user,
                overrides={"top_k": top_k, "search_mode": mode, "deadline_s": deadline},
            )  # fmt: skip
            async with query_steps(err_console, app.embedder, enabled=not json_out) as stop:
                if not streaming:
                    return await chain.ainvoke(request)
                final: RAGOutput | None = None
                async for piece in chain.stream(request):
                    stop()  # the answer is printed from here on
                    if isinstance(piece, RAGOutput):
                        final = piece
                    else:
                        out_console.print(escape(printable(piece, keep_newlines=True)), end="",
                                          soft_wrap=True)  # fmt: skip
            out_console.print("")
            assert final is not None
            return final

    output = run(as_query(main), verbose=verbose)
    if json_out:
        typer.echo(output.model_dump_json(indent=2))
        return
    if verbose and output.pipeline is not None:
        err_console.print(escape(pipeline_line(output.pipeline)), soft_wrap=True)
    if show_context:
        render_context(output)
    if streaming:
        render_warnings(output)
        if sources:
            _render_sources(output)
    else:
        render_answer(output, show_sources=sources)
