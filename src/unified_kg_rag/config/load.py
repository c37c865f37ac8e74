r"""Loading the configuration: ``ukr.yaml`` in the project directory plus ``UKR_`` variables.

Called once at the edge (CLI, service, or a library user's own code); the resulting frozen
`UkrConfig` is passed down and never mutated.

Every text setting must be valid Unicode: a lone surrogate (a ``\ud83d`` escape in YAML, a
byte that is not UTF-8 in a ``UKR_`` variable, which Python decodes to one) cannot be stored,
printed or sent, so it fails here with the field named, not later in the run. Settings that
name files (``path``, ``*_file``, ``*_path``, ``*_dir``) are exempt: a file name may be any
bytes the file system allows, and Python passes them back to it unchanged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_settings import SettingsError

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.text.decoding import has_surrogates
from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["CONFIG_FILE_NAME", "load_config", "read_yaml_file", "state_dir"]

CONFIG_FILE_NAME = "ukr.yaml"
STATE_DIR_NAME = ".ukr"


def state_dir(project_dir: Path) -> Path:
    """Return the directory holding a project's stores (``PROJECT/.ukr``)."""
    return project_dir / STATE_DIR_NAME


def read_yaml_file(path: Path, *, what: str = "a mapping of sections") -> dict[str, object]:
    """Read a YAML file whose top level is a mapping (``ukr.yaml``, a pipeline definition).

    Args:
        path: the file.
        what: what the top level must be, for the message.

    Returns:
        The mapping (empty for an empty file).

    Raises:
        ConfigurationError: naming the file: unreadable, not UTF-8, invalid YAML (with its
            line), or not a mapping.
    """
    return _read_yaml(path, what)


def _read_yaml(path: Path, what: str = "a mapping of sections") -> dict[str, object]:
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read: {exc.strerror}", source=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError("not UTF-8 text", source=str(path)) from exc
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigurationError(f"{where}{problem}", source=str(path)) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"the top level must be {what}", source=str(path))
    return {str(k): v for k, v in data.items()}


_INVALID_UNICODE = (
    "holds text that is not valid Unicode (a byte that is not UTF-8, or a lone surrogate "
    "escape such as \\ud83d); write it as UTF-8 text"
)
_PATH_SUFFIXES = ("_file", "_path", "_dir")


def _env_name(loc: tuple[int | str, ...]) -> str:
    return "UKR_" + "__".join(str(p).upper() for p in loc)


def _origin(loc: tuple[int | str, ...], source: str) -> str:
    """The environment variable that set ``loc`` (or a section above it), else ``source``."""
    present = {k.lower(): k for k in os.environ}
    for end in range(len(loc), 0, -1):
        name = present.get(_env_name(loc[:end]).lower())
        if name is not None:
            return name
    return source


def _invalid_unicode(value: object, loc: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The location of the first text setting holding a surrogate, else None.

    Settings naming files are skipped (see the module docstring).
    """
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            if name == "path" or name.endswith(_PATH_SUFFIXES):
                continue
            found = _invalid_unicode(getattr(value, name), (*loc, name))
            if found is not None:
                return found
        return None
    if isinstance(value, str):
        return loc if has_surrogates(value) else None
    if isinstance(value, Mapping):
        items = [(str(k), k, v) for k, v in value.items()]
    elif isinstance(value, list | tuple | set | frozenset):
        items = [(str(i), None, v) for i, v in enumerate(value)]
    else:
        return None
    for name, key, item in items:
        if isinstance(key, str) and has_surrogates(key):
            return (*loc, name)
        found = _invalid_unicode(item, (*loc, name))
        if found is not None:
            return found
    return None


def load_config(
    project_dir: Path | None = None,
    *,
    config_file: Path | None = None,
    overrides: Mapping[str, object] | None = None,
) -> UkrConfig:
    """Load the effective configuration of a project.

    Args:
        project_dir: the project directory; its ``ukr.yaml`` is read when present.
        config_file: an explicit YAML file (must exist); wins over ``project_dir/ukr.yaml``.
        overrides: section values applied over the file (below the environment), as nested
            mappings; for library callers.

    Returns:
        The validated, frozen configuration.

    Raises:
        ConfigurationError: the file cannot be read or parsed, or a value is invalid (text
            that is not valid Unicode included). The message names the file or environment
            variable and the dotted field path.
    """
    source = "defaults"
    data: dict[str, object] = {}
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigurationError("config file does not exist", source=str(config_file))
        data = _read_yaml(config_file)
        source = str(config_file)
    elif project_dir is not None and (project_dir / CONFIG_FILE_NAME).is_file():
        path = project_dir / CONFIG_FILE_NAME
        data = _read_yaml(path)
        source = str(path)
    if overrides:
        data = _deep_merge(data, overrides)
    try:
        config = UkrConfig(**data)  # type: ignore[arg-type]
    except SettingsError as exc:
        # pydantic-settings could not decode an environment variable (lists and mappings
        # must be JSON); name the variables of that section
        match = re.search(r'field "(\w+)"', str(exc))
        section = match.group(1) if match else ""
        names = sorted(k for k in os.environ if k.upper().startswith(f"UKR_{section.upper()}__"))
        raise ConfigurationError(
            "cannot parse the value; list and mapping values must be JSON, e.g. "
            "UKR_PARSING__EXCLUDE='[\"*.tmp\"]'",
            field=section or None,
            source=", ".join(names) or "environment",
        ) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        field = ".".join(str(p) for p in loc)
        env_name = _env_name(loc)
        origin = env_name if env_name.lower() in {k.lower() for k in os.environ} else source
        extra = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        message = _INVALID_UNICODE if first["type"] == "string_unicode" else first["msg"]
        raise ConfigurationError(f"{message}{extra}", field=field, source=origin) from exc
    bad = _invalid_unicode(config)
    if bad is not None:
        raise ConfigurationError(_INVALID_UNICODE, field=".".join(bad),
                                 source=_origin(bad, source))
    return config


def _deep_merge(base: Mapping[str, object], top: Mapping[str, object]) -> dict[str, object]:
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            out[key] = _deep_merge(below, value)
        else:
            out[key] = value
    return out
