"""Import the modules that register a user's own pipeline stages and scorers.

``query.pipeline_modules`` names them: a dotted module name importable from ``sys.path``
(``mypkg.stages``), or a ``.py`` file, relative to the project folder (``stages.py``). Each is
imported once per process, before a pipeline definition is read, so the stages and scorers it
registers in `PIPELINE_STAGES` / `PIPELINE_SCORERS` can be named there (issue #22).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["load_pipeline_modules"]

_FIELD = "query.pipeline_modules"


def load_pipeline_modules(names: Sequence[str], base_dir: Path) -> None:
    """Import each of ``names`` (once per process).

    Args:
        names: dotted module names, or paths of ``.py`` files.
        base_dir: the folder a relative file path is read from (the project folder).

    Raises:
        ConfigurationError: one line naming ``query.pipeline_modules.N``: a file that does
            not exist, a module that cannot be found, or one whose import failed (its error
            given).
    """
    for i, name in enumerate(names):
        field = f"{_FIELD}.{i}"
        try:
            if name.endswith(".py"):
                _load_file(Path(name) if Path(name).is_absolute() else base_dir / name, field)
            else:
                importlib.import_module(name)
        except ConfigurationError:
            raise
        except ModuleNotFoundError as exc:
            raise ConfigurationError(f"no module {name!r} ({exc})", field=field) from None
        except Exception as exc:  # a user's module failing to import: name it, one line
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise ConfigurationError(f"importing {name!r} failed: {type(exc).__name__}: "
                                     f"{first}", field=field) from None  # fmt: skip


def _load_file(path: Path, field: str) -> None:
    """Import the module at ``path`` under a name derived from its resolved path."""
    if not path.is_file():
        raise ConfigurationError(f"{path}: no such Python file", field=field)
    resolved = path.resolve()
    module_name = f"ukr_pipeline_plugin_{abs(hash(str(resolved))):x}"
    if module_name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"{path}: cannot be imported as a module", field=field)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while executing
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
