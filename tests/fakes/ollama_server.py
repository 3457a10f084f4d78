"""A fake Ollama server on 127.0.0.1 that speaks the real HTTP API.

Tests point the official `ollama` client (and so `core.providers.llm`) at it
and script what the "model" says: well-formed JSON, markdown-wrapped or
truncated JSON, copies of the prompt's examples, HTTP errors, answers slower
than the client's timeout, or a connection that dies mid-request. Every request
is recorded so a test can check the prompt, the `format` schema and the options
that were actually sent over the wire.

Shapes follow Ollama's documented API (docs/api.md) and the models in
`ollama/_types.py` of the client:

- GET  /api/version  -> {"version": ...}
- GET  /api/tags     -> {"models": [{"name", "model", "modified_at", "size", "digest", "details"}]}
- POST /api/show     -> {"modelfile", "parameters", "template", "details", "model_info"
                         (with `<family>.context_length`), "capabilities"}
- POST /api/chat     -> {"model", "created_at", "message": {"role", "content", "thinking"?},
                         "done_reason", "done", durations and counts}
- POST /api/generate -> like chat but with "response" (and "thinking") instead of "message"
- POST /api/embed    -> {"model", "embeddings": [[...], ...], durations and counts}

Chat and generate answers come from the script: queued replies first, then the
responder callable, else an HTTP 500 saying nothing was scripted (so a test
that forgot to script fails loudly rather than passing on a default).

Like a real server, the fake honours the generation limits it is sent: a reply
longer than `options.num_predict` tokens is cut there with `done_reason:
"length"`, and a prompt longer than `options.num_ctx` (default
`DEFAULT_NUM_CTX`) is counted as cut (`prompt_eval_count`, and `cut_prompts`).
Tokens are counted as `tokens_of` does: a token is about four characters.
Streamed answers (the default, as in Ollama) arrive in `Reply.chunks` pieces
with chunked transfer encoding, `Reply.chunk_delay` seconds apart, so a slow
model that keeps producing tokens can be told from one that says nothing.
`Reply.delay` comes before anything, the response's headers included: that is
how a real Ollama reads a long prompt (it sends nothing until the first token).
The final chunk's prompt_eval_duration follows `prompt_rate`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAKE_VERSION = "0.6.3"
# What Ollama uses when a request sends no num_ctx (older servers: 2048).
DEFAULT_NUM_CTX = 2048
CHARS_PER_TOKEN = 4
DEFAULT_MODELS: tuple[str, ...] = ("llama3.2:latest", "qwen3:4b")


@dataclass(frozen=True)
class Reply:
    """One scripted answer to a chat or generate request.

    Build with the class methods; `delay` composes with any of them
    (e.g. `Reply.json({...}, delay=5)` answers after five seconds).
    """

    content: str = ""
    thinking: str | None = None
    status: int = 200
    error: str | None = None
    delay: float = 0.0
    # Close the connection without answering; with `shutdown` also stop listening.
    die: bool = False
    shutdown: bool = False
    done_reason: str = "stop"
    # Streamed answers arrive in this many pieces, `chunk_delay` seconds apart.
    chunks: int = 3
    chunk_delay: float = 0.0

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def http_error(cls, status: int, message: str = "internal error", **kw: Any) -> Reply:
        return cls(status=status, error=message, **kw)

    @classmethod
    def delayed(cls, seconds: float, then: Reply | None = None) -> Reply:
        return replace(then or cls(content="{}"), delay=seconds)

    @classmethod
    def dies(cls, *, shutdown_server: bool = False) -> Reply:
        return cls(die=True, shutdown=shutdown_server)


Responder = Callable[[dict[str, Any]], "Reply | Mapping[str, Any] | str"]


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def _as_reply(value: Reply | Mapping[str, Any] | str) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply.text(value)
    return Reply.json(dict(value))


def _with_tag(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def tokens_of(text: str) -> int:
    """The fake's token count: about four characters a token, as for English text."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _option(body: dict[str, Any], name: str) -> int | None:
    options = body.get("options") or {}
    value = options.get(name) if isinstance(options, dict) else None
    return int(value) if isinstance(value, int | float) and value > 0 else None


def fake_embedding(text: str, dim: int) -> list[float]:
    """A deterministic unit vector for `text`: equal texts embed equally."""
    raw: list[float] = []
    counter = 0
    while len(raw) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        raw.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    raw = raw[:dim]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


