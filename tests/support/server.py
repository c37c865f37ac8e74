"""A real uvicorn server on a free 127.0.0.1 port, for the service tests (never a mocked transport)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.corpus import write_good_docs
from unified_kg_rag.bootstrap import build_app, load_project_config


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def index_good_docs(project: Path) -> None:
    """Write the three small documents of `write_good_docs` under ``project/docs`` and index them."""
    write_good_docs(project / "docs")

    async def index() -> None:
        async with build_app(load_project_config(project), project) as app:
            report = await app.index_pipeline().run([project / "docs"])
            assert report.failed == []

    asyncio.run(index())


@contextmanager
def serving(api: Any, *, timeout_s: float = 60.0) -> Iterator[str]:
    """Serve the ASGI app ``api`` with uvicorn in a thread; yield its base URL; stop it after."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def serving_good_docs(project: Path) -> Iterator[str]:
    """Index `write_good_docs`'s three documents in ``project``, serve it; yield the base URL."""
    from unified_kg_rag.service.app import create_app

    index_good_docs(project)
    with serving(create_app(project)) as url:
        yield url


def sse_events(lines: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs of a ``text/event-stream`` body, its lines as read."""
    out: list[tuple[str, dict[str, Any]]] = []
    event = ""
    for line in lines:
        if line.startswith("event: "):
            event = line.removeprefix("event: ")
        elif line.startswith("data: "):
            out.append((event, json.loads(line.removeprefix("data: "))))
    return out
