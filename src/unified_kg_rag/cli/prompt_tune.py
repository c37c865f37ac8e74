"""``ukr prompt-tune``: domain-adapted prompts and a draft schema from a corpus sample."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.markup import escape

from unified_kg_rag.cli.common import (
    ConfigOpt,
    ProjectOpt,
    VerboseOpt,
    err_console,
    load,
    out_console,
    run,
)
from unified_kg_rag.ingestion.prompt_tune import TuneResult

__all__ = ["prompt_tune_command"]


def _shown(path: Path, project_dir: Path) -> str:
    absolute = path.resolve()
    try:
        return absolute.relative_to(project_dir).as_posix()
    except ValueError:
        return str(absolute)


def prompt_tune_command(
    corpus: Annotated[
        list[Path], typer.Argument(help="Files and folders to profile.", show_default=False)
    ],
    out: Annotated[
        Path, typer.Option("--out", help="Folder the adapted prompt files go to.")
    ] = Path("prompts"),
    schema_out: Annotated[
        Path | None,
        typer.Option("--schema-out", help="Also write a draft extraction schema (YAML) here."),
    ] = None,
    sample: Annotated[
        int, typer.Option("--sample", min=1, help="Text units shown to the LLM.")
    ] = 15,
    language: Annotated[
        str | None,
        typer.Option("--language", help="Language of descriptions and reports. "
                     "[default: the one the LLM reads in the sample]"),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace prompt or schema files that exist.")
    ] = False,
    project: ProjectOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Profile a sample of CORPUS with the LLM; write domain-adapted prompt overrides.

    Reads the corpus as `ukr index` does, shows an evenly spread sample of its text units to
    the configured LLM (one call) and writes `extract_graph.md`, `extract_graph_schema.md`
    and `community_report.md` into `--out` (with `--schema-out`, a draft schema too). Prints
    the configuration lines that put them in effect. Relative `--out`/`--schema-out` are read
    from the current directory. A file that exists (an override of the same prompt under
    either name too) is refused, writing nothing, unless `--force`.
    """
    out_dir = Path(os.path.abspath(out))
    schema_file = Path(os.path.abspath(schema_out)) if schema_out else None

    async def main() -> tuple[TuneResult, Path]:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.ingestion.prompt_tune import tune_prompts

        project_dir, config = load(project, config_file, verbose=verbose)
        async with build_app(config, project_dir) as app:
            result = await tune_prompts(
                corpus, config=app.config, chat=app.model_for("extraction"),
                tokenizer=app.chunk_tokenizer, parsers=app.parsers, prompts=app.prompts,
                out_dir=out_dir, schema_out=schema_file,
                sample=sample, language=language, force=force,
            )  # fmt: skip
        return result, project_dir

    result, project_dir = run(main, verbose=verbose)
    for line in result.skipped:
        err_console.print(f"skipped {escape(line)}", soft_wrap=True)
    profile = result.profile
    for line in profile.warnings:
        err_console.print(f"warning: {escape(line)}", soft_wrap=True)
    err_console.print(
        f"Profiled {result.sampled} of {result.units} text units ({result.documents} "
        f"documents): {escape(profile.domain)} ({escape(profile.language)}); "
        f"{len(profile.entity_types)} entity types, {len(profile.relationship_types)} "
        "relationship types.", soft_wrap=True,
    )  # fmt: skip
    for path in result.written:
        err_console.print(f"wrote {escape(_shown(path, project_dir))}", soft_wrap=True)
    settings: dict[str, object] = {
        "prompts": {"dir": _shown(out_dir, project_dir)},
        "graph": {"extraction": {"entity_types": [t.name for t in profile.entity_types]}},
    }
    out_console.print("# add to ukr.yaml:", markup=False)
    out_console.print(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True,
                                     default_flow_style=None).rstrip(), markup=False)  # fmt: skip
