"""``ukr config show``: the effective configuration, secrets masked."""

from __future__ import annotations

import json

import typer
import yaml

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    StoresOpt,
    VerboseOpt,
    load,
)
from unified_kg_rag.cli.help_format import UkrCommand, UkrGroup
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.llm.roles import ROLES
from unified_kg_rag.util.errors import UkrError

__all__ = ["config_app"]

config_app = typer.Typer(
    help="Inspect the configuration.", no_args_is_help=True, rich_markup_mode="markdown",
    cls=UkrGroup,
)


@config_app.command("show", cls=UkrCommand)
def show_command(
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Print the effective configuration (defaults < ukr.yaml < UKR_ variables), secrets masked.

    The text form ends with a comment naming the model that serves each role (`llm.roles`).
    """
    from unified_kg_rag.cli.common import err_console

    try:
        _, config = load(project, config_file, verbose=verbose, stores=stores)
    except UkrError as exc:
        err_console.print(f"{type(exc).__name__}: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    data = config.model_dump(mode="json")
    if json_out:
        typer.echo(json.dumps(data, indent=2))
    else:
        typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())
        typer.echo(_role_comment(config))


def _role_comment(config: UkrConfig) -> str:
    """A YAML comment naming the model that serves each role (``llm.roles``) and its server."""
    lines = ["# models per role (llm.roles):"]
    for role in ROLES:
        source, choice = config.llm.serving(role)
        # the effective model: a tier's left-out provider settings are the top-level ones
        model = config.llm if choice is None else config.llm.section_for(choice)
        label = model.label + (f" at {model.openai.base_url}" if model.kind == "openai" else "")
        lines.append(f"#   {role}: {label}" + ("" if source == "default" else f" ({source})"))
    if config.evaluation.judge.kind != "none":
        lines.append(f"#   judge: {config.evaluation.judge.label} (evaluation.judge wins)")
    return "\n".join(lines)
