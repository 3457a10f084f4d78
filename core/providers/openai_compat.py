"""A language model behind an OpenAI-compatible server: llama.cpp's llama-server,
LM Studio, vLLM, Ollama's own /v1.

The same `LanguageModel` (core.providers.llm: asking, tolerant parsing, echo
checks, validation, bounded re-asks with the problem in the conversation,
token-limit handling, the prompt-reading allowance) over a second wire:

- GET  {base}/models                -> the model list (probe, Settings)
- POST {base}/chat/completions      -> `response_format` json_schema (strict),
  `max_tokens`, `temperature`, `seed`, `stream: true` (server-sent events
  ending in `data: [DONE]`, `finish_reason` "length" when cut), `usage`
  when the server sends it (`stream_options.include_usage`).

`base` is the address a person types ("http://127.0.0.1:8080"); "/v1" is
added when it is not there. An API key (ENGRAM_OPENAI_API_KEY) is sent as a
bearer token when set: local servers need none. No Qt here.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import httpx

from core.providers.llm import (
    PROBE_TIMEOUT,
    LanguageModel,
    LanguageModelError,
    LlmSettings,
    ModelInfo,
    _PhasedTransport,
    _Retry,
    context_size,
)
from core.settings import TIMEOUT_ENV
from core.text import without_surrogates

__all__ = ["API_KEY_ENV", "OpenAICompatibleModel", "api_base"]

log = logging.getLogger(__name__)

API_KEY_ENV = "ENGRAM_OPENAI_API_KEY"


def api_base(host: str) -> str:
    """The server's /v1 root for an address as a person types it."""
    base = host.strip().rstrip("/")
    if "://" not in base:
        base = f"http://{base}"
    return base if base.endswith("/v1") else f"{base}/v1"


