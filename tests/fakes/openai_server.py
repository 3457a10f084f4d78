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
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.ollama_server import (
    CHARS_PER_TOKEN,
    FakeOllama,
    RecordedRequest,
    Reply,
    Responder,
    _split,
    tokens_of,
)


class FakeOpenAI(FakeOllama):
    """The fake Ollama's scripting and recording, speaking the OpenAI protocol."""

    def __init__(
        self,
        replies: Iterable[Reply | Mapping[str, Any] | str] = (),
        *,
        responder: Responder | None = None,
        models: Iterable[str] = ("qwen2.5-coder-0.5b-instruct",),
    ) -> None:
        super().__init__(replies, responder=responder, models=())
        self.models = list(models)  # OpenAI ids carry no ":tag"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests_to("/v1/chat/completions")]


class _OpenAIHandler(BaseHTTPRequestHandler):
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


FakeOpenAI.handler = _OpenAIHandler
