"""A real ``/rerank`` HTTP server on 127.0.0.1 for tests (no mocked client).

Speaks one of three dialects (`FakeRerankServer.style`), as the real services do:

- ``cohere``: body ``{"model", "query", "documents", "top_n"}``; unknown fields are refused
  with 400 (as Cohere does); replies ``{"id", "results": [{"index", "relevance_score"}],
  "meta"}``, best first, cut to ``top_n``;
- ``jina``: the same body, unknown fields ignored; replies ``{"model", "usage", "results":
  [{"index", "document": {"text"}, "relevance_score"}]}``, best first;
- ``tei``: body ``{"query", "texts"}``, unknown fields ignored, a missing ``texts`` refused
  with 422 and more than ``max_batch`` texts with 413 (as text-embeddings-inference does);
  replies ``[{"index", "score"}]``, best first.

Scores come from `fake_score`, so a test can compute what each text should get. With
``api_key`` set, a request without ``Authorization: Bearer <api_key>`` gets 401.
``limit_results`` cuts every reply to that many results (a server that ignores ``top_n``).
`FakeRerankServer.script` queues `ScriptedReply` entries used, in order, before the normal
answers (fail with 500 once; answer slowly; send a garbage body). Every request is recorded.

Use as a context manager::

    with FakeRerankServer(style="tei") as server:
        reranker = HttpReranker(server.url)
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from tests.support.trickle import write_trickled

__all__ = ["FakeRerankServer", "RecordedRequest", "ScriptedReply", "fake_score"]

Style = Literal["cohere", "jina", "tei"]
_COHERE_FIELDS = frozenset({"model", "query", "documents", "top_n", "max_tokens_per_doc",
                            "return_documents", "rank_fields", "max_chunks_per_doc"})


def fake_score(query: str, text: str) -> float:
    """Return the server's score of ``text`` for ``query``, in [0, 1).

    Shared lowercase words count most; a hash of the pair breaks ties, so no two texts in a
    test tie by accident.
    """
    q = set(query.lower().split())
    shared = len(q & set(text.lower().split()))
    tie = int.from_bytes(hashlib.sha256(f"{query}\x00{text}".encode()).digest()[:4], "big")
    return (shared + tie / 2**32) / (len(q) + 1)


@dataclass
class ScriptedReply:
    """One scripted answer, used instead of a normal one.

    Attributes:
        status: HTTP status; a non-200 sends ``{"message": message}`` unless ``body`` is set.
        body: raw bytes to send as the reply body (garbage-body tests).
        message: the error message of a non-200.
        delay_s: seconds to wait before answering (timeout tests).
        trickle_s: seconds between the pieces of a trickled reply: with it, the headers go
            at once and the body goes ``trickle_bytes`` bytes at a time (the normal answer,
            unless ``status`` or ``body`` say otherwise).
        trickle_bytes: bytes per trickled piece.
    """

    status: int = 200
    body: bytes | None = None
    message: str = "scripted error"
    delay_s: float = 0.0
    trickle_s: float = 0.0
    trickle_bytes: int = 1


@dataclass
class RecordedRequest:
    """A request the server received."""

    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FakeRerankServer:
    """A threaded HTTP server answering ``POST /rerank`` (see the module docstring).

    Args:
        style: the dialect spoken.
        api_key: the bearer token required, or None for none.
        max_batch: most texts per request (``tei`` only).
    """

    def __init__(
        self, *, style: Style = "cohere", api_key: str | None = None, max_batch: int = 32
    ) -> None:
        self.style: Style = style
        self.api_key = api_key
        self.max_batch = max_batch
        self.limit_results: int | None = None
        self.requests: list[RecordedRequest] = []
        self._queue: deque[ScriptedReply] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._port: int | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/rerank`` (still readable after `stop`)."""
        if self._port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._port}/rerank"

    def script(self, *replies: ScriptedReply) -> None:
        """Queue replies, used in order before the normal answers."""
        with self._lock:
            self._queue.extend(replies)

    def start(self) -> FakeRerankServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        self._httpd = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._port = int(self._httpd.server_address[1])
        thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeRerankServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _record(self, path: str, body: Any, headers: dict[str, str]) -> ScriptedReply | None:
        with self._lock:
            self.requests.append(RecordedRequest(path=path, body=body, headers=headers))
            return self._queue.popleft() if self._queue else None

    def answer(self, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        """Return ``(status, payload)`` of the normal answer to ``body``."""
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {"message": "invalid api token"}
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return 422, {"error": "missing field `query`", "error_type": "Validation"}
        if self.style == "tei":
            return self._tei(body)
        unknown = sorted(set(body) - _COHERE_FIELDS)
        if self.style == "cohere" and unknown:
            return 400, {"message": f"invalid request: unknown field: parameter "
                                    f"'{unknown[0]}' is not a valid field"}
        docs = body.get("documents")
        if not isinstance(docs, list):
            return 400, {"message": "invalid request: documents must be a list"}
        ranked = self._ranked(body["query"], docs)[: int(body.get("top_n") or len(docs))]
        if self.style == "jina":
            return 200, {"model": body.get("model", ""), "usage": {"total_tokens": 1},
                         "results": [{"index": i, "document": {"text": docs[i]},
                                      "relevance_score": s} for i, s in ranked]}
        return 200, {"id": "rr-1", "results": [{"index": i, "relevance_score": s}
                                               for i, s in ranked],
                     "meta": {"billed_units": {"search_units": 1}}}

    def _tei(self, body: dict[str, Any]) -> tuple[int, Any]:
        texts = body.get("texts")
        if not isinstance(texts, list):
            return 422, {"error": "Failed to deserialize the JSON body into the target type: "
                                  "missing field `texts`", "error_type": "Validation"}
        if len(texts) > self.max_batch:
            return 413, {"error": f"batch size {len(texts)} > maximum allowed batch size "
                                  f"{self.max_batch}", "error_type": "Validation"}
        return 200, [{"index": i, "score": s} for i, s in self._ranked(body["query"], texts)]

    def _ranked(self, query: str, texts: list[Any]) -> list[tuple[int, float]]:
        scored = [(i, fake_score(query, str(t))) for i, t in enumerate(texts)]
        scored.sort(key=lambda pair: pair[1], reverse=True)
        return scored[: self.limit_results] if self.limit_results is not None else scored


class _QuietServer(ThreadingHTTPServer):
    """Drops clients that hang up (a timed-out caller) without a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _make_handler(server: FakeRerankServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # keep test output clean

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            scripted = server._record(self.path, body, headers)
            self._scripted = scripted
            try:
                if scripted is not None and scripted.delay_s:
                    time.sleep(scripted.delay_s)
                if scripted is not None and (scripted.status != 200 or scripted.body):
                    data = scripted.body
                    if data is None:
                        data = json.dumps({"message": scripted.message}).encode()
                    self._send(scripted.status, data)
                elif self.path != "/rerank":
                    self._send(404, json.dumps({"message": f"no route {self.path}"}).encode())
                else:
                    status, payload = server.answer(body, headers)
                    self._send(status, json.dumps(payload).encode())
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            scripted: ScriptedReply | None = self._scripted
            if scripted is None:
                self.wfile.write(data)
                return
            write_trickled(self.wfile, data, interval_s=scripted.trickle_s,
                           step=scripted.trickle_bytes)

    return Handler
