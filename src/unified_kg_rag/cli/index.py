"""``ukr index PATH...``: index files and folders into an index of the project."""

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
    YesOpt,
    err_console,
    load,
    run,
)
from unified_kg_rag.cli.messages import (
    HandlesOpt,
    LimitOpt,
    OwnerOpt,
    SinceOpt,
    SourceOpt,
)
from unified_kg_rag.cli.progress import RichProgress
from unified_kg_rag.cli.reports import render_estimate, render_report
from unified_kg_rag.config.cluster import check_cluster_address
from unified_kg_rag.util.correlation import as_run
from unified_kg_rag.util.errors import ConfigurationError

if TYPE_CHECKING:  # the application modules load when a command runs, not for `ukr --help`
    from unified_kg_rag.config.models import UkrConfig
    from unified_kg_rag.ingestion.graph.estimate import CostEstimate
    from unified_kg_rag.ingestion.report import IndexReport

if TYPE_CHECKING:
    from unified_kg_rag.ingestion.embed_steps import KeptWork

__all__ = ["index_command", "interrupted_message", "with_cluster"]


def index_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Files and folders to index.", show_default=False)
    ],
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to write. [default: query.index]")
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Print the model calls, tokens (and cost, with prices configured) the graph "
            "build would spend, then stop: no model call, nothing written.",
        ),
    ] = False,
    force_rebuild: Annotated[
        bool,
        typer.Option(
            "--force-rebuild",
            help="Ask the LLM again for every text unit's extraction (stored records are "
            "replaced) and rebuild the graph.",
        ),
    ] = False,
    reset: Annotated[
        bool,
        typer.Option(
            "--reset",
            help="Rebuild the whole index in place: process every document again, delete text "
            "units no document names, derive the graphs again. Queries keep working; stored "
            "vectors, extraction records and cached replies are reused (an unchanged corpus "
            "costs no model call). With --force-rebuild, every extraction is asked again.",
        ),
    ] = False,
    yes: YesOpt = False,
    retry_quarantined: Annotated[
        bool,
        typer.Option(
            "--retry-quarantined",
            help="Try again the documents and text units quarantined after failing on "
            "`indexing.quarantine_after` consecutive runs (otherwise skipped until their "
            "content changes).",
        ),
    ] = False,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            help="Run the model work (embedding, LLM calls) on a Ray cluster while this "
            "process writes the index: `ray://HOST:PORT`, `HOST:PORT` or `auto` (a local "
            "cluster). Needs the `ray` extra. [default: indexing.cluster]",
            show_default=False,
        ),
    ] = None,
    source: SourceOpt = None,
    handles: HandlesOpt = None,
    owner: OwnerOpt = None,
    since: SinceOpt = None,
    message_limit: LimitOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Index files and folders: parse, chunk, embed and store them (only what changed).

    With an LLM configured, also builds the knowledge graph the selected methodologies need
    (`indexing.methodologies`): extraction, gleaning, entity resolution, communities and
    reports. Folders are walked recursively; hidden files and unsupported extensions are
    skipped. Documents of a folder whose files are gone are deleted from the index; a folder
    that is suddenly empty, or lost more than `indexing.max_delete_share` of its documents,
    stops the run before anything is written unless `--yes` is given. `--reset` rebuilds the
    whole index without taking it offline (see the incremental guide). Exit status 3 when any
    document, extraction, claim extraction (a claim call failed or was cut), report or tree
    summary failed (the others are indexed; the next run
    retries what failed). A document or text unit that failed on `indexing.quarantine_after`
    consecutive runs is quarantined: skipped by later runs (a notice, not a failure) until its
    content changes or `--retry-quarantined`.

    Message archives (an iMessage `chat.db`/`sms.db`, a JSON Lines export) are recognised by
    their content, or read with `--source`: their messages become thread-day transcripts, and
    every answer over them names the exact messages it rests on (see the message archives
    guide).
    """
    if estimate:
        options = {"source": source, "handles": handles, "owner": owner, "since": since,
                   "limit": message_limit}
        _estimate(paths, index, project, stores, config_file, json_out, verbose, options)
        return

    kept: list[KeptWork] = []

    async def main() -> IndexReport:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.ingestion.message_plan import plan_message_run

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores,
                                   create=True)
        if cluster is not None:
            config = with_cluster(config, cluster)
        messages = plan_message_run(config, project_dir, source=source, handles=handles,
                               owner=owner, since=since, limit=message_limit)
        async with build_app(config, project_dir) as app:
            await app.connect_cluster()  # off the event loop: Ctrl-C is seen meanwhile
            with RichProgress(err_console, enabled=not (quiet or json_out)) as progress:
                pipeline = app.index_pipeline(index, progress=progress,
                                              force_rebuild=force_rebuild)
                kept.append(pipeline.kept)
                return await pipeline.run(
                    paths, confirm_deletions=yes, reset=reset, messages=messages,
                    retry_quarantined=retry_quarantined,
                )

    report = run(as_run(main), verbose=verbose, interrupted=lambda: interrupted_message(kept))
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
    else:
        render_report(report)
    raise typer.Exit(report.exit_code)


def with_cluster(config: UkrConfig, cluster: str | None) -> UkrConfig:
    """Return ``config`` with ``indexing.cluster`` set to ``cluster`` (``--cluster``).

    Raises:
        ConfigurationError: ``cluster`` is not a cluster address (one line naming
            ``--cluster``); nothing has been touched yet.
    """
    if cluster is not None:
        try:
            cluster = check_cluster_address(cluster)
        except ValueError as exc:
            raise ConfigurationError(str(exc), field="--cluster") from exc
    indexing = config.indexing.model_copy(update={"cluster": cluster})
    return config.model_copy(update={"indexing": indexing})


def interrupted_message(kept: list[KeptWork]) -> str:
    """Say what an interrupted `ukr index` kept, and that the next run resumes.

    For example ``Interrupted: kept 1,024 of 4,000 text units of big.txt embedded; run the same
    command again to resume ...``.
    """
    what = kept[0].describe() if kept else "nothing new was stored"
    return (f"Interrupted: {what}; run the same command again to resume (stored vectors are "
            "reused, nothing is embedded twice).")


def _estimate(
    paths: list[Path],
    index: str | None,
    project: Path | None,
    stores: str | None,
    config_file: Path | None,
    json_out: bool,
    verbose: bool,
    options: dict[str, Any],
) -> None:
    async def main() -> CostEstimate:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.ingestion.message_plan import plan_message_run

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores,
                                   create=True)
        messages = plan_message_run(config, project_dir, **options)
        config = with_cluster(config, None)  # an estimate calls no model: no cluster
        async with build_app(config, project_dir) as app:
            pipeline = app.index_pipeline(index)
            return await pipeline.estimate(paths, messages=messages)

    est = run(main, verbose=verbose, interrupted="Interrupted.")
    if json_out:
        typer.echo(est.model_dump_json(indent=2))
    else:
        render_estimate(est)
