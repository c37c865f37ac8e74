"""``ukr eval DATASET`` (score retrieval and answers) and ``ukr eval prepare`` (convert data).

``eval`` is a group whose default command is ``run``: ``ukr eval data.jsonl`` is
``ukr eval run data.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
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
from unified_kg_rag.cli.eval_report import report_command
from unified_kg_rag.cli.help_format import UkrCommand, UkrGroup
from unified_kg_rag.util.errors import UsageError

if TYPE_CHECKING:  # loaded when the command runs
    from collections.abc import Mapping

    from unified_kg_rag.config.evaluation import ModelPrice
    from unified_kg_rag.evaluation.comparison import Comparison
    from unified_kg_rag.evaluation.dataset import EvalItem
    from unified_kg_rag.evaluation.gates import Gate
    from unified_kg_rag.evaluation.results import RunManifest

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
    "`ukr eval run --help` for its options (`--strategies`, `--repeats`, `--judge`, "
    "`--fail-if`, `--from-results`, `--retrieval-only` ...).",
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
        Path | None,
        typer.Argument(help="JSONL: question, answers, supporting ... per line (optional with "
                       "--from-results: the run's own dataset).", dir_okay=False),
    ] = None,
    strategies: Annotated[
        list[str] | None,
        typer.Option("--strategies", "--strategy", "-s",
                     help="Strategies to compare, comma-separated or repeated; the first is "
                     "the baseline. `naive:vector` pins a search mode. [default: query.strategy]"),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="Arm the others are compared with.")
    ] = None,
    repeats: Annotated[
        int, typer.Option("--repeats", min=1, help="Answers per question and strategy.")
    ] = 1,
    closed_book: Annotated[
        bool, typer.Option("--closed-book", help="Add the answer model without context.")
    ] = False,
    judge: Annotated[
        list[str] | None,
        typer.Option("--judge", help="LLM judges: correctness, pairwise, assertions "
                     "(comma-separated or repeated)."),
    ] = None,
    fail_if: Annotated[
        list[str] | None,
        typer.Option("--fail-if", help='Exit 4 when this holds, e.g. '
                     '"ppr.recall@5 < naive.recall@5 + 0.03" (repeatable).'),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", file_okay=False,
                     help="Run folder (resumed when it holds this run). "
                     "[default: .ukr/eval/<time>-<dataset>]"),
    ] = None,
    from_results: Annotated[
        Path | None,
        typer.Option("--from-results", file_okay=False,
                     help="Re-score (and with --judge re-judge) a saved run; no retrieval."),
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
    """Compare strategies on DATASET: retrieval, answers, provenance, cost, with CIs.

    Saves one row per question, strategy and repeat in the run folder, and prints each
    strategy's means and its difference from the baseline with a paired bootstrap interval.
    Exit 4 when a --fail-if gate holds.
    """
    arms = _split(strategies)
    judges = _split(judge)

    async def main() -> tuple[Comparison, Path]:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.evaluation.compare import RunRequest, rescore, run_comparison
        from unified_kg_rag.evaluation.dataset import load_dataset
        from unified_kg_rag.evaluation.gates import check_gates, parse_gate
        from unified_kg_rag.evaluation.scoring import arm_metrics

        gates = [parse_gate(g) for g in fail_if or []]
        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            if from_results is not None:
                ignored = [name for name, value in (
                    ("--strategies", arms), ("--baseline", baseline), ("--repeats", repeats != 1),
                    ("--closed-book", closed_book), ("--out", out), ("--mode", mode),
                    ("--index", index), ("--limit", limit), ("--retrieval-only", retrieval_only),
                ) if value]  # fmt: skip
                if ignored:
                    raise UsageError(f"--from-results re-scores the saved run as it ran; drop "
                                     f"{', '.join(ignored)}", field="--from-results")  # fmt: skip
                manifest, items = _saved_run(from_results, dataset)
                wanted = set(manifest.questions)
                items = [i for i in items if i.id in wanted]
                check_gates(gates, manifest.arms, {
                    a: arm_metrics(a, baseline=manifest.baseline,
                                   retrieval_only=manifest.retrieval_only,
                                   judges=[*manifest.judges, *judges])
                    for a in manifest.arms}, manifest.baseline)  # fmt: skip
                _check_money(gates, manifest.answer_model, config.evaluation.prices)
                comp = await rescore(app, from_results, items, judges=judges, gates=gates)
                return comp, from_results
            if dataset is None:
                raise UsageError("name a DATASET (or --from-results RUN_DIR)", field="DATASET")
            if strategies is not None and not arms:
                raise UsageError("names no strategy", field="--strategies")
            if "closed_book" in arms:
                raise UsageError("closed_book is not a strategy; add that arm with "
                                 "--closed-book", field="--strategies")  # fmt: skip
            items = load_dataset(dataset)[:limit]
            chosen = arms or [config.query.strategy]
            named = [*chosen, *(["closed_book"] if closed_book else [])]
            base = baseline or named[0]
            check_gates(gates, named, {
                a: arm_metrics(a, baseline=base, retrieval_only=retrieval_only, judges=judges)
                for a in named}, base)  # fmt: skip
            answer = app.model_for("answer")
            _check_money(gates, answer.model_id if answer is not None else None,
                         config.evaluation.prices)  # fmt: skip
            run_dir = out or _default_run_dir(project_dir, dataset)
            show = not (quiet or json_out) and err_console.is_terminal

            def progress(arm: str, done: int, total: int) -> None:
                if show:
                    err_console.print(f"\r{arm}: {done}/{total} questions   ", end="")

            req = RunRequest(
                dataset=dataset, items=items, arms=chosen, run_dir=run_dir, repeats=repeats,
                baseline=baseline, closed_book=closed_book, retrieval_only=retrieval_only,
                search_mode=mode or config.query.search_mode, top_k=config.query.top_k,
                index=index, judges=judges,
                gates=gates,
            )  # fmt: skip
            comp = await run_comparison(app, req, on_progress=progress)
            if show:
                err_console.print()
            return comp, run_dir

    comp, run_dir = run(main, verbose=verbose)
    if json_out:
        typer.echo(json.dumps({"run_dir": str(run_dir), **comp.model_dump(mode="json")},
                              indent=2))  # fmt: skip
    else:
        print_comparison(comp, run_dir)
    if any(g.violated for g in comp.gates):
        raise typer.Exit(4)


def _saved_run(run_dir: Path, dataset: Path | None) -> tuple[RunManifest, list[EvalItem]]:
    """The manifest of a saved run and the questions of its dataset (``--from-results``).

    Warns when ``dataset`` is not the file the run answered (its SHA-256 differs).

    Raises:
        UsageError: ``run_dir`` holds no run, or the run's dataset is gone and none is named.
    """
    from unified_kg_rag.evaluation.dataset import load_dataset
    from unified_kg_rag.evaluation.results import read_manifest

    manifest = read_manifest(run_dir)
    if dataset is None and not Path(manifest.dataset).is_file():
        raise UsageError(f"the run's dataset {manifest.dataset} is not there; name it: "
                         f"ukr eval DATASET --from-results {run_dir}", field="DATASET")  # fmt: skip
    source = dataset or Path(manifest.dataset)
    items = load_dataset(source)
    if hashlib.sha256(source.read_bytes()).hexdigest() != manifest.dataset_sha256:
        err_console.print(f"warning: {escape(str(source))} is not the dataset the run answered "
                          "(its SHA-256 differs): scores use its questions and references as "
                          "they are now", soft_wrap=True)  # fmt: skip
    return manifest, items


def _check_money(gates: list[Gate], answer_model: str | None,
                 prices: Mapping[str, ModelPrice]) -> None:  # fmt: skip
    """Refuse a gate reading ``cost/money`` when no price applies to the answer model.

    Without a price the metric has no value, and the gate would fail closed after the run.

    Raises:
        UsageError: (field ``--fail-if``) such a gate.
    """
    from unified_kg_rag.evaluation.scoring import price_for

    if price_for(prices, answer_model) is not None:
        return
    for g in gates:
        if any(metric == "cost/money" for _, metric in g.references()):
            model = answer_model or "(none: llm.kind is none)"
            raise UsageError(f'"{g.expression}" reads cost/money, but evaluation.prices has '
                             f"no price for the answer model {model}",
                             field="--fail-if")  # fmt: skip


def _split(values: list[str] | None) -> list[str]:
    """``["a,b", "c"]`` → ``["a", "b", "c"]`` (order kept, duplicates and blanks dropped)."""
    parts = [p.strip() for v in values or [] for p in v.split(",")]
    return list(dict.fromkeys(p for p in parts if p))


def _default_run_dir(project_dir: Path, dataset: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", dataset.stem)[:40] or "dataset"
    return project_dir / ".ukr" / "eval" / f"{stamp}-{stem}"


_MAIN = ("recall@2", "recall@5", "recall@10", "recall_in_context", "mrr", "ndcg@10",
         "graph_recall", "answer_in_context", "em", "f1", "answer_contains",
         "judge/correctness", "assertion/recall", "assertion/contradiction_rate",
         "pairwise/comprehensiveness", "pairwise/diversity", "pairwise/empowerment",
         "pairwise/directness", "abstained", "abstention/recall", "message_recall")  # fmt: skip
_DELTAS = ("recall@5", "recall@10", "mrr", "em", "f1", "answer_contains",
           "judge/correctness", "assertion/recall", "pairwise/comprehensiveness",
           "abstention/recall", "message_recall")  # fmt: skip


def print_comparison(comp: Comparison, run_dir: Path) -> None:
    """Print each arm's means (one column per arm), the differences and the gates."""
    present = [m for m in _MAIN if any(m in a.metrics for a in comp.arms)]
    n = max((a.questions for a in comp.arms), default=0)
    table = Table(title=f"{n} questions (means; run folder {escape(run_dir.name)})", box=None)
    table.add_column("metric", no_wrap=True)
    for a in comp.arms:
        table.add_column(escape(a.arm + (" (no retrieval)" if a.closed_book else "")),
                         justify="right")  # fmt: skip
    for m in present:
        table.add_row(m, *(f"{a.metrics[m].mean:.3f}" if m in a.metrics else "n/a"
                           for a in comp.arms))  # fmt: skip
    table.add_row("latency p50 / p95 (ms)", *(
        f"{a.cost.latency_ms_p50:.0f} / {a.cost.latency_ms_p95:.0f}" for a in comp.arms))
    table.add_row("LLM calls / cache hits", *(
        f"{a.cost.calls} / {a.cost.cache_hits}" for a in comp.arms))
    table.add_row("tokens in / out", *(
        f"{a.cost.input_tokens} / {a.cost.output_tokens}" for a in comp.arms))
    if any(a.cost.money is not None for a in comp.arms):
        table.add_row("money", *("n/a" if a.cost.money is None else f"{a.cost.money:.4f}"
                                 for a in comp.arms))  # fmt: skip
    table.add_row("failed answers", *(str(a.failed) for a in comp.arms))
    out_console.print(table)
    level = round(comp.stats.confidence * 100)
    shown = [d for d in comp.deltas if d.metric in _DELTAS or d.metric.startswith("cost/money")]
    if shown:
        deltas = Table(title=f"difference from {escape(comp.baseline)} ({level}% paired "
                       "bootstrap CI)", box=None)  # fmt: skip
        for col in ("strategy", "metric", "difference", "CI", "n", ""):
            deltas.add_column(col, justify="left" if col in ("strategy", "metric") else "right")
        for d in shown:
            mark = {True: "better", False: "worse", None: ""}[d.better]
            deltas.add_row(escape(d.arm), d.metric, f"{d.estimate:+.3f}",
                           f"{d.low:+.3f} to {d.high:+.3f}", str(d.n), mark)  # fmt: skip
        out_console.print(deltas)
    for a in comp.arms:
        if a.failed:
            out_console.print(f"{escape(a.arm)}: {a.failed} of {a.rows} answers failed"
                              + (f", e.g. {escape(a.errors[0])}" if a.errors else ""),
                              soft_wrap=True)  # fmt: skip
    for judge, n in sorted(comp.judge_failures.items()):
        out_console.print(f"judge {escape(judge)}: {n} verdict{'' if n == 1 else 's'} failed "
                          f"(reasons in {escape(str(run_dir / 'judgements.jsonl'))})",
                          soft_wrap=True)  # fmt: skip
    for w in comp.warnings:
        err_console.print(f"warning: {escape(w)}", soft_wrap=True)
    for g in comp.gates:
        status = "FAILED" if g.violated else "ok"
        out_console.print(f"gate {status}: {escape(g.expression)}"
                          + (f" ({escape(g.reason)})" if g.reason else ""), soft_wrap=True)
    if comp.arms and all(a.failed == a.rows for a in comp.arms):
        out_console.print("scores: n/a, every answer failed", soft_wrap=True)
    elif not any(m.startswith("recall@") for m in present):
        out_console.print("recall: n/a, no question of the dataset names its `supporting` "
                          "passages or `evidence`", soft_wrap=True)
    out_console.print(f"Saved to {escape(str(run_dir))}; report: ukr eval report "
                      f"{escape(str(run_dir))}", soft_wrap=True)


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
eval_app.command("report", cls=UkrCommand)(report_command)
