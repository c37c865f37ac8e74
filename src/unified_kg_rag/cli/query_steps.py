"""What a query is doing, on a terminal: loading the embedding model, then answering.

A cold ``ukr query`` spends most of its time loading the model; without a sign it looks hung.
`query_steps` shows a transient spinner on stderr, only when stderr is a terminal and the
output is not ``--json``: "Loading the embedding model" while a model that `ports.LoadsModel`
describes is loading, "Retrieving and answering" otherwise. Nothing is left on the screen
and stdout is never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from rich.console import Console

from unified_kg_rag.ports import Embedder, LoadsModel

__all__ = ["ANSWERING", "LOADING", "query_steps"]

LOADING = "Loading the embedding model (once per process) …"
ANSWERING = "Retrieving and answering …"
_POLL_S = 0.1
"""How often the step is re-read, seconds."""


@contextlib.asynccontextmanager
async def query_steps(
    console: Console, embedder: Embedder, *, enabled: bool
) -> AsyncIterator[Callable[[], None]]:
    """Show the query's current step until the block ends; yield a function that stops it.

    Args:
        console: the stderr console.
        embedder: the query's embedder; its load is shown when it is a `LoadsModel`.
        enabled: show anything at all (a terminal, no ``--json``).

    Yields:
        ``stop()``: remove the spinner now (before streamed output is printed).
    """
    if not enabled or not console.is_terminal:
        yield lambda: None
        return
    model = embedder if isinstance(embedder, LoadsModel) else None
    status = console.status(ANSWERING)
    status.start()

    async def follow() -> None:
        shown = ANSWERING
        while True:
            step = LOADING if model is not None and model.loading else ANSWERING
            if step != shown:
                status.update(step)
                shown = step
            await asyncio.sleep(_POLL_S)

    watcher = asyncio.create_task(follow())
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            watcher.cancel()
            status.stop()

    try:
        yield stop
    finally:
        stop()
