"""A real local model behind the Ollama (and OpenAI) protocol, for tests and benchmarks.

There is no Ollama binary here, but there are real GGUF models in registry
packages and llama-cpp-python to run them. This server puts one or more GGUF
files behind the HTTP API Ollama speaks, so Engram's llm mode runs end to end
against a model that really writes its answers token by token:

- GET  /api/version, /api/tags, /api/ps
- POST /api/show   -> details, model_info (`<arch>.context_length` from the
                      GGUF), capabilities ("completion"; no "thinking")
- POST /api/chat   -> streamed NDJSON (or one object with "stream": false);
                      `format` "json" or a JSON schema (a grammar, as Ollama
                      does); options num_ctx, num_predict, temperature, seed;
                      done_reason "stop" | "length"; prompt/eval counts and
                      durations; `think: true` refused as Ollama refuses it for
                      a model without the capability
- GET  /v1/models, POST /v1/chat/completions -> the OpenAI-compatible face that
                      Ollama, llama.cpp's llama-server, LM Studio and vLLM
                      share: `response_format` json_schema / json_object,
                      `max_tokens`, `seed`, SSE streaming ending in [DONE],
                      `finish_reason`, `usage`
- errors as Ollama words them: {"error": "..."} with 400 / 404 / 500.

Like a CPU Ollama (OLLAMA_NUM_PARALLEL=1) it generates one answer at a time:
the others wait in line, so a client's timer runs while its request queues.
A new num_ctx reloads the model, as in Ollama. A client that goes away mid-
answer stops the generation.

Runs in the model venv (stdlib + llama_cpp only; `make test-model` builds it):

    .venv-llm/bin/python tests/model/llama_server.py --model qwen2.5-coder:0.5b=PATH.gguf \
        [--model NAME=PATH ...] [--port 0] [--port-file FILE] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

VERSION = "0.6.3-llama.cpp"
# Ollama's context when a request sends no num_ctx (0.6.x).
DEFAULT_NUM_CTX = 2048
# Ollama's default num_predict is unlimited; bound it so a looping model ends.
DEFAULT_NUM_PREDICT = 4096


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _with_tag(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def _typed(value: Any) -> Any:
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return value


class RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Model:
    """One GGUF file, loaded on first use with the context the request asks for."""

    name: str
    path: Path
    threads: int
    metadata: dict[str, Any] = field(default_factory=dict)
    _llama: Any = None
    _n_ctx: int = 0

    def read_metadata(self) -> None:
        from llama_cpp import Llama

        # vocab_only: the header and tokenizer without the weights (fast).
        llama = Llama(str(self.path), vocab_only=True, verbose=False)
        try:
            self.metadata = dict(llama.metadata)
        finally:
            llama.close()

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", "llama"))

    @property
    def context_length(self) -> int:
        value = self.metadata.get(f"{self.architecture}.context_length")
        try:
            return int(value)
        except (TypeError, ValueError):
            return DEFAULT_NUM_CTX

    @property
    def has_template(self) -> bool:
        return "tokenizer.chat_template" in self.metadata

    def llama(self, n_ctx: int) -> Any:
        """The loaded model with a context of `n_ctx` (reloaded when it changes)."""
        n_ctx = max(256, min(n_ctx, self.context_length))
        if self._llama is None or self._n_ctx != n_ctx:
            from llama_cpp import Llama

            if self._llama is not None:
                self._llama.close()
                self._llama = None
            self._llama = Llama(
                str(self.path),
                n_ctx=n_ctx,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                verbose=False,
            )
            self._n_ctx = n_ctx
        return self._llama

    def details(self) -> dict[str, Any]:
        size = self.metadata.get("general.size_label") or ""
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.architecture,
            "families": [self.architecture],
            "parameter_size": str(size),
            "quantization_level": _quantization(self.metadata.get("general.file_type")),
        }

    def entry(self) -> dict[str, Any]:
        stat = self.path.stat()
        return {
            "name": self.name,
            "model": self.name,
            "modified_at": datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(),
            "size": stat.st_size,
            "digest": hashlib.sha256(f"{self.path}:{stat.st_size}".encode()).hexdigest(),
            "details": self.details(),
        }


# llama.cpp's LLAMA_FTYPE values for the quantisations the registry's models use.
_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 15: "Q4_K_M", 17: "Q5_K_M"}


def _quantization(value: Any) -> str:
    try:
        return _FILE_TYPES.get(int(value), str(value))
    except (TypeError, ValueError):
        return ""


@dataclass
class Generation:
    """One request's answer as it is produced."""

    pieces: Any  # iterator of (text, None) ... then a final (None, finish_reason)
    prompt_tokens: int = 0
    eval_tokens: int = 0
    started: float = 0.0
    first_token: float = 0.0
    finished: float = 0.0
    finish_reason: str = "stop"


