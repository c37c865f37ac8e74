"""``ukr status``: what each index of the project holds."""

from __future__ import annotations

import time

import typer
from pydantic import BaseModel, Field
from rich.table import Table

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
from unified_kg_rag.domain.models import IndexInfo

__all__ = ["StatusReport", "status_command"]


class StatusReport(BaseModel):
    """The project's store location and its indexes."""

    project_dir: str
    store: str
    indexes: list[IndexInfo] = Field(default_factory=list)


def status_command(
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Show each index: documents by status, stored items, embedding model."""

    async def main() -> StatusReport:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.ingestion.status import describe_index

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            names = await app.backend.list_indexes()
            infos = [await describe_index(app.index(n)) for n in names]
            return StatusReport(
                project_dir=str(project_dir), store=app.backend.location, indexes=infos
            )

    report = run(main, verbose=verbose)
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
        return
    out_console.print(f"project: {report.project_dir}\nstore:   {report.store}")
    if not report.indexes:
        out_console.print("No index yet. Run `ukr index PATH` to create one.")
        return
    for info in report.indexes:
        table = Table(title=f"index '{info.name}'", show_header=False, box=None)
        docs = ", ".join(f"{k} {v}" for k, v in sorted(info.documents.items())) or "none"
        table.add_row("documents", docs)
        for kind, n in sorted(info.counts.items()):
            if n:
                table.add_row(kind.replace("_", " "), str(n))
        if info.embedding_model:
            table.add_row("embeddings", f"{info.embedding_model} (d={info.embedding_dimension})")
        table.add_row("methodologies", ", ".join(info.methodologies) or "text units only")
        if info.writer is not None:
            left = info.writer.expires_at - time.time()
            state = f"lease lapses in {left:.0f} s" if left > 0 else "lease lapsed"
            table.add_row("writer", f"{printable(info.writer.holder)} ({state})")
        out_console.print(table)
