"""The log handler the CLI and the service install: text lines or one JSON object per line.

`configure_logging` is called by the entry points only (``cli/``, ``service/``), never by
library code or at import (STYLE.md §7). Two formats (``logging.format``):

- ``text``: ``LEVEL logger: message``, one line per record (the default);
- ``json``: one JSON object per line, written by ``python-json-logger``'s `JsonFormatter`::

      {"time": "2026-12-02T16:13:49.822+00:00", "level": "INFO",
       "logger": "unified_kg_rag.retrieval.pipeline", "message": "stage semantic: 0 -> 50 ...",
       "query_id": "4f0c...", "stage": "semantic", "candidates_out": 50}

  ``time`` is ISO 8601 in UTC; the correlation ids of `util.correlation` (``request_id``,
  ``query_id``, ``run_id``) appear when set, and any ``extra={...}`` field a call passes is
  written as a field of its own; a traceback is the ``exc_info`` field.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

from unified_kg_rag.util.correlation import CorrelationFilter

__all__ = ["LogFormat", "configure_logging", "json_formatter"]

LogFormat = Literal["text", "json"]

_TEXT = "%(levelname)s %(name)s: %(message)s"
_QUIET = {  # third-party loggers held at WARNING (or ERROR) unless asked for more
    "httpx": logging.WARNING,
    "sentence_transformers": logging.WARNING,
    "transformers": logging.WARNING,
    "urllib3": logging.WARNING,
    # the connection pool logs each failed reconnection; the store error says it once
    "psycopg.pool": logging.ERROR,
    # pypdf logs every malformed object it repairs; the parser reports real failures itself
    "pypdf": logging.ERROR,
}


def json_formatter() -> logging.Formatter:
    """The JSON formatter (module docstring): time, level, logger, message, context fields."""
    from pythonjsonlogger.core import RESERVED_ATTRS
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        "{levelname}{name}{message}",
        style="{",
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time",
        # uvicorn repeats each message with terminal colour codes
        reserved_attrs=[*RESERVED_ATTRS, "color_message"],
    )


def configure_logging(
    level: int, log_format: LogFormat = "text", *, stream: TextIO | None = None
) -> logging.Handler:
    """Send every record at ``level`` or above to ``stream`` in ``log_format``.

    Replaces the root logger's handlers (as ``logging.basicConfig(force=True)``), attaches
    `util.correlation.CorrelationFilter` to the handler, and holds chatty third-party
    loggers at WARNING or ERROR.

    Args:
        level: the lowest level written (``logging.DEBUG`` ...).
        log_format: ``text`` or ``json`` (module docstring).
        stream: where lines go (default: ``sys.stderr`` at call time).

    Returns:
        The installed handler.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(json_formatter() if log_format == "json" else logging.Formatter(_TEXT))
    handler.addFilter(CorrelationFilter())
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
    for name, floor in _QUIET.items():
        logging.getLogger(name).setLevel(max(level, floor))
    return handler
