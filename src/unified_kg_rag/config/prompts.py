"""The ``prompts`` section: override files for the packaged prompt templates, and their reading.

`load_prompt_library` turns the section (and the per-prompt fields
``graph.extraction.prompt_file``, ``graph.extraction.gleaning_prompt_file``,
``graph.reports.prompt_file`` and ``graph.claims.prompt_file``) into the `PromptLibrary` the
app hands to every call site. Each override is read and its placeholders checked there, so a
bad file stops the app at start with a one-line error naming the file. Source: seed 000 §11.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.util.errors import ConfigurationError

if TYPE_CHECKING:
    from unified_kg_rag.config.models import UkrConfig

__all__ = [
    "LEGACY_PROMPT_FIELDS",
    "PromptsConfig",
    "ignored_in_prompts_dir",
    "load_prompt_library",
    "read_prompt_file",
]

LEGACY_PROMPT_FIELDS = {
    "graph.extraction.prompt_file": "extract_graph.v1",
    "graph.extraction.gleaning_prompt_file": "glean_graph.v1",
    "graph.reports.prompt_file": "community_report.v1",
    "graph.claims.prompt_file": "extract_claims.v1",
}
"""Older per-prompt fields → the prompt each overrides (same effect as ``prompts.files``)."""


class PromptsConfig(BaseModel):
    """Override files for the packaged prompts (`ukr prompts list` shows what is in effect)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dir: str | None = Field(
        default=None,
        description="A folder (relative to the project directory) where `NAME.md` replaces "
        "the packaged prompt NAME; NAME with its version (`extract_graph.v1.md`) or without "
        "it (`extract_graph.md`: the current version). Every other `.md` file there must name "
        "a prompt (dotfiles and `README*.md` are skipped; the `.md` is lower case). "
        "`ukr prompt-tune --out DIR` writes such a folder.",
    )
    files: dict[str, str] = Field(
        default_factory=dict,
        description="Prompt name → file replacing it (relative to the project directory); "
        "wins over `prompts.dir`. Placeholders are checked at start: each `{name}` the "
        "packaged prompt fills must be there (settings such as `{entity_types}` or "
        "`{language}` may be left out), and no other; write `{{` and `}}` for literal braces.",
    )


def read_prompt_file(path: Path, shown: str) -> str:
    """Return the UTF-8 text of the prompt file at ``path`` (``shown`` names it in errors).

    A UTF-8 byte-order mark at the start is dropped (so a first line ``=== user ===`` splits).

    Raises:
        ConfigurationError: ``SHOWN: cannot read prompt file (...)``: missing, unreadable or
            not UTF-8.
    """
    try:
        return path.read_text(encoding="utf-8-sig")  # a leading byte-order mark is dropped
    except IsADirectoryError:
        raise ConfigurationError("prompt file is a folder", source=shown) from None
    except FileNotFoundError:
        raise ConfigurationError("prompt file not found", source=shown) from None
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"prompt file is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
            f"{exc.start})",
            source=shown,
        ) from None
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read prompt file ({exc.strerror or exc})", source=shown
        ) from None


def _resolved(project_dir: Path | None, file: str) -> Path:
    """Return the path of a configured file: ``~`` expanded, relative to ``project_dir``."""
    path = Path(file).expanduser()
    if not path.is_absolute() and project_dir is not None:
        path = project_dir / path
    return path


def ignored_in_prompts_dir(name: str) -> bool:
    """Return whether a file of ``prompts.dir`` is not an override (a dotfile, ``README*.md``)."""
    return name.startswith(".") or name.upper().startswith("README")


def _dir_files(project_dir: Path | None, folder: str, library: PromptLibrary) -> dict[str, str]:
    root = Path(folder)
    path = _resolved(project_dir, folder)
    if not path.exists():
        raise ConfigurationError(f"folder {folder} does not exist", field="prompts.dir")
    if not path.is_dir():
        raise ConfigurationError(f"{folder} is not a folder", field="prompts.dir")
    found: dict[str, str] = {}
    for file in sorted(path.glob("*.md")):
        if ignored_in_prompts_dir(file.name):
            continue
        shown = str(root / file.name)
        try:
            canonical = library.resolve(file.stem)
        except ConfigurationError as exc:
            raise ConfigurationError(exc.message, source=shown) from None
        if canonical in found:
            raise ConfigurationError(
                f"{found[canonical]} overrides the same prompt ({canonical}); keep one",
                source=shown,
            )
        found[canonical] = shown
    return found


def load_prompt_library(config: UkrConfig, project_dir: Path | None) -> PromptLibrary:
    """Return the prompts in effect for ``config``: the packaged ones with every override.

    Precedence, lowest first: packaged, ``prompts.dir``, ``prompts.files`` and the older
    per-prompt fields (one prompt set both ways is an error). ``~`` is expanded; relative
    paths are read from ``project_dir`` (the working directory when None).

    Raises:
        ConfigurationError: one line naming the file: not found, not UTF-8, not a prompt's
            name, a missing required placeholder or an unknown one.
    """
    library = PACKAGED
    chosen: dict[str, tuple[str, str]] = {}  # canonical → (path as written, setting)
    if config.prompts.dir is not None:
        for canonical, shown in _dir_files(project_dir, config.prompts.dir, library).items():
            chosen[canonical] = (shown, "prompts.dir")
    explicit: dict[str, tuple[str, str]] = {}
    for name, file in config.prompts.files.items():
        try:
            canonical = library.resolve(name)
        except ConfigurationError as exc:
            raise ConfigurationError(exc.message, field=f"prompts.files.{name}") from None
        if canonical in explicit:
            raise ConfigurationError(
                f"{explicit[canonical][1]} overrides the same prompt ({canonical}); keep one",
                field=f"prompts.files.{name}",
            )
        explicit[canonical] = (file, f"prompts.files.{name}")
    for field, name in LEGACY_PROMPT_FIELDS.items():
        section, _, attr = field.rpartition(".")
        owner: object = config
        for part in section.split("."):
            owner = getattr(owner, part)
        file = getattr(owner, attr)
        if file is None:
            continue
        if name in explicit and (_resolved(project_dir, explicit[name][0])
                                 != _resolved(project_dir, file)):  # fmt: skip
            raise ConfigurationError(
                f"{explicit[name][1]} also overrides {name}; set one of them", field=field
            )
        explicit[name] = (file, field)
    chosen.update(explicit)
    for canonical, (shown, setting) in sorted(chosen.items()):
        path = _resolved(project_dir, shown)
        try:
            text = read_prompt_file(path, shown)
        except ConfigurationError as exc:  # name the setting that points at the file too
            raise ConfigurationError(f"{exc} (set by {setting})") from None
        library = library.with_override(canonical, text, shown)
    return library
