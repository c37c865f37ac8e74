"""A real Bedrock Converse HTTP server on 127.0.0.1 for tests (no stubbed boto3 client).

Speaks the REST wire format botocore uses for ``bedrock-runtime``:

- ``POST /model/{modelId}/converse``: a JSON reply ``{output: {message}, stopReason, usage,
  metrics}``;
- ``POST /model/{modelId}/converse-stream``: an ``application/vnd.amazon.eventstream`` body
  of binary frames (`encode_event_frame`): ``messageStart``, ``contentBlockDelta`` events,
  ``contentBlockStop``, ``messageStop``, ``metadata``; or an exception frame mid-stream;
- errors: the HTTP status, an ``x-amzn-ErrorType`` header and a ``{"message"}`` body, which
  botocore turns into a ``ClientError`` with that code.

The default reply echoes the last user text (``"echo: <text>"``). It honours
``inferenceConfig.maxTokens`` (a reply longer than that many words is cut, stop reason
``max_tokens``) and ``stopSequences`` (cut before the first one, ``stop_sequence``). Usage
counts words: every text block of the request in, the reply out. Signatures are not checked;
requests (with their headers) are recorded.

Use as a context manager::

    with FakeBedrockServer() as server:
        config = BedrockChatConfig(endpoint_url=server.endpoint_url, region="us-east-1")
"""

from __future__ import annotations

import json
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import unquote

from tests.support.trickle import write_trickled

__all__ = ["BedrockRequest", "BedrockScripted", "FakeBedrockServer", "encode_event_frame"]


