"""``ukr eval prepare graphrag-bench|multihop-rag|jsonl`` and ``ukr eval generate``.

`register` adds them to the ``eval`` group and its ``prepare`` subgroup (both made in
`cli.evaluate`, which calls it), so this module imports no other command module.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

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
from unified_kg_rag.cli.help_format import UkrCommand

if TYPE_CHECKING:
    from unified_kg_rag.evaluation.autoq import GenerationReport
    from unified_kg_rag.evaluation.datasets import DatasetReport

__all__ = ["register"]

ForceOpt = Annotated[
    bool, typer.Option("--force", help="Replace an existing OUT/corpus folder.")
]


def _print_report(report: DatasetReport, *, json_out: bool) -> None:
    """The ``--json`` report, or a summary and the next commands to run."""
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
        return
    where = f" ({report.documents} documents in {report.corpus_dir})" if report.corpus_dir else ""
    out_console.print(f"Wrote {report.questions} questions to {report.dataset}{where}",
                      soft_wrap=True)  # fmt: skip
    cats = ", ".join(f"{k or '(none)'} {v}" for k, v in report.by_category.items())
    out_console.print(f"Categories: {cats}; answerable {report.answerable}, "
                      f"unanswerable {report.unanswerable}", soft_wrap=True)  # fmt: skip
    if report.skipped:
        out_console.print(f"Left out {report.skipped} questions (--types / --limit / "
                          "--located-only)")
    if report.unmatched_supporting:
        out_console.print(f"{report.unmatched_supporting} supporting references name no "
                          "document of the corpus", soft_wrap=True)  # fmt: skip
    if report.format == "graphrag-bench":
        out_console.print(
            f"Evidence: {report.evidence_located} of {report.evidence_snippets} sentences "
            f"located in their document ({report.questions_fully_located} questions fully); "
            "a sentence not located is left out of `evidence` (kept under "
            "metadata.evidence_as_written)", soft_wrap=True,
        )
    corpus = report.corpus_dir or "CORPUS_DIR"
    out_console.print(f"Next: ukr index {corpus} && ukr eval {report.dataset}", soft_wrap=True)


def register(eval_app: typer.Typer, prepare_app: typer.Typer) -> None:
    """Add ``generate`` to ``eval_app`` and the converters to ``prepare_app``."""
    prepare_app.command("graphrag-bench", cls=UkrCommand)(prepare_graphrag_bench_command)
    prepare_app.command("multihop-rag", cls=UkrCommand)(prepare_multihop_rag_command)
    prepare_app.command("jsonl", cls=UkrCommand)(prepare_jsonl_command)
    eval_app.command("generate", cls=UkrCommand)(generate_command)


def prepare_graphrag_bench_command(
    corpus: Annotated[Path, typer.Argument(help="Corpus JSON: [{corpus_name, context}].")],
    questions: Annotated[
        Path,
        typer.Argument(
            help="Questions JSON: [{id, source, question, answer, question_type, evidence, "
            "evidence_triple}]."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.", file_okay=False)],
    types: Annotated[
        str | None,
        typer.Option(
            "--types",
            help='Question types to keep, comma-separated: "Fact Retrieval,Complex Reasoning". '
            "[default: all]",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Keep the first N questions only.")
    ] = None,
    min_coverage: Annotated[
        float, typer.Option("--min-coverage", min=0.0, max=1.0,
                            help="Share of an evidence sentence's content words a document "
                            "span must hold to locate it; 0 keeps the sentences as written.")
    ] = 0.75,
    located_only: Annotated[
        bool, typer.Option("--located-only", help="Keep questions with located evidence only.")
    ] = False,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """GraphRAG-Bench (novel or medical): OUT/corpus/<corpus_name>.txt and OUT/dataset.jsonl.

    Evidence sentences are restatements, so each is located in its document and the
    document's own text becomes the evidence a retrieved passage is checked for.
    """

    async def main() -> Any:
        from unified_kg_rag.evaluation.datasets import prepare_graphrag_bench

        wanted = [t.strip() for t in types.split(",") if t.strip()] if types else None
        return prepare_graphrag_bench(
            corpus, questions, out, types=wanted, limit=limit, force=force,
            min_coverage=min_coverage or None, located_only=located_only,
        )  # fmt: skip

    _print_report(run(main), json_out=json_out)


def prepare_multihop_rag_command(
    corpus: Annotated[Path, typer.Argument(help="Articles JSON: [{title, body, url, ...}].")],
    questions: Annotated[
        Path,
        typer.Argument(help="Queries JSON: [{query, answer, question_type, evidence_list}]."),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.", file_okay=False)],
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """MultiHop-RAG: OUT/corpus/NNNNN.md per article and OUT/dataset.jsonl."""

    async def main() -> Any:
        from unified_kg_rag.evaluation.datasets import prepare_multihop_rag

        return prepare_multihop_rag(corpus, questions, out, force=force)

    _print_report(run(main), json_out=json_out)


def prepare_jsonl_command(
    source: Annotated[Path, typer.Argument(help="Your questions, one JSON object per line.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The dataset file to write.", dir_okay=False)
    ],
    field_map: Annotated[
        str | None,
        typer.Option(
            "--map",
            help="Rename input fields: question=query,answers=answer (a dotted name reads a "
            "nested field).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing OUT file.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Validate your own JSON Lines and write them as a dataset (fields renamed by --map)."""

    async def main() -> Any:
        from unified_kg_rag.evaluation.datasets import parse_field_map, prepare_jsonl

        return prepare_jsonl(source, out, mapping=parse_field_map(field_map), force=force)

    _print_report(run(main), json_out=json_out)


