"""The standalone graph viewer (``service/static/viewer.html``) with a graph embedded, served.

For the viewer's browser test and ``benchmarks/bench_web_graph.py``: what ``ukr graph export
--format html`` does to the page's data, without inlining the script and stylesheet.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["embed", "serve"]


def embed(page: str, graph: dict[str, Any]) -> str:
    """The viewer page with ``graph`` in its ``ukr-graph`` script (``<`` escaped)."""
    data = json.dumps(graph, separators=(",", ":")).replace("<", "\\u003c")
    start = page.index('<script type="application/json" id="ukr-graph">')
    end = page.index("</script>", start)
    head = page[:start] + '<script type="application/json" id="ukr-graph">'
    return head + data + page[end:]


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """A static HTTP server of ``folder`` on 127.0.0.1 (quiet), yielding its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