class OpenAICompatibleModel(LanguageModel):
    """One model on an OpenAI-compatible server. Thread-safe for concurrent calls."""

    provider = "openai"
    server = "OpenAI-compatible server"

    def _pull_hint(self, model: str) -> str:
        return "load it in the server (its /v1/models does not list it)"

    def __init__(self, settings: LlmSettings) -> None:
        super().__init__(settings)
        self._http: httpx.Client | None = None
        self._probe_http: httpx.Client | None = None
        self._info_read = True  # no /api/show here: requests are sized as before
        self._send_think = False

    @property
    def base(self) -> str:
        return api_base(self.settings.host)

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(API_KEY_ENV, "").strip()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _http_client(self, probe: bool) -> httpx.Client:
        with self._lock:
            if probe:
                if self._probe_http is None:
                    self._probe_http = self._make(min(self.settings.timeout, PROBE_TIMEOUT))
                return self._probe_http
            if self._http is None:
                # Servers that send the response's headers at once and the first
                # token after reading the prompt: the body's first read needs the
                # reading time too, so it gets the first wait, not the silence.
                self._transport = _PhasedTransport(None)
                self._http = self._make(self.settings.timeout, transport=self._transport)
            return self._http

    def _make(self, timeout: float, **kwargs: Any) -> httpx.Client:
        try:
            return httpx.Client(
                base_url=self.base, timeout=timeout, headers=self._headers(), **kwargs
            )
        except (ValueError, httpx.InvalidURL) as exc:
            raise LanguageModelError(
                f"the server address {self.settings.host!r} is not valid ({exc})", "config"
            ) from None

    def _take_clients(self) -> list[Any]:
        clients = [self._http, self._probe_http, *super()._take_clients()]
        self._http = self._probe_http = None
        return clients

    def _unreachable(self) -> LanguageModelError:
        return LanguageModelError(
            f"no OpenAI-compatible server answers at {self.base} — is it running?",
            "unreachable",
        )

    # ---- listing --------------------------------------------------------------------

    def models(self) -> list[str]:
        client = self._http_client(probe=True)
        try:
            response = client.get("/models")
        except (httpx.ConnectError, httpx.ConnectTimeout):
            raise self._unreachable() from None
        except httpx.TimeoutException:
            raise LanguageModelError(
                f"timeout: the server at {self.base} did not answer within {PROBE_TIMEOUT:g} s",
                "timeout",
            ) from None
        except httpx.TransportError as exc:
            raise LanguageModelError(
                f"the connection to {self.base} failed ({exc or type(exc).__name__})",
                "unreachable",
            ) from None
        if response.status_code >= 400:
            raise LanguageModelError(
                f"{self.base} answered HTTP {response.status_code}: {_error_text(response)}",
                "http",
            )
        try:
            data = response.json()["data"]
            return list(dict.fromkeys(str(m["id"]) for m in data if m.get("id")))
        except (ValueError, KeyError, TypeError):
            raise LanguageModelError(
                f"{self.base} does not answer like an OpenAI-compatible server"
                " (unexpected model list)",
                "http",
            ) from None

    def _listed(self, names) -> bool:
        wanted = self.settings.model.strip().casefold()
        return any(n.casefold() == wanted for n in names)

    def info(self) -> ModelInfo | None:
        return None

    # ---- asking ---------------------------------------------------------------------

    def _send(
        self,
        messages: list[dict[str, str]],
        fmt: dict[str, Any] | str | None,
        num_predict: int,
        on_tokens: Callable[[int], None] | None = None,
    ) -> tuple[str, str, str]:
        model = self.settings.model.strip()
        context_size(messages, num_predict)  # refuse what no context would hold
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": self.settings.temperature,
            "max_tokens": num_predict,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.settings.seed is not None:
            body["seed"] = self.settings.seed
        if isinstance(fmt, dict):
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": fmt, "strict": True},
            }
        elif fmt == "json":
            body["response_format"] = {"type": "json_object"}
        first_wait = self._first_wait(messages)
        client = self._http_client(probe=False)
        self._transport.first_wait(first_wait)
        content: list[str] = []
        reason = ""
        pieces = 0
        started = time.perf_counter()
        first_token = 0.0
        usage: dict[str, Any] = {}
        try:
            with client.stream("POST", "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    self._refused(response)
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        raise _Retry(
                            f"the server at {self.base} sent a malformed event", "http"
                        ) from None
                    if isinstance(chunk.get("error"), dict | str):
                        raise _Retry(f"the server at {self.base} failed: {chunk['error']}", "http")
                    usage = chunk.get("usage") or usage
                    for choice in chunk.get("choices") or ():
                        piece = (choice.get("delta") or {}).get("content") or ""
                        if piece:
                            content.append(piece)
                            pieces += 1
                            first_token = first_token or time.perf_counter()
                            if on_tokens is not None:
                                on_tokens(pieces)
                        reason = choice.get("finish_reason") or reason
        except (httpx.ConnectError, httpx.ConnectTimeout):
            raise self._unreachable() from None
        except httpx.TimeoutException:
            waited = f"{first_wait:g} s" if not pieces else f"{self.settings.timeout:g} s"
            raise _Retry(
                f"timeout: the server at {self.base} sent nothing for {waited}"
                + (" mid-answer" if pieces else "")
                + f" (set {TIMEOUT_ENV}, --ollama-timeout or Settings for a slower model)",
                "timeout",
            ) from None
        except httpx.TransportError as exc:
            raise _Retry(
                f"the connection to {self.base} broke ({exc or type(exc).__name__})",
                "unreachable",
            ) from None
        finished = time.perf_counter()
        if usage:
            self.speed.add(
                int(usage.get("prompt_tokens") or 0),
                (first_token or finished) - started,
                int(usage.get("completion_tokens") or pieces),
                finished - (first_token or finished),
            )
        return without_surrogates("".join(content)), "", "length" if reason == "length" else reason

    def _refused(self, response: httpx.Response) -> None:
        status, error = response.status_code, _error_text(response)
        model = self.settings.model.strip()
        if status == 404:
            raise LanguageModelError(
                f"model '{model}' is not served at {self.base} ({error})", "model"
            )
        if status >= 500 or status == 429:
            raise _Retry(f"{self.base} answered HTTP {status}: {error}", "http")
        raise LanguageModelError(
            f"{self.base} refused the request (HTTP {status}: {error})", "http"
        )


def _error_text(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except ValueError:
        return response.text[:200]
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error or response.text[:200])
