"""The progress reporter used when a caller gives none: it drops every event."""

from __future__ import annotations

from unified_kg_rag.ports import ProgressReporter

__all__ = ["NULL_PROGRESS", "NullProgress"]


class NullProgress:
    """A `ports.ProgressReporter` that ignores every event (library use without a UI)."""

    def start(self, task: str, total: int | None) -> None:
        """Ignore the start of ``task``."""

    def advance(self, task: str, steps: int = 1, *, note: str | None = None) -> None:
        """Ignore progress of ``task``."""

    def finish(self, task: str) -> None:
        """Ignore the end of ``task``."""

    def warn(self, message: str) -> None:
        """Ignore ``message``."""


NULL_PROGRESS: ProgressReporter = NullProgress()
