"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (no mocked client).

Speaks enough of the API for the ``openai`` SDK:

- ``POST /v1/chat/completions``: JSON, or SSE when ``"stream": true`` (``data: {...}`` chunks,
  a usage chunk when ``stream_options.include_usage`` is set, then ``data: [DONE]``);
- ``POST /v1/embeddings``: deterministic vectors derived from each input's SHA-256 (not
  normalised, returned in reverse ``index`` order, so clients must re-order and normalise);
  ``dimensions`` is honoured.

Scripted behaviour: `FakeOpenAIServer.script` queues `Scripted` responses that are used, in
order, before the defaults (fail with 503 twice, then succeed; return 401; answer slowly;
trickle the reply body a few bytes at a time, `Scripted.trickle_s`). An entry may apply only
to requests whose messages contain a text (``match``: one text unit's prompt) and may answer
several requests, or every one (``times``). ``raw_body`` sends a body as is (an HTML page, odd
fields, bytes that are not UTF-8) and ``raw_events`` a stream's SSE payloads as they are.
Every request is recorded (`requests`), and the highest number of requests in flight at
once is kept (`max_in_flight`).

Use as a context manager::

    with FakeOpenAIServer() as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="x")
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.support.trickle import write_trickled

__all__ = ["FakeOpenAIServer", "RecordedRequest", "Scripted", "fake_embedding"]


@dataclass
class Scripted:
    """One scripted answer.

    Attributes:
        status: HTTP status; anything but 200 sends an OpenAI-style error body.
        reply: chat reply text for a 200 (None: the server's default reply).
        message: the error message for a non-200.
        delay_s: seconds to wait before answering (timeouts, concurrency tests).
        finish_reason: finish reason of a chat reply.
        path: only requests to this path use the entry (None: any path).
        match: only requests with a message containing this text use the entry (None: any).
        times: how many requests the entry answers before it is used up (None: every
            matching request, for good).
        trickle_s: seconds between the pieces of a trickled reply: with it, the headers go
            at once and the body (JSON, or the SSE events of a stream) goes ``trickle_bytes``
            bytes at a time, after its first ``trickle_after_bytes`` bytes (0: none at once).
        trickle_bytes: bytes per trickled piece.
        trickle_after_bytes: body bytes sent at once before the trickle starts (a stream's
            first deltas, say).
        raw_body: with it, the body sent as is (status ``status``, ``content_type``), for any
            path: an HTML page, a reply with odd fields, bytes that are not UTF-8.
        content_type: the Content-Type of ``raw_body``.
        raw_events: with it, a streamed chat reply sends these SSE ``data:`` payloads (JSON
            text or ``[DONE]``) as they are, instead of its default chunks.
    """

    status: int = 200
    reply: str | None = None
    message: str = "scripted error"
    delay_s: float = 0.0
    finish_reason: str = "stop"
    path: str | None = None
    match: str | None = None
    times: int | None = 1
    trickle_s: float = 0.0
    trickle_bytes: int = 1
    trickle_after_bytes: int = 0
    raw_body: bytes | None = None
    content_type: str = "application/json"
    raw_events: list[str] | None = None


@dataclass
class RecordedRequest:
    """A request the server received."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def fake_embedding(text: str, dimension: int) -> list[float]:
    """Return the server's deterministic (unnormalised) vector for ``text``."""
    out: list[float] = []
    counter = 0
    while len(out) < dimension:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        out.extend((b - 127.5) / 10.0 for b in digest)
        counter += 1
    return out[:dimension]


