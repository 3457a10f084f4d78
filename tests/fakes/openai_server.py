"""A fake OpenAI-compatible server on 127.0.0.1 (llama-server, LM Studio, vLLM,
Ollama's /v1 all speak this), scripted like the fake Ollama (its `Reply`).

- GET  /v1/models            -> {"object": "list", "data": [{"id", "object": "model", ...}]}
- POST /v1/chat/completions  -> with "stream": true, server-sent events
  `data: {"choices": [{"delta": {"content"}, "finish_reason"}]}` ending in
  `data: [DONE]` (a final chunk with `usage` when `stream_options.include_usage`);
  else one {"choices": [{"message", "finish_reason"}], "usage"} object.

Unlike Ollama, these servers send the response's headers at once and the first
token when the prompt is read: `Reply.delay` is spent *after* the headers. A
reply longer than `max_tokens` is cut there with finish_reason "length".
Errors are OpenAI's shape: {"error": {"message", "type", "code"}}.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.ollama_server import (
    CHARS_PER_TOKEN,
    RecordedRequest,
    Reply,
    Responder,
    _as_reply,
    _Server,
    _split,
    tokens_of,
)


class FakeOpenAI:
    def __init__(
        self,
        replies: Iterable[Reply | Mapping[str, Any] | str] = (),
        *,
        responder: Responder | None = None,
        models: Iterable[str] = ("qwen2.5-coder-0.5b-instruct",),
    ) -> None:
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque(_as_reply(r) for r in replies)
        self.responder = responder
        self.models = list(models)
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self  # type: ignore[assignment]
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.drop_connections()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The address a person types (no /v1: the client adds it)."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply | Mapping[str, Any] | str) -> None:
        with self._lock:
            self._replies.extend(_as_reply(r) for r in replies)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self._requests if r.path == "/v1/chat/completions"]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
            responder = self.responder
        if responder is not None:
            return _as_reply(responder(body))
        return Reply.http_error(500, "fake openai: no scripted reply left")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake  # type: ignore[attr-defined, no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(status, {"error": {"message": message, "type": kind, "code": status}})

    def do_GET(self) -> None:  # noqa: N802
        self.fake._record(RecordedRequest("GET", self.path, None, dict(self.headers)))
        if self.path == "/v1/models":
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "me"}
                for m in self.fake.models
            ]
            self._send(200, {"object": "list", "data": data})
        else:
            self._error(404, f"no route {self.path}", "not_found_error")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = None
        self.fake._record(RecordedRequest("POST", self.path, body, dict(self.headers)))
        if self.path != "/v1/chat/completions":
            self._error(404, f"no route {self.path}", "not_found_error")
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._error(400, "'messages' is required")
            return
        if body.get("model") not in self.fake.models:
            self._error(404, f"The model `{body.get('model')}` does not exist.", "not_found_error")
            return
        reply = self.fake._next_reply(body)
        if reply.die:
            self.close_connection = True
            return
        if reply.status >= 400:
            if reply.delay:
                self.fake._stopping.wait(reply.delay)
            self._error(reply.status, reply.error or "error", "server_error")
            return
        content, reason = reply.content, "stop"
        limit = body.get("max_tokens")
        if isinstance(limit, int) and tokens_of(content) > limit:
            content, reason = content[: limit * CHARS_PER_TOKEN], "length"
        if reply.done_reason == "length":
            reason = "length"
        usage = {
            "prompt_tokens": tokens_of(json.dumps(body["messages"])),
            "completion_tokens": max(1, tokens_of(content)),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": body["model"]}
        if not body.get("stream"):
            if reply.delay and self.fake._stopping.wait(reply.delay):
                return
            message = {"role": "assistant", "content": content}
            self._send(
                200,
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                    "usage": usage,
                },
            )
            return
        try:
            # Headers at once; the first token after the prompt is read (`delay`).
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            if reply.delay and self.fake._stopping.wait(reply.delay):
                return
            pieces = _split(content, max(1, reply.chunks))
            for i, piece in enumerate(pieces):
                if i and reply.chunk_delay and self.fake._stopping.wait(reply.chunk_delay):
                    return
                delta = {"content": piece, **({"role": "assistant"} if i == 0 else {})}
                self._event(
                    {
                        **base,
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                )
            last = {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
            }
            if (body.get("stream_options") or {}).get("include_usage"):
                last["usage"] = usage
            self._event(last)
            self._raw(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _event(self, payload: dict[str, Any]) -> None:
        self._raw(f"data: {json.dumps(payload)}\n\n".encode())

    def _raw(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