class ModelServer:
    """The models and the one-at-a-time generation lock."""

    def __init__(self, models: list[Model]) -> None:
        self.models = {m.name: m for m in models}
        self.busy = threading.Lock()

    def find(self, name: Any) -> Model:
        if not isinstance(name, str) or not name.strip():
            raise RequestError(400, "model is required")
        model = self.models.get(_with_tag(name.strip()))
        if model is None:
            raise RequestError(404, f'model "{name}" not found, try pulling it first')
        return model

    def generate(
        self,
        model: Model,
        messages: list[dict[str, Any]],
        *,
        schema: dict[str, Any] | None,
        json_mode: bool,
        num_ctx: int,
        num_predict: int,
        temperature: float,
        seed: int | None,
        alive: Any,
    ):
        """Yield text pieces as the model writes them; the last item is the
        finished `Generation`. Holds the generation lock throughout (one answer at
        a time); stops early when `alive()` turns false (the client left)."""
        with self.busy:
            started = time.perf_counter()
            llama = model.llama(num_ctx)
            text_prompt = "".join(str(m.get("content", "")) for m in messages)
            prompt_tokens = len(llama.tokenize(text_prompt.encode("utf-8"), add_bos=False))
            if prompt_tokens + 16 > llama.n_ctx():
                raise RequestError(
                    400,
                    f"the input length ({prompt_tokens} tokens) exceeds the context length "
                    f"({llama.n_ctx()})",
                )
            kwargs: dict[str, Any] = {
                "messages": messages,
                "temperature": temperature,
                "max_tokens": num_predict,
                "stream": True,
            }
            if seed is not None:
                kwargs["seed"] = seed
            if schema is not None:
                kwargs["response_format"] = {"type": "json_object", "schema": schema}
            elif json_mode:
                kwargs["response_format"] = {"type": "json_object"}
            # What the context held before: llama.cpp keeps the prefix a new prompt
            # shares with it and reads only the rest.
            before = list(llama._input_ids[: llama.n_tokens])
            try:
                stream = llama.create_chat_completion(**kwargs)
            except ValueError as exc:
                raise RequestError(400, str(exc)) from None
            result = Generation(pieces=None, started=started)
            count = 0
            for chunk in stream:
                choice = chunk["choices"][0]
                piece = choice.get("delta", {}).get("content") or ""
                if choice.get("finish_reason"):
                    result.finish_reason = choice["finish_reason"]
                if piece:
                    count += 1
                    if not result.first_token:
                        result.first_token = time.perf_counter()
                    yield piece
                if not alive():
                    stream.close()
                    result.finish_reason = "cancelled"
                    break
            result.finished = time.perf_counter()
            result.first_token = result.first_token or result.finished
            result.eval_tokens = count
            prompt = list(llama._input_ids[: max(0, llama.n_tokens - count)])
            # Ollama counts the prompt tokens it evaluated, not those it found in its
            # cache: counting those would make a cached read look ten times as fast,
            # and a client would give a long new prompt too little time.
            cached = 0
            for a, b in zip(before, prompt, strict=False):
                if a != b:
                    break
                cached += 1
            total = len(prompt) or prompt_tokens
            result.prompt_tokens = max(1, total - min(cached, total - 1))
            # One line a generation in the server's log: what a slow run spent its time on.
            print(
                f"{_now()} {model.name}: {result.prompt_tokens} prompt tokens"
                f" ({total - result.prompt_tokens} cached) in"
                f" {result.first_token - started:.1f} s, {count} written in"
                f" {result.finished - result.first_token:.1f} s ({result.finish_reason})",
                file=sys.stderr,
                flush=True,
            )
            yield result


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LlamaOllama"

    @property
    def models(self) -> ModelServer:
        return self.server.models  # type: ignore[attr-defined, no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if os.environ.get("LLAMA_SERVER_LOG"):
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    # ---- plumbing -------------------------------------------------------------

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        try:
            body = json.loads(raw)
        except ValueError:
            raise RequestError(400, "invalid character in request body") from None
        if not isinstance(body, dict):
            raise RequestError(400, "request body must be a JSON object")
        return body

    def _send(self, status: int, payload: Any, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def _start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _alive(self) -> bool:
        return not getattr(self, "_gone", False)

    # ---- routes ---------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802
        if self.path in ("/", ""):
            self._send(200, b"Ollama is running", "text/plain")
        elif self.path == "/api/version":
            self._send(200, {"version": VERSION})
        elif self.path == "/api/tags":
            self._send(200, {"models": [m.entry() for m in self.models.models.values()]})
        elif self.path == "/api/ps":
            self._send(200, {"models": []})
        elif self.path == "/v1/models":
            self._send(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m.name, "object": "model", "created": 0, "owned_by": "library"}
                        for m in self.models.models.values()
                    ],
                },
            )
        else:
            self._send(404, b"404 page not found", "text/plain")

    def do_POST(self) -> None:  # noqa: N802
        openai = self.path.startswith("/v1/")
        try:
            body = self._body()
            if self.path == "/api/show":
                self._show(body)
            elif self.path == "/api/chat":
                self._chat(body)
            elif self.path == "/v1/chat/completions":
                self._completions(body)
            else:
                self._send(404, b"404 page not found", "text/plain")
        except RequestError as exc:
            if openai:
                kind = "not_found_error" if exc.status == 404 else "invalid_request_error"
                self._send(exc.status, {"error": {"message": exc.message, "type": kind}})
            else:
                self._send(exc.status, {"error": exc.message})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _show(self, body: dict[str, Any]) -> None:
        model = self.models.find(body.get("model") or body.get("name"))
        # llama.cpp gives every value as text; Ollama sends numbers as numbers.
        info = {
            k: _typed(v)
            for k, v in model.metadata.items()
            if not k.startswith("tokenizer.ggml.") and k != "tokenizer.chat_template"
        }
        self._send(
            200,
            {
                "modelfile": f"FROM {model.path}\n",
                "parameters": "",
                "template": model.metadata.get("tokenizer.chat_template", ""),
                "details": model.details(),
                "model_info": info,
                "capabilities": ["completion"],
                "modified_at": model.entry()["modified_at"],
            },
        )

    @staticmethod
    def _number(value: Any, default: float, kind: type = float) -> Any:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RequestError(400, f"invalid option value {value!r}")
        return kind(value)

    def _messages(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise RequestError(400, "messages are required")
        out = []
        for m in messages:
            if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant"):
                raise RequestError(400, "invalid message role")
            out.append({"role": m["role"], "content": str(m.get("content") or "")})
        return out

    def _chat(self, body: dict[str, Any]) -> None:
        model = self.models.find(body.get("model"))
        if body.get("think") is True:
            raise RequestError(400, f'"{model.name}" does not support thinking')
        messages = self._messages(body)
        options = body.get("options") or {}
        if not isinstance(options, dict):
            raise RequestError(400, "options must be an object")
        fmt = body.get("format")
        schema = fmt if isinstance(fmt, dict) else None
        if fmt not in (None, "", "json") and schema is None:
            raise RequestError(400, f"invalid format {fmt!r}")
        num_predict = self._number(options.get("num_predict"), DEFAULT_NUM_PREDICT, int)
        if num_predict < 0:
            num_predict = DEFAULT_NUM_PREDICT
        seed = options.get("seed")
        generation = self.models.generate(
            model,
            messages,
            schema=schema,
            json_mode=fmt == "json",
            num_ctx=self._number(options.get("num_ctx"), DEFAULT_NUM_CTX, int),
            num_predict=num_predict,
            temperature=self._number(options.get("temperature"), 0.8),
            seed=int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None,
            alive=self._alive,
        )
        base = {"model": model.name}
        streaming = body.get("stream", True) is not False
        text: list[str] = []
        started = False
        for item in generation:
            if isinstance(item, Generation):
                final = self._ollama_stats(item)
                if streaming:
                    line = {
                        **base,
                        "created_at": _now(),
                        "message": {"role": "assistant", "content": ""},
                    }
                    self._chunk((json.dumps({**line, **final}) + "\n").encode())
                    self._end_stream()
                else:
                    message = {"role": "assistant", "content": "".join(text)}
                    self._send(200, {**base, "created_at": _now(), "message": message, **final})
                return
            if not streaming:
                text.append(item)
                continue
            if not started:
                # The status line goes out with the first token (errors before it
                # still get their own status), as Ollama does.
                self._start_stream("application/x-ndjson")
                started = True
            line = {
                **base,
                "created_at": _now(),
                "message": {"role": "assistant", "content": item},
                "done": False,
            }
            try:
                self._chunk((json.dumps(line) + "\n").encode())
            except OSError:
                self._gone = True
        if not started and streaming:
            self._start_stream("application/x-ndjson")

    @staticmethod
    def _ollama_stats(g: Generation) -> dict[str, Any]:
        ns = 1_000_000_000
        reason = "length" if g.finish_reason == "length" else "stop"
        return {
            "done": True,
            "done_reason": reason,
            "total_duration": int((g.finished - g.started) * ns),
            "load_duration": 0,
            "prompt_eval_count": g.prompt_tokens,
            "prompt_eval_duration": int((g.first_token - g.started) * ns),
            "eval_count": g.eval_tokens,
            "eval_duration": int((g.finished - g.first_token) * ns),
        }

    def _completions(self, body: dict[str, Any]) -> None:
        model = self.models.find(body.get("model"))
        messages = self._messages(body)
        fmt = body.get("response_format") or {}
        schema = None
        json_mode = False
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            spec = fmt.get("json_schema") or {}
            schema = spec.get("schema") if isinstance(spec, dict) else None
            if not isinstance(schema, dict):
                raise RequestError(400, "response_format.json_schema.schema is required")
        elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
            json_mode = True
        elif fmt and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
            raise RequestError(400, "response_format.type must be text, json_object or json_schema")
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        seed = body.get("seed")
        generation = self.models.generate(
            model,
            messages,
            schema=schema,
            json_mode=json_mode,
            num_ctx=model.context_length if body.get("num_ctx") is None else int(body["num_ctx"]),
            num_predict=self._number(max_tokens, DEFAULT_NUM_PREDICT, int),
            temperature=self._number(body.get("temperature"), 1.0),
            seed=int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None,
            alive=self._alive,
        )
        ident = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        base = {"id": ident, "created": created, "model": model.name}
        streaming = bool(body.get("stream"))
        text: list[str] = []
        started = False
        for item in generation:
            if isinstance(item, Generation):
                reason = "length" if item.finish_reason == "length" else "stop"
                usage = {
                    "prompt_tokens": item.prompt_tokens,
                    "completion_tokens": item.eval_tokens,
                    "total_tokens": item.prompt_tokens + item.eval_tokens,
                }
                if streaming:
                    if not started:
                        self._start_stream("text/event-stream")
                    last = {
                        **base,
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
                        "usage": usage,
                    }
                    self._chunk(f"data: {json.dumps(last)}\n\n".encode())
                    self._chunk(b"data: [DONE]\n\n")
                    self._end_stream()
                else:
                    message = {"role": "assistant", "content": "".join(text)}
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
            if not streaming:
                text.append(item)
                continue
            delta: dict[str, Any] = {"content": item}
            if not started:
                self._start_stream("text/event-stream")
                started = True
                delta["role"] = "assistant"
            chunk = {
                **base,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
            try:
                self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
            except OSError:
                self._gone = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    models: ModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", action="append", required=True, metavar="NAME=PATH", help="a GGUF file"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    models = []
    for spec in args.model:
        name, _, path = spec.partition("=")
        model = Model(_with_tag(name.strip()), Path(path), args.threads)
        model.read_metadata()
        models.append(model)
    server = Server((args.host, args.port), Handler)
    server.models = ModelServer(models)
    port = server.server_address[1]
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(port))
        tmp.replace(args.port_file)
    print(f"listening on http://{args.host}:{port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