def encode_event_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """Encode one AWS event-stream message.

    Layout (big-endian): total length (4 bytes), headers length (4), CRC32 of those 8 bytes
    (4); headers, each ``name length (1), name, type 7 = string (1), value length (2),
    value``; the payload; CRC32 of everything before it (4).
    """
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += struct.pack(">B", len(raw_name)) + raw_name
        encoded += struct.pack(">BH", 7, len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _event(event_type: str, payload: dict[str, Any]) -> bytes:
    return encode_event_frame(
        {":event-type": event_type, ":content-type": "application/json",
         ":message-type": "event"},
        json.dumps(payload).encode(),
    )


def _exception(code: str, message: str) -> bytes:
    return encode_event_frame(
        {":exception-type": code, ":content-type": "application/json",
         ":message-type": "exception"},
        json.dumps({"message": message}).encode(),
    )


@dataclass
class BedrockScripted:
    """One scripted answer.

    Attributes:
        status: HTTP status; anything but 200 sends an error with ``code``.
        code: the error code (``ThrottlingException``, ``AccessDeniedException`` ...).
        message: the error message.
        reply: the reply text for a 200 (None: the server's default reply).
        delay_s: seconds to wait before answering.
        stream_error: for a stream, the exception code sent after the first delta (camel
            case, as Bedrock's event names: ``throttlingException``).
        stop_reason: the ``stopReason`` to report (None: from stop sequences and maxTokens).
        trickle_s: seconds between the pieces of a trickled reply: with it, the headers go
            at once and the body (JSON, or the event frames of a stream) goes
            ``trickle_bytes`` bytes at a time, after its first ``trickle_after_bytes`` bytes.
        trickle_bytes: bytes per trickled piece.
        trickle_after_bytes: body bytes sent at once before the trickle starts.
        omit_message_stop: a stream ends after its deltas without ``messageStop`` (as a cut
            connection would).
    """

    status: int = 200
    code: str = "ValidationException"
    message: str = "scripted error"
    reply: str | None = None
    delay_s: float = 0.0
    stream_error: str | None = None
    stop_reason: str | None = None
    trickle_s: float = 0.0
    trickle_bytes: int = 1
    trickle_after_bytes: int = 0
    omit_message_stop: bool = False


@dataclass
class BedrockRequest:
    """A request the server received (``model_id`` URL-decoded)."""

    operation: str
    model_id: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class FakeBedrockServer:
    """A threaded HTTP server speaking Bedrock's Converse API (see module docstring).

    Args:
        stream_chunk_chars: characters per streamed ``contentBlockDelta``.
        reply: builds the default reply from the request body (default: echo of the last
            user message, ``"echo: <text>"``).
    """

    def __init__(
        self, *, stream_chunk_chars: int = 4, reply: Callable[[dict[str, Any]], str] | None = None
    ) -> None:
        self.stream_chunk_chars = stream_chunk_chars
        self.reply = reply or _default_reply
        self.requests: list[BedrockRequest] = []
        self._queue: deque[BedrockScripted] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def script(self, *responses: BedrockScripted) -> None:
        """Queue responses, used in order before the default."""
        with self._lock:
            self._queue.extend(responses)

    def start(self) -> FakeBedrockServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeBedrockServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _next(self, request: BedrockRequest) -> BedrockScripted:
        with self._lock:
            self.requests.append(request)
            return self._queue.popleft() if self._queue else BedrockScripted()


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    return [str(b["text"]) for b in blocks if "text" in b]


def _default_reply(body: dict[str, Any]) -> str:
    users = [t for m in body.get("messages", []) if m.get("role") == "user"
             for t in _texts(m.get("content", []))]
    return f"echo: {users[-1] if users else ''}"


def _shape(text: str, body: dict[str, Any]) -> tuple[str, str]:
    """Apply stop sequences and maxTokens (in words) to ``text``; return (text, stopReason)."""
    inference = body.get("inferenceConfig", {})
    for stop in inference.get("stopSequences", []):
        if stop in text:
            return text[: text.index(stop)], "stop_sequence"
    words = text.split(" ")
    limit = int(inference.get("maxTokens", 10**9))
    if len(words) > limit:
        return " ".join(words[:limit]), "max_tokens"
    return text, "end_turn"


def _usage(body: dict[str, Any], text: str) -> dict[str, int]:
    blocks = list(body.get("system", []))
    for m in body.get("messages", []):
        blocks.extend(m.get("content", []))
    n_in = sum(len(t.split()) for t in _texts(blocks))
    n_out = len(text.split())
    return {"inputTokens": n_in, "outputTokens": n_out, "totalTokens": n_in + n_out}


def _make_handler(server: FakeBedrockServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) != 3 or parts[0] != "model":
                self._error(404, "UnknownOperationException", f"no route {self.path}")
                return
            request = BedrockRequest(operation=parts[2], model_id=unquote(parts[1]), body=body,
                                     headers={k.lower(): v for k, v in self.headers.items()})
            entry = server._next(request)
            self._entry, self._sent = entry, 0
            try:
                if entry.delay_s:
                    time.sleep(entry.delay_s)
                if entry.status != 200:
                    self._error(entry.status, entry.code, entry.message)
                    return
                text = entry.reply if entry.reply is not None else server.reply(body)
                text, stop_reason = _shape(text, body)
                stop_reason = entry.stop_reason or stop_reason
                if request.operation == "converse":
                    self._json(200, {
                        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                        "stopReason": stop_reason, "usage": _usage(body, text),
                        "metrics": {"latencyMs": 1}})
                elif request.operation == "converse-stream":
                    self._stream(body, text, stop_reason, entry)
                else:
                    self._error(404, "UnknownOperationException", f"no route {self.path}")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def _json(self, status: int, payload: dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self._write(data)

        def _write(self, data: bytes) -> None:
            """Send body bytes, trickled when the entry says so (`BedrockScripted.trickle_s`)."""
            entry: BedrockScripted = self._entry
            self._sent += write_trickled(
                self.wfile, data, interval_s=entry.trickle_s, step=entry.trickle_bytes,
                free_bytes=entry.trickle_after_bytes - self._sent,
            )

        def _error(self, status: int, code: str, message: str) -> None:
            self._json(status, {"message": message}, {"x-amzn-ErrorType": f"{code}:"})

        def _stream(self, body: dict[str, Any], text: str, stop_reason: str,
                    entry: BedrockScripted) -> None:
            step = max(1, server.stream_chunk_chars)
            frames = [_event("messageStart", {"role": "assistant"})]
            for i in range(0, len(text), step):
                frames.append(_event("contentBlockDelta", {
                    "delta": {"text": text[i:i + step]}, "contentBlockIndex": 0}))
                if entry.stream_error is not None:
                    frames.append(_exception(entry.stream_error, entry.message))
                    break
            else:
                frames += [] if entry.omit_message_stop else [
                    _event("contentBlockStop", {"contentBlockIndex": 0}),
                    _event("messageStop", {"stopReason": stop_reason}),
                    _event("metadata", {"usage": _usage(body, text),
                                        "metrics": {"latencyMs": 1}}),
                ]
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.amazon.eventstream")
            self.send_header("Content-Length", str(sum(len(f) for f in frames)))
            self.end_headers()
            for frame in frames:  # frame by frame, so the client's buffer sees them arrive
                self._write(frame)
                self.wfile.flush()

    return Handler
