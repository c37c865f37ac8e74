"""A rich progress bar on stderr implementing `ports.ProgressReporter`.

Drawn only when stderr is a terminal and output is not ``--quiet``/``--json``; otherwise the
reporter prints nothing but warnings (one line each, on stderr).
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["RichProgress"]

_LABELS = {
    "read": "Reading files",
    "index": "Indexing documents",
    "load model": "Loading the embedding model",
    "embed": "Embedding text units",
    "extract": "Extracting graph (units)",
    "concepts": "Concept graph (units)",
    "summarize": "Summarizing descriptions",
    "reports": "Community reports",
    "embed entities": "Embedding entities",
    "embed relationships": "Embedding relationships",
    "embed reports": "Embedding reports",
}


class _RateColumn(ProgressColumn):
    """Items per second of a task (blank until measurable)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")


class RichProgress:
    """Progress bars for `ukr index`, one per task."""

    def __init__(self, console: Console, *, enabled: bool) -> None:
        self._console = console
        self._enabled = enabled and console.is_terminal
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _RateColumn(),
            TextColumn("{task.fields[note]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            disable=not self._enabled,
        )
        self._tasks: dict[str, TaskID] = {}
        self._totals: dict[str, int | None] = {}

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def start(self, task: str, total: int | None) -> None:
        """Add a bar for ``task``; for a task already shown, set its new total (steps kept)."""
        if task in self._tasks:
            self._progress.update(self._tasks[task], total=total)
        else:
            self._tasks[task] = self._progress.add_task(
                _LABELS.get(task, task), total=total, note=""
            )
        self._totals[task] = total

    def advance(self, task: str, steps: int = 1, *, note: str | None = None) -> None:
        """Advance ``task``'s bar."""
        if task in self._tasks:
            if note is None:
                self._progress.update(self._tasks[task], advance=steps)
            else:
                self._progress.update(self._tasks[task], advance=steps, note=note)

    def finish(self, task: str) -> None:
        """Mark ``task`` complete (a task without a total, such as a model load, as 1/1)."""
        total = self._totals.get(task)
        if task in self._tasks:
            done = 1 if total is None else total
            self._progress.update(self._tasks[task], total=done, completed=done)

    def warn(self, message: str) -> None:
        """Print a one-line warning above the bars.

        Only while bars are drawn; otherwise the summary lists the failures once, at the end.
        """
        if self._enabled:
            self._console.print(f"[yellow]failed[/]: {escape(message)}", soft_wrap=True)