class FakeOllama:
    """The fake server. Use as a context manager or call `start()` / `stop()`."""

    # The protocol it speaks (tests/fakes/openai_server.py speaks another).
    handler: type[BaseHTTPRequestHandler]

    def __init__(
        self,
        replies: Iterable[Reply | Mapping[str, Any] | str] = (),
        *,
        responder: Responder | None = None,
        models: Iterable[str] = DEFAULT_MODELS,
        think_capable: bool = True,
        embed_dim: int = 16,
        context_length: int = 131072,
        capabilities: Iterable[str] | None = None,
        prompt_rate: float = 1_000_000.0,
    ) -> None:
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque(_as_reply(r) for r in replies)
        self.responder = responder
        self.models: list[str] = [_with_tag(m) for m in models]
        # Real Ollama refuses think=true for models without the thinking capability.
        self.think_capable = think_capable
        self.embed_dim = embed_dim
        # What /api/show reports: the model's own context (`model_info`'s
        # `<family>.context_length`) and capabilities (None: completion, plus
        # thinking when think_capable; () for an old server that lists none).
        self.context_length = context_length
        self.capabilities = None if capabilities is None else list(capabilities)
        # Prompt tokens read a second, as the final chunk's prompt_eval_duration
        # reports it (a CPU model: tens; the default: instant).
        self.prompt_rate = prompt_rate
        self._requests: list[RecordedRequest] = []
        # Chat/generate bodies whose prompt did not fit the context they asked for.
        self.cut_prompts: list[dict[str, Any]] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self.port = 0

    # ---- lifecycle -------------------------------------------------------------

    def start(self) -> FakeOllama:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), self.handler)
        server.fake = self
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-ollama-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        # Wake handlers that are sleeping through a scripted delay.
        self._stopping.set()
        self._close_listener()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _close_listener(self) -> None:
        with self._lock:
            if self._closed or self._server is None:
                return
            self._closed = True
            server = self._server
        server.shutdown()
        server.server_close()
        # Keep-alive connections would otherwise go on being served by their threads.
        server.drop_connections()

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._server is not None and not self._closed

    # ---- scripting and inspection ------------------------------------------------

    def script(self, *replies: Reply | Mapping[str, Any] | str) -> None:
        """Queue replies for the next chat/generate requests, in order."""
        with self._lock:
            self._replies.extend(_as_reply(r) for r in replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of every /api/chat request received, oldest first."""
        return [r.body for r in self.requests_to("/api/chat")]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()
            self._replies.clear()

    # ---- used by the handler -----------------------------------------------------

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
        return Reply.http_error(500, "fake ollama: no scripted reply left")

    def _find_model(self, name: Any) -> str | None:
        if not isinstance(name, str) or not name:
            return None
        wanted = _with_tag(name)
        return wanted if wanted in self.models else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOllama

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeOllama"

    @property
    def fake(self) -> FakeOllama:
        return self.server.fake  # type: ignore[attr-defined, no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # keep test output clean

    # ---- plumbing ----------------------------------------------------------------

    def _read_body(self) -> tuple[Any, bool]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None, True
        try:
            return json.loads(raw), True
        except json.JSONDecodeError:
            return raw.decode("utf-8", "replace"), False

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": message})

    def _not_found(self) -> None:
        # What Ollama's router answers for an unknown route.
        self._send(404, b"404 page not found", "text/plain")

    # ---- routes ------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802
        self.fake._record(RecordedRequest("GET", self.path, None, dict(self.headers)))
        if self.path in ("/", ""):
            self._send(200, b"Ollama is running", "text/plain")
        elif self.path == "/api/version":
            self._send(200, {"version": FAKE_VERSION})
        elif self.path == "/api/tags":
            self._send(200, {"models": [self._model_entry(m) for m in self.fake.models]})
        elif self.path == "/api/ps":
            self._send(200, {"models": []})
        else:
            self._not_found()

    def do_HEAD(self) -> None:  # noqa: N802
        self.fake._record(RecordedRequest("HEAD", self.path, None, dict(self.headers)))
        with contextlib.suppress(OSError):
            self.send_response(200 if self.path in ("/", "") else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        body, ok = self._read_body()
        self.fake._record(RecordedRequest("POST", self.path, body, dict(self.headers)))
        if not ok or (body is not None and not isinstance(body, dict)):
            self._error(400, "invalid request body")
            return
        body = body or {}
        if self.path in ("/api/chat", "/api/generate"):
            self._generate(body, chat=self.path == "/api/chat")
        elif self.path == "/api/embed":
            self._embed(body)
        elif self.path == "/api/show":
            self._show(body)
        else:
            self._not_found()

    def _model_entry(self, name: str) -> dict[str, Any]:
        family = name.split(":", 1)[0].rstrip("0123456789.") or "llama"
        return {
            "name": name,
            "model": name,
            "modified_at": "2025-01-01T00:00:00.000000000Z",
            "size": 2019393189,
            "digest": hashlib.sha256(name.encode()).hexdigest(),
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": family,
                "families": [family],
                "parameter_size": "3.2B",
                "quantization_level": "Q4_K_M",
            },
        }

    def _show(self, body: dict[str, Any]) -> None:
        name = self.fake._find_model(body.get("model") or body.get("name"))
        if name is None:
            self._error(404, f"model '{body.get('model')}' not found")
            return
        entry = self._model_entry(name)
        capabilities = self.fake.capabilities
        if capabilities is None:
            capabilities = ["completion"] + (["thinking"] if self.fake.think_capable else [])
        family = entry["details"]["family"]
        self._send(
            200,
            {
                "modelfile": f"FROM {name}\n",
                "parameters": "temperature 0.8",
                "template": "{{ .Prompt }}",
                "details": entry["details"],
                "model_info": {
                    "general.architecture": family,
                    f"{family}.context_length": self.fake.context_length,
                },
                "capabilities": capabilities,
                "modified_at": entry["modified_at"],
            },
        )

    def _embed(self, body: dict[str, Any]) -> None:
        model = body.get("model")
        if not model:
            self._error(400, "model is required")
            return
        if self.fake._find_model(model) is None:
            self._error(404, f'model "{model}" not found, try pulling it first')
            return
        inputs = body.get("input", "")
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        self._send(
            200,
            {
                "model": model,
                "embeddings": [fake_embedding(str(t), self.fake.embed_dim) for t in texts],
                "total_duration": 1_000_000,
                "load_duration": 100_000,
                "prompt_eval_count": sum(len(str(t).split()) for t in texts),
            },
        )

    def _generate(self, body: dict[str, Any], *, chat: bool) -> None:
        model = body.get("model")
        if not model:
            self._error(400, "model is required")
            return
        if self.fake._find_model(model) is None:
            self._error(404, f'model "{model}" not found, try pulling it first')
            return
        if body.get("think") not in (None, False) and not self.fake.think_capable:
            self._error(400, f'"{model}" does not support thinking')
            return

        reply = self.fake._next_reply(body)
        if reply.delay > 0 and self.fake._stopping.wait(reply.delay):
            self.close_connection = True
            return  # the server is stopping: drop the request
        if reply.die:
            if reply.shutdown:
                self.fake._close_listener()
            self.close_connection = True
            return  # no response at all: the client sees the connection close
        if reply.status >= 400:
            self._error(reply.status, reply.error or "error")
            return

        content, done_reason = reply.content, reply.done_reason
        limit = _option(body, "num_predict")
        if limit is not None and tokens_of(content) > limit:
            # What a real server does at num_predict: stop mid-answer and say why.
            content, done_reason = content[: limit * CHARS_PER_TOKEN], "length"
        prompt_tokens = tokens_of(json.dumps(body.get("messages") or body.get("prompt") or ""))
        num_ctx = _option(body, "num_ctx") or DEFAULT_NUM_CTX
        if prompt_tokens > num_ctx:
            with self.fake._lock:
                self.fake.cut_prompts.append(body)
        stats = {
            "done_reason": done_reason,
            "done": True,
            "total_duration": 5_000_000,
            "load_duration": 1_000_000,
            "prompt_eval_count": min(prompt_tokens, num_ctx),
            "prompt_eval_duration": max(
                1, int(min(prompt_tokens, num_ctx) / self.fake.prompt_rate * 1e9)
            ),
            "eval_count": max(1, tokens_of(content)),
            "eval_duration": 3_000_000,
        }
        base: dict[str, Any] = {"model": model, "created_at": _now()}
        if body.get("stream", True) is False:
            self._send(200, {**base, **self._piece(content, reply.thinking, chat), **stats})
            return
        # Ollama streams unless told otherwise: content pieces, then a final chunk
        # with the statistics and why generation stopped.
        pieces = _split(content, max(1, reply.chunks))
        lines = []
        if reply.thinking is not None:
            lines.append({**base, **self._piece("", reply.thinking, chat), "done": False})
        lines += [{**base, **self._piece(p, None, chat), "done": False} for p in pieces]
        lines.append({**base, **self._piece("", None, chat), **stats})
        self._stream(lines, reply.chunk_delay)

    @staticmethod
    def _piece(content: str, thinking: str | None, chat: bool) -> dict[str, Any]:
        if chat:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if thinking is not None:
                message["thinking"] = thinking
            return {"message": message}
        answer: dict[str, Any] = {"response": content}
        if thinking is not None:
            answer["thinking"] = thinking
        return answer

    def _stream(self, lines: list[dict[str, Any]], delay: float) -> None:
        """NDJSON lines with chunked transfer encoding, `delay` seconds apart."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i, line in enumerate(lines):
                if i and delay > 0 and self.fake._stopping.wait(delay):
                    self.close_connection = True
                    return
                data = (json.dumps(line) + "\n").encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True


FakeOllama.handler = _Handler


def _split(text: str, n: int) -> list[str]:
    """`text` in `n` nearly equal pieces (one empty piece for empty text)."""
    if not text:
        return [""]
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]