class FakeOpenAIServer:
    """A threaded HTTP server speaking a subset of the OpenAI API (see module docstring).

    Args:
        reply: builds the default chat reply from the request body (default: echo of the
            last user message, ``"echo: <text>"``).
        embedding_dimension: dimension of embeddings when the request sets none.
        stream_chunk_chars: characters per streamed content delta.
    """

    def __init__(
        self,
        *,
        reply: Callable[[dict[str, Any]], str] | None = None,
        embedding_dimension: int = 8,
        stream_chunk_chars: int = 4,
    ) -> None:
        self.reply = reply or _echo
        self.embedding_dimension = embedding_dimension
        self.stream_chunk_chars = stream_chunk_chars
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Scripted] = deque()
        self._used: dict[int, int] = {}  # id(entry) -> requests it answered
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ control

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, *responses: Scripted) -> None:
        """Queue responses, used in order before the defaults."""
        with self._lock:
            self._queue.extend(responses)

    def requests_to(self, path_suffix: str) -> list[RecordedRequest]:
        """Return the recorded requests whose path ends with ``path_suffix``."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith(path_suffix)]

    def start(self) -> FakeOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        handler = _make_handler(self)
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _next(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Scripted:
        with self._lock:
            self.requests.append(RecordedRequest(path=path, body=body, headers=headers))
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            for i, entry in enumerate(self._queue):
                if _applies(entry, path, body):
                    used = self._used[id(entry)] = self._used.get(id(entry), 0) + 1
                    if entry.times is not None and used >= entry.times:
                        del self._queue[i]
                    return entry
            return Scripted()

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _QuietServer(ThreadingHTTPServer):
    """Drops clients that hang up (a killed or cancelled caller) without a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _applies(entry: Scripted, path: str, body: dict[str, Any]) -> bool:
    if entry.path is not None and not path.endswith(entry.path):
        return False
    if entry.match is None:
        return True
    return any(entry.match in str(m.get("content", "")) for m in body.get("messages", []))


def _last_user(body: dict[str, Any]) -> str:
    users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1]) if users else ""


def _echo(body: dict[str, Any]) -> str:
    return f"echo: {_last_user(body)}"


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # keep test output clean

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length) if length else b"{}"
            body = json.loads(raw or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            entry = server._next(self.path, body, headers)
            self._entry, self._sent = entry, 0
            try:
                if entry.delay_s:
                    time.sleep(entry.delay_s)
                if entry.raw_body is not None:
                    self._raw(entry.status, entry.raw_body, entry.content_type)
                elif entry.status != 200:
                    self._json(entry.status, {"error": {"message": entry.message,
                                                        "type": "scripted", "code": None}})
                elif self.path.endswith("/chat/completions"):
                    self._chat(body, entry)
                elif self.path.endswith("/embeddings"):
                    self._embeddings(body)
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)
            finally:
                server._done()

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            self._raw(status, json.dumps(payload).encode(), "application/json")

        def _raw(self, status: int, data: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self._write(data)

        def _write(self, data: bytes) -> None:
            """Send body bytes, trickled when the entry says so (`Scripted.trickle_s`)."""
            entry: Scripted = self._entry
            self._sent += write_trickled(
                self.wfile, data, interval_s=entry.trickle_s, step=entry.trickle_bytes,
                free_bytes=entry.trickle_after_bytes - self._sent,
            )

        def _chat(self, body: dict[str, Any], entry: Scripted) -> None:
            text = entry.reply if entry.reply is not None else server.reply(body)
            prompt_tokens = sum(len(str(m.get("content", "")).split())
                                for m in body.get("messages", []))
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                     "total_tokens": prompt_tokens + len(text.split())}
            base = {"id": "chatcmpl-test", "created": int(time.time()),
                    "model": body.get("model", "test-model")}
            if not body.get("stream"):
                self._json(200, {**base, "object": "chat.completion", "usage": usage,
                                 "choices": [{"index": 0, "finish_reason": entry.finish_reason,
                                              "message": {"role": "assistant",
                                                          "content": text}}]})
                return
            if entry.raw_events is not None:
                self._raw_events(entry.raw_events)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            step = max(1, server.stream_chunk_chars)
            deltas = [{"role": "assistant", "content": ""}]
            deltas += [{"content": text[i:i + step]} for i in range(0, len(text), step)]
            for delta in deltas:
                self._event({**base, "object": "chat.completion.chunk",
                             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            self._event({**base, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": {},
                                      "finish_reason": entry.finish_reason}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                self._event({**base, "object": "chat.completion.chunk", "choices": [],
                             "usage": usage})
            self._write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _raw_events(self, events: list[str]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in events:
                self._write(b"data: " + event.encode() + b"\n\n")
                self.wfile.flush()
            self.close_connection = True

        def _event(self, payload: dict[str, Any]) -> None:
            self._write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

        def _embeddings(self, body: dict[str, Any]) -> None:
            inputs = body.get("input", [])
            if isinstance(inputs, str):
                inputs = [inputs]
            dim = int(body.get("dimensions") or server.embedding_dimension)
            data = [{"object": "embedding", "index": i, "embedding": fake_embedding(t, dim)}
                    for i, t in enumerate(inputs)]
            data.reverse()
            n_tokens = sum(len(str(t).split()) for t in inputs)
            self._json(200, {"object": "list", "data": data, "model": body.get("model", "m"),
                             "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens}})

    return Handler