def generate_command(
    corpus: Annotated[
        Path, typer.Argument(help="Folder of .txt and .md files.", file_okay=False)
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.", file_okay=False)],
    clusters: Annotated[int, typer.Option("--clusters", min=1, help="k-means clusters.")] = 8,
    per_class: Annotated[
        int, typer.Option("--per-class", min=1, help="Questions kept per class.")
    ] = 5,
    classes: Annotated[
        str, typer.Option("--classes", help="Question classes: local, global.")
    ] = "local,global",
    seed: Annotated[int, typer.Option("--seed", help="Seed of sampling and clustering.")] = 0,
    assertions: Annotated[
        bool, typer.Option("--assertions/--no-assertions", help="Write assertions per question.")
    ] = True,
    max_units: Annotated[
        int, typer.Option("--max-units", min=1, help="Most text units sampled.")
    ] = 400,
    unit_tokens: Annotated[
        int, typer.Option("--unit-tokens", min=20, help="About how many tokens per text unit.")
    ] = 400,
    units_per_cluster: Annotated[
        int, typer.Option("--units-per-cluster", min=1, help="Units shown per cluster.")
    ] = 5,
    max_assertions: Annotated[
        int, typer.Option("--max-assertions", min=1, help="Most assertions per question.")
    ] = 5,
    language: Annotated[
        str, typer.Option("--language", help="Language of the questions and assertions.")
    ] = "English",
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing OUT/dataset.jsonl.")
    ] = False,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Generate questions and assertions from CORPUS with the configured LLM (AutoQ-style)."""

    async def main() -> GenerationReport:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.evaluation.autoq import AutoQSettings, generate_questions
        from unified_kg_rag.util.errors import UsageError

        settings = AutoQSettings(
            clusters=clusters, per_class=per_class, classes=AutoQSettings.parse_classes(classes),
            seed=seed, assertions=assertions, max_units=max_units, unit_tokens=unit_tokens,
            units_per_cluster=units_per_cluster, max_assertions=max_assertions,
            language=language,
        )  # fmt: skip
        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        if config.llm.kind == "none":
            raise UsageError("is none; `ukr eval generate` needs an LLM (set llm.kind)",
                             field="llm.kind")  # fmt: skip
        show = not (quiet or json_out) and err_console.is_terminal
        async with build_app(config, project_dir) as app:
            if app.chat_model is None:
                raise UsageError("is none; `ukr eval generate` needs an LLM", field="llm.kind")

            def progress(step: str) -> None:
                if show:
                    err_console.print(step)

            return await generate_questions(
                corpus, out, app.chat_model, app.embedder, settings,
                force=force, on_progress=progress, prompts=app.prompts,
            )  # fmt: skip

    report = run(main, verbose=verbose)
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
        return
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items())
    out_console.print(f"Wrote {sum(report.counts.values())} questions ({counts}) to "
                      f"{report.dataset}; {len(report.dropped)} dropped (see "
                      f"{report.report_path})", soft_wrap=True)  # fmt: skip
    out_console.print(f"Model calls {report.usage.calls}, tokens in / out "
                      f"{report.usage.input_tokens} / {report.usage.output_tokens}")  # fmt: skip
    out_console.print(f"Next: ukr index {corpus} && ukr eval {report.dataset}", soft_wrap=True)
