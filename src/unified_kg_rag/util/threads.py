"""Blocking calls that a deadline may abandon: run in daemon threads nobody waits for.

`asyncio.to_thread` runs work on the loop's default executor, and ``asyncio.run`` waits for
every executor thread before it returns: a blocking SDK call stuck on a server that trickles
its reply would hold the process open long after its caller gave up. These helpers run the
call in a daemon thread instead; a caller that stops waiting (cancelled, or past a deadline)
returns at once, and the thread finishes in the background, its result dropped (a thread
cannot be killed). The blocking call should still have its own I/O timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_daemon_thread", "wait_in_daemon_thread"]

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` in a new daemon thread and await its result.

    The caller's context variables are visible to ``fn`` (as with `asyncio.to_thread`).
    Cancelling the await returns at once; the thread runs on and its outcome is dropped.

    Raises:
        Whatever ``fn`` raised.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: T | None, error: BaseException | None) -> None:
        if future.done():  # the caller stopped waiting
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    def work() -> None:
        try:
            value = context.run(fn)
        except BaseException as exc:  # handed to the awaiting side
            outcome: tuple[T | None, BaseException | None] = (None, exc)
        else:
            outcome = (value, None)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name="ukr-blocking-call", daemon=True).start()
    return await future


def wait_in_daemon_thread(
    fn: Callable[[], T], timeout_s: float, on_timeout: Callable[[], BaseException]
) -> T:
    """Run blocking ``fn`` in a daemon thread; wait at most ``timeout_s`` seconds for it.

    For synchronous callers (a property that must probe a server).

    Raises:
        The exception ``on_timeout()`` builds, when ``fn`` is still running after
        ``timeout_s``; otherwise whatever ``fn`` raised.
    """
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the waiting side
            box["error"] = exc

    thread = threading.Thread(target=work, name="ukr-blocking-call", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise on_timeout()
    error = box.get("error")
    if isinstance(error, BaseException):
        raise error
    return box["value"]  # type: ignore[return-value]
