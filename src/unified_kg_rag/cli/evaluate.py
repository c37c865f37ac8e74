"""``ukr eval DATASET`` (score retrieval and answers) and ``ukr eval prepare`` (convert data).

``eval`` is a group whose default command is ``run``: ``ukr eval data.jsonl`` is
``ukr eval run data.jsonl``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    QuietOpt,
    StoresOpt,
    VerboseOpt,
    err_console,
    load,
    out_console,
    run,
)
from unified_kg_rag.cli.eval_prepare import register as register_prepare_commands
from unified_kg_rag.cli.help_format import UkrCommand, UkrGroup

if TYPE_CHECKING:  # loaded when the command runs
    from unified_kg_rag.evaluation.runner import EvalReport

__all__ = ["eval_app"]


class _DefaultRunGroup(UkrGroup):
    """A group that runs ``run`` when the first argument is not a subcommand."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored Context
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS] DATASET | COMMAND [ARGS]...``: the form the README uses comes first."""
        return ["[OPTIONS]", "DATASET", "|", "COMMAND", "[ARGS]..."]


eval_app = typer.Typer(
    cls=_DefaultRunGroup,
    help="Evaluate retrieval and answers on a question set.\n\n"
    "`ukr eval DATASET.jsonl [OPTIONS]` is short for `ukr eval run DATASET.jsonl`: see "
    "`ukr eval run --help` for its options (`--strategy`, `--mode`, `--limit`, "
    "`--retrieval-only` ...).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
prepare_app = typer.Typer(
    help="Convert public QA data into a dataset and a corpus folder.", rich_markup_mode="markdown",
    cls=UkrGroup,
)
eval_app.add_typer(prepare_app, name="prepare")


@eval_app.command("run", cls=UkrCommand)
def eval_run_command(
    dataset: Annotated[
        Path, typer.Argument(help="JSONL: question, answers, supporting per line.", dir_okay=False)
    ],
    strategy: Annotated[
        str | None, typer.Option("--strategy", "-s", help="Strategy. [default: query.strategy]")
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option("--mode", help="hybrid, vector or lexical. [default: query.search_mode]"),
    ] = None,
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to query. [default: query.index]")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Evaluate the first N questions only.")
    ] = None,
    retrieval_only: Annotated[
        bool, typer.Option("--retrieval-only", help="Skip the answer step.")
    ] = False,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Score recall@2/5/10, answer-in-context, latency and model usage on DATASET."""

    async def main() -> EvalReport:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.evaluation.dataset import load_dataset
        from unified_kg_rag.evaluation.runner import evaluate

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        items = load_dataset(dataset)[:limit]
        async with build_app(config, project_dir) as app:
            chain = app.chain(index)
            show = not (quiet or json_out) and err_console.is_terminal

            def progress(done: int) -> None:
                if show:
                    err_console.print(f"\r{done}/{len(items)} questions", end="")

            report = await evaluate(
                chain,
                items,
                retrieval_only=retrieval_only,
                strategy=strategy,
                search_mode=mode or config.query.search_mode,
                on_progress=progress,
            )
            if show:
                err_console.print()
            report.index = app.index(index).name
            return report

    report = run(main, verbose=verbose)
    if json_out:
        typer.echo(report.model_dump_json(by_alias=True, indent=2, exclude={"questions"}))
        return
    table = Table(title=f"{report.n_questions} questions, strategy {report.strategy}", box=None)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any]] = [
        ("recall@2", _share(report.recall_at_2)),
        ("recall@5", _share(report.recall_at_5)),
        ("recall@10", _share(report.recall_at_10)),
        ("recall anywhere in context", _share(report.recall_in_context)),
        ("context tokens (mean)", f"{report.context_tokens_mean:.0f}"),
        ("answer in context", f"{report.answer_in_context:.3f}"),
    ]
    if report.answer_match is not None:
        rows.append(("gold answer in answer", f"{report.answer_match:.3f}"))
    rows += [
        ("latency p50 (ms)", f"{report.latency_ms_p50:.1f}"),
        ("latency p95 (ms)", f"{report.latency_ms_p95:.1f}"),
        ("retrieval without model time p50 / p95 (ms)",
         f"{report.retrieval_ms_p50:.1f} / {report.retrieval_ms_p95:.1f}"),
        ("LLM calls / cache hits", f"{report.usage.calls} / {report.usage.cache_hits}"),
        ("tokens in / out", f"{report.usage.input_tokens} / {report.usage.output_tokens}"),
        ("texts embedded", str(report.usage.embedded_texts)),
    ]
    for name, value in rows:
        table.add_row(name, value)
    out_console.print(table)
    if report.n_with_supporting == 0:
        out_console.print("recall: n/a, no question of the dataset names its `supporting` "
                          "passages", soft_wrap=True)


def _share(value: float | None) -> str:
    """``0.750``, or ``n/a`` for a metric the dataset cannot measure."""
    return "n/a" if value is None else f"{value:.3f}"


@prepare_app.command("hipporag", cls=UkrCommand)
def prepare_hipporag_command(
    questions: Annotated[Path, typer.Argument(help="Questions JSON (MuSiQue/HippoRAG format).")],
    corpus: Annotated[Path, typer.Argument(help="Corpus JSON: a list of {title, text}.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.", file_okay=False)],
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing OUT/corpus folder.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write OUT/dataset.jsonl and OUT/corpus/ (one Markdown file per passage)."""

    async def main() -> Any:
        from unified_kg_rag.evaluation.prepare import prepare_hipporag

        return prepare_hipporag(questions, corpus, out, force=force)

    report = run(main)
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
        return
    out_console.print(
        f"Wrote {report.passages} passages to {report.corpus_dir} and {report.questions} "
        f"questions to {report.dataset}"
        + (
            f" ({report.unmatched_supporting} supporting passages not found in the corpus)"
            if report.unmatched_supporting
            else ""
        )
    )
    out_console.print(f"Next: ukr index {report.corpus_dir} && ukr eval {report.dataset}")


register_prepare_commands(eval_app, prepare_app)  # graphrag-bench, multihop-rag, jsonl, generate
