"""The language model: a local Ollama server through the official `ollama` client.

Small local models are unreliable narrators. Asked for JSON they wrap it in
markdown, stop half-way, drop fields, or hand back the example from the prompt.
`LanguageModel.structured` asks with a JSON schema as `format`, parses the
reply tolerantly (`parse_json_reply`), rejects copied examples (`is_echo`),
runs the caller's validator, and re-asks a bounded number of times before
raising `LanguageModelError` with the last problem in words a person can act on.

Real local models need more than a bare request (`_send`):

- the reply is *streamed*, so `timeout` bounds the silence between tokens, not
  the whole answer: a slow 7B model that keeps writing is not cut off;
- `num_ctx` is sized to the prompt (in a few fixed steps, since every new size
  reloads the model) because Ollama's default context silently drops the
  start of a long prompt; `keep_alive` keeps the model loaded between calls;
- `done_reason: "length"` means the reply was cut at `num_predict`: it is never
  repaired and kept, but asked again with room to finish, and reported if it
  still does not fit;
- a reply that does not parse or validate is re-asked *with the problem in the
  conversation*, not resent as the identical request.

`probe` is the one connection check (server down, model not pulled, ready)
that the settings pane, the status bar, the CLI and the fallbacks all use.

Callers decide what to do without a model (the rules path); this module only
says clearly why the model was not usable. No Qt here.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import ollama
import pydantic
from rapidfuzz import fuzz

from core.settings import TIMEOUT_ENV
from core.text import repair_strings, without_surrogates
from core.types import EngramError

__all__ = [
    "TIMEOUT_ENV",
    "LanguageModel",
    "LanguageModelError",
    "LlmSettings",
    "ModelStatus",
    "is_echo",
    "parse_json_reply",
    "strip_think",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Listing models must feel instant in the settings pane and must not stall a
# worker deciding between the model and the rules path.
PROBE_TIMEOUT = 2.0
# Two normalised texts at least this similar (rapidfuzz ratio, 0..100) count as a copy.
ECHO_SIMILARITY = 90.0
# Fuzzy matching of very short strings flags coincidences; below this only exact copies count.
ECHO_MIN_FUZZY_LENGTH = 16
# Context sizes sent as num_ctx: the smallest that holds prompt and reply. Few
# steps, because Ollama reloads the model whenever num_ctx changes.
CONTEXT_STEPS = (4096, 8192, 16384, 32768)
# A conservative token estimate for sizing the context: ~3 characters a token
# (English is nearer 4), plus the chat template's overhead per message.
CHARS_PER_TOKEN = 3
TOKENS_PER_MESSAGE = 16
# How much of a rejected reply is quoted back when asking again.
REASK_QUOTE_CHARS = 1500


class LanguageModelError(EngramError):
    """The language model could not give a usable answer; the message says why.

    `kind` lets callers react without parsing the message: "unreachable",
    "timeout", "http", "model" (not installed), "config" (no model or a bad
    host), "invalid" (no usable answer after the retries), "truncated" (every
    reply was cut at the token limit).
    """

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class LlmSettings:
    host: str = "http://127.0.0.1:11434"
    model: str = ""
    # Seconds without a byte from the server (replies stream: a model that keeps
    # writing is never cut by it).
    timeout: float = 60.0
    retries: int = 2
    temperature: float = 0.1
    # Tokens a reply may take; a reply cut there is asked again with twice the
    # room, up to max_predict.
    num_predict: int = 2048
    max_predict: int = 8192
    # How long Ollama keeps the model loaded after a call (its default is 5 minutes).
    keep_alive: str = "30m"


def context_size(messages: Sequence[dict[str, str]], num_predict: int) -> int:
    """The num_ctx that holds `messages` and a reply of `num_predict` tokens.

    LanguageModelError when even the largest step cannot: Ollama would drop the
    prompt's start without a word, so the call is refused with the reason."""
    chars = sum(len(m.get("content", "")) for m in messages)
    needed = -(-chars // CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(messages) + num_predict
    size = next((n for n in CONTEXT_STEPS if n >= needed), None)
    if size is None:
        raise LanguageModelError(
            f"the prompt and its reply need about {needed:,} tokens, more than the "
            f"{CONTEXT_STEPS[-1]:,} Engram asks Ollama for (the model would silently "
            "lose the prompt's start): ask with a smaller budget",
            "config",
        )
    return size


@dataclass(frozen=True)
class ModelStatus:
    """What one connection check found: the model is usable, or why not.

    `state`: "ready"; "none" (no model chosen); "down" (nothing answers at the
    host, or a timeout); "missing" (the server answers but the model is not
    pulled); "error" (a bad host, or something that is not an Ollama server).
    """

    state: str
    message: str  # a sentence for the settings pane and the CLI
    host: str = ""
    model: str = ""
    installed: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def reason(self) -> str:
        """Why the model is not used, short enough for a status bar or a note."""
        if self.state == "none":
            return "no language model chosen"
        if self.state == "down":
            return f"Ollama not reachable at {self.host}"
        if self.state == "missing":
            return f"'{self.model}' not installed at {self.host} (run `ollama pull {self.model}`)"
        if self.state == "error":
            return self.message
        return ""


class _Retry(Exception):
    """A failure worth asking again for (timeout, 5xx, broken connection, bad answer,
    a reply cut at the token limit). `reply` is the rejected answer, quoted back
    when asking again."""

    def __init__(self, reason: str, kind: str = "invalid", reply: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.reply = reply


# ---- reply cleaning ---------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
# A fenced block, tolerating a missing closing fence (the reply was cut off).
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_CLOSER = {"{": "}", "[": "]"}
# Give up looking for JSON after this many candidate openings; replies are short.
_MAX_STARTS = 64


def strip_think(text: str) -> str:
    """Remove reasoning blocks that thinking models put into the content."""
    text = _THINK_BLOCK.sub("", text)
    # A closing tag without its opener: the template opened the block in the prompt.
    closings = list(_THINK_CLOSE.finditer(text))
    if closings:
        text = text[closings[-1].end() :]
    # An opener never closed (answer cut off mid-thought): keep what follows the tag.
    return _THINK_OPEN.sub("", text)


def parse_json_reply(text: str) -> Any:
    """The JSON value in a model's reply, repaired where that is safe.

    Handles markdown fences, prose before and after, `<think>` blocks, trailing
    commas, Python-style quoting, and truncation at the end (closes an open
    string and open brackets, or cuts back to the last complete element).
    Raises ValueError when no JSON object or array can be recovered.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected the reply text, got {type(text).__name__}")
    cleaned = strip_think(text).strip().lstrip("\ufeff")
    if not cleaned:
        raise ValueError("the reply is empty")
    try:
        return repair_strings(json.loads(cleaned))
    except RecursionError:
        raise ValueError("the reply's JSON is nested too deeply to be an answer") from None
    except ValueError:
        pass
    candidates = [m.group(1) for m in _FENCE.finditer(cleaned) if m.group(1).strip()]
    candidates.append(cleaned)
    for candidate in candidates:
        try:
            found, value = _extract_json(candidate)
        except RecursionError:
            raise ValueError("the reply's JSON is nested too deeply to be an answer") from None
        if found:
            return repair_strings(value)
    preview = cleaned[:80] + ("…" if len(cleaned) > 80 else "")
    raise ValueError(f"no JSON object or array could be recovered from {preview!r}")


def _extract_json(text: str) -> tuple[bool, Any]:
    """The longest JSON value among the top-level bracketed spans of `text`.

    Longest, not first: prose such as "Step [1]:" parses too, but the answer is
    the big object after it.
    """
    best: tuple[int, Any] | None = None
    tried = 0
    i = 0
    while i < len(text) and tried < _MAX_STARTS:
        if text[i] not in "{[":
            i += 1
            continue
        tried += 1
        status, end = _scan_balanced(text, i)
        if status == "balanced":
            found, value = _loads_lenient(text[i:end])
            if found:
                if best is None or end - i > best[0]:
                    best = (end - i, value)
                i = end
                continue
        elif status == "open":
            found, value = _repair_truncated(text[i:])
            if found:
                if best is None or len(text) - i > best[0]:
                    best = (len(text) - i, value)
                break
        i += 1
    return (True, best[1]) if best is not None else (False, None)


def _scan_balanced(text: str, start: int) -> tuple[str, int]:
    """("balanced", end) | ("open", len) when cut off | ("mismatch", i)."""
    stack: list[str] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            stack.append(c)
        elif c in "}]":
            if not stack or _CLOSER[stack[-1]] != c:
                return "mismatch", i
            stack.pop()
            if not stack:
                return "balanced", i + 1
    return "open", len(text)


def _loads_lenient(fragment: str) -> tuple[bool, Any]:
    for attempt in (fragment, _drop_trailing_commas(fragment)):
        try:
            return True, json.loads(attempt)
        except ValueError:
            continue
    if "'" in fragment:
        # Small models sometimes answer with a Python literal: {'a': 'b'}.
        try:
            value = ast.literal_eval(fragment)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False, None
        if isinstance(value, dict | list):
            return True, value
    return False, None


def _drop_trailing_commas(text: str) -> str:
    out: list[str] = []
    in_string = escaped = False
    n = len(text)
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == ",":
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            if j == n or text[j] in "}]":
                continue
        out.append(c)
    return "".join(out)


def _repair_truncated(fragment: str) -> tuple[bool, Any]:
    """Close a reply that stops mid-value; else cut back to the last whole element."""
    stack: list[str] = []
    # For each open object: is the next string a key?
    expect_key: list[bool] = []
    # (cut index, closing brackets needed there): fragment[:cut] + closers is whole.
    safe: list[tuple[int, str]] = []
    in_string = escaped = string_is_key = False

    def closers() -> str:
        return "".join(_CLOSER[c] for c in reversed(stack))

    for i, c in enumerate(fragment):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
                if not string_is_key:
                    safe.append((i + 1, closers()))
            continue
        if c == '"':
            in_string = True
            string_is_key = bool(stack) and stack[-1] == "{" and expect_key[-1]
        elif c in "{[":
            stack.append(c)
            expect_key.append(c == "{")
            safe.append((i + 1, closers()))
        elif c in "}]":
            if not stack or _CLOSER[stack[-1]] != c:
                return False, None
            stack.pop()
            expect_key.pop()
            if not stack:
                return _loads_lenient(fragment[: i + 1])
            safe.append((i + 1, closers()))
        elif c == ",":
            safe.append((i, closers()))
            if stack[-1] == "{":
                expect_key[-1] = True
        elif c == ":" and stack and stack[-1] == "{":
            expect_key[-1] = False

    # First try finishing in place: close a cut-off value string, fill a missing
    # value. A half-written key is not worth keeping: it is dropped below.
    if not (in_string and string_is_key):
        tail = fragment
        if in_string:
            tail = (tail[:-1] if escaped else tail) + '"'
        tail = tail.rstrip()
        if tail.endswith(","):
            tail = tail[:-1]
        elif tail.endswith(":"):
            tail += " null"
        found, value = _loads_lenient(tail + closers())
        if found:
            return True, value
    # Otherwise drop the partial element (a half-written key, `tru`, `12.`).
    for cut, close in reversed(safe[-8:]):
        found, value = _loads_lenient(fragment[:cut].rstrip().rstrip(",") + close)
        if found:
            return True, value
    return False, None


# ---- copied examples --------------------------------------------------------------

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def _normalize(text: str) -> str:
    return _NON_WORD.sub(" ", text.casefold()).strip()


def is_echo(text: str, examples: Iterable[str]) -> bool:
    """True when `text` is one of `examples` again (normalised equality or near-identical)."""
    mine = _normalize(text)
    if not mine:
        return False
    for example in examples:
        theirs = _normalize(example)
        if not theirs:
            continue
        if mine == theirs:
            return True
        if (
            min(len(mine), len(theirs)) >= ECHO_MIN_FUZZY_LENGTH
            and fuzz.ratio(mine, theirs) >= ECHO_SIMILARITY
        ):
            return True
    return False


def _strings_in(value: Any) -> Iterable[str]:
    """Every string value (not key) inside a parsed reply."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings_in(item)


def _find_echo(value: Any, raw: str, examples: Sequence[str]) -> str | None:
    if is_echo(raw, examples):
        return raw
    for text in _strings_in(value):
        if is_echo(text, examples):
            return text
    return None


def _describe_validation(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return f"missing field {exc.args[0]!r}"
    detail = str(exc).strip()
    return detail or type(exc).__name__


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reask(messages: list[dict[str, str]], problem: _Retry) -> list[dict[str, str]]:
    """The conversation again, with the rejected reply and what was wrong with it."""
    quoted = problem.reply.strip()
    if len(quoted) > REASK_QUOTE_CHARS:
        quoted = quoted[:REASK_QUOTE_CHARS] + "…"
    return [
        *messages,
        {"role": "assistant", "content": quoted or "(no answer)"},
        {
            "role": "user",
            "content": f"That answer could not be used: {problem.reason}. "
            "Answer the request above again, correctly and completely, "
            "in the requested form only.",
        },
    ]


def _last_sentence(text: str) -> str:
    """`text` up to its last sentence end (all of it when it has none)."""
    ends = [text.rfind(mark) for mark in (". ", "! ", "? ", ".\n", "!\n", "?\n")]
    end = max(ends)
    if text.rstrip().endswith((".", "!", "?")):
        return text.rstrip()
    return text[: end + 1] if end > 0 else text.rstrip()


def _with_tag(name: str) -> str:
    name = name.strip().casefold()
    return name if ":" in name else f"{name}:latest"


# ---- the model --------------------------------------------------------------------


class LanguageModel:
    """One configured Ollama model. Thread-safe for concurrent calls."""

    def __init__(self, settings: LlmSettings) -> None:
        self.settings = settings
        self._client: ollama.Client | None = None
        self._probe: ollama.Client | None = None
        self._lock = threading.Lock()
        # Sent as think=False so thinking models answer directly; dropped if a
        # server ever refuses the field.
        self._send_think = True

    @property
    def name(self) -> str:
        return self.settings.model

    @property
    def host(self) -> str:
        return self.settings.host

    def close(self) -> None:
        with self._lock:
            clients = (self._client, self._probe)
            self._client = self._probe = None
        for client in clients:
            if client is not None:
                client.close()

    def __enter__(self) -> LanguageModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- clients --------------------------------------------------------------------

    def _make_client(self, timeout: float) -> ollama.Client:
        try:
            return ollama.Client(host=self.settings.host, timeout=timeout)
        except (ValueError, httpx.InvalidURL) as exc:
            raise LanguageModelError(
                f"the Ollama host {self.settings.host!r} is not a valid address ({exc})", "config"
            ) from None

    def _chat_client(self) -> ollama.Client:
        with self._lock:
            if self._client is None:
                self._client = self._make_client(self.settings.timeout)
            return self._client

    def _probe_client(self) -> ollama.Client:
        with self._lock:
            if self._probe is None:
                self._probe = self._make_client(min(self.settings.timeout, PROBE_TIMEOUT))
            return self._probe

    # ---- listing --------------------------------------------------------------------

    def models(self) -> list[str]:
        """Names of the models installed on the server (e.g. 'llama3.2:latest')."""
        host = self.settings.host
        timeout = min(self.settings.timeout, PROBE_TIMEOUT)
        client = self._probe_client()
        try:
            listing = client.list()
        except ConnectionError:
            raise self._unreachable() from None
        except httpx.ConnectTimeout:
            raise self._unreachable() from None
        except httpx.TimeoutException:
            raise LanguageModelError(
                f"timeout: Ollama at {host} did not answer within {timeout:g} s", "timeout"
            ) from None
        except ollama.ResponseError as exc:
            raise LanguageModelError(
                f"Ollama at {host} answered HTTP {exc.status_code}: {exc.error}", "http"
            ) from None
        except httpx.TransportError as exc:
            raise LanguageModelError(
                f"the connection to Ollama at {host} failed ({exc or type(exc).__name__})",
                "unreachable",
            ) from None
        except (ValueError, pydantic.ValidationError):
            raise LanguageModelError(
                f"{host} does not answer like an Ollama server (unexpected model list)", "http"
            ) from None
        names: list[str] = []
        for entry in listing.models:
            if entry.model and entry.model not in names:
                names.append(entry.model)
        return names

    def _listed(self, names: Iterable[str]) -> bool:
        wanted = _with_tag(self.settings.model)
        return any(_with_tag(n) == wanted for n in names)

    def probe(self) -> ModelStatus:
        """The one connection check: ready, or why not (server down, model not
        pulled, no model chosen, not an Ollama server). Never raises."""
        host, model = self.settings.host, self.settings.model.strip()
        try:
            names = self.models()
        except LanguageModelError as exc:
            state = "down" if exc.kind in ("unreachable", "timeout") else "error"
            return ModelStatus(state, str(exc), host, model)
        except Exception as exc:  # noqa: BLE001 - a probe must not raise, whatever broke
            log.debug("language model probe failed", exc_info=True)
            return ModelStatus("error", f"Connection test to {host} failed: {exc}", host, model)
        count = f"{len(names)} model{'' if len(names) == 1 else 's'}"
        installed = f" (installed: {', '.join(names[:8])}{', …' if len(names) > 8 else ''})"
        head = f"Connected to {host}: {count}"
        listed = tuple(names)
        if not model:
            message = f"{head}; no model chosen" + (installed if names else "")
            return ModelStatus("none", message, host, model, listed)
        if self._listed(names):
            return ModelStatus("ready", f"{head}; '{model}' available", host, model, listed)
        hint = f"'{model}' is not installed — run `ollama pull {model}`"
        message = f"{head}, but {hint}" + (installed if names else "")
        return ModelStatus("missing", message, host, model, listed)

    def available(self) -> bool:
        """The server answers quickly and has the configured model. Never raises."""
        if not self.settings.model.strip():
            return False
        return self.probe().ready

    def check(self) -> str:
        """A one-line connection test result for the settings pane. Never raises."""
        return self.probe().message

    # ---- asking ---------------------------------------------------------------------

    def chat(self, system: str, prompt: str, *, max_tokens: int | None = None) -> str:
        """A plain-text answer, reasoning blocks removed. With `max_tokens` the
        answer is at most that long: one cut at the limit is kept, up to its last
        full sentence, rather than asked again with more room."""

        def interpret(content: str, thinking: str) -> str:
            text = strip_think(content).strip()
            # Some thinking models put the whole answer in `thinking` when told not to think.
            text = text or strip_think(thinking).strip()
            if not text:
                raise _Retry("the model returned an empty answer", reply=content)
            return text

        return self._ask(system, prompt, None, interpret, limit=max_tokens)

    def structured(
        self,
        system: str,
        prompt: str,
        schema: dict[str, Any],
        validate: Callable[[Any], T],
        *,
        examples: Sequence[str] = (),
    ) -> T:
        """Ask for JSON matching `schema`; return `validate(parsed)`.

        `validate` raises ValueError / KeyError / TypeError on bad data; that,
        unparseable JSON, a copy of one of `examples`, a timeout or a 5xx each
        cost one attempt, up to 1 + `retries`.
        """

        def interpret(content: str, thinking: str) -> T:
            text = content if strip_think(content).strip() else thinking
            try:
                value = parse_json_reply(text)
            except ValueError as exc:
                raise _Retry(f"the reply was not valid JSON ({exc})", reply=text) from None
            try:
                echo = _find_echo(value, text, examples) if examples else None
                if echo is not None:
                    raise _Retry(
                        f"the answer copied the prompt's example ({_shorten(echo)!r})", reply=text
                    )
                return validate(value)
            except RecursionError:
                raise _Retry("the answer is nested too deeply to be read") from None
            except (ValueError, LookupError, TypeError) as exc:
                raise _Retry(
                    f"the answer failed validation: {_describe_validation(exc)}", reply=text
                ) from None

        return self._ask(system, prompt, schema, interpret)

    def _ask(
        self,
        system: str,
        prompt: str,
        fmt: dict[str, Any] | str | None,
        interpret: Callable[[str, str], T],
        limit: int | None = None,
    ) -> T:
        if not self.settings.model.strip():
            raise LanguageModelError("no language model is chosen (set one in Settings)", "config")
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": prompt}
        ]
        attempts = 1 + max(0, self.settings.retries)
        num_predict = max(1, self.settings.num_predict if limit is None else limit)
        asked = messages
        last = _Retry("no attempt was made")
        for attempt in range(1, attempts + 1):
            try:
                content, thinking, done_reason = self._send(asked, fmt, num_predict)
                if done_reason == "length" and limit is not None and fmt is None:
                    # The caller's limit: keep what fits, to its last full sentence.
                    return interpret(_last_sentence(content), thinking)
                if done_reason == "length":
                    # A reply cut mid-way may still parse once "repaired", minus
                    # what was cut: never keep it, ask again with room to finish.
                    raise _Retry(
                        f"the reply was cut off at the limit of {num_predict} tokens "
                        "(done_reason 'length')",
                        "truncated",
                    )
                return interpret(content, thinking)
            except _Retry as problem:
                last = problem
                log.info(
                    "language model attempt %d/%d failed: %s", attempt, attempts, problem.reason
                )
                if problem.kind == "truncated":
                    num_predict = min(num_predict * 2, max(num_predict, self.settings.max_predict))
                # A bad answer is asked about again with the problem in the
                # conversation; a timeout or a server error is simply resent.
                asked = _reask(messages, problem) if problem.kind == "invalid" else messages
        plural = "" if attempts == 1 else "s"
        raise LanguageModelError(
            f"language model '{self.name}' gave no usable answer after {attempts} attempt{plural}: "
            f"{last.reason}",
            last.kind,
        )

    def _send(
        self, messages: list[dict[str, str]], fmt: dict[str, Any] | str | None, num_predict: int
    ) -> tuple[str, str, str]:
        """(content, thinking, done_reason) of one streamed reply."""
        host, model = self.settings.host, self.settings.model.strip()
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "format": fmt,
            "options": {
                "temperature": self.settings.temperature,
                "num_ctx": context_size(messages, num_predict),
                "num_predict": num_predict,
            },
            "keep_alive": self.settings.keep_alive,
            "stream": True,
        }
        if self._send_think:
            kwargs["think"] = False
        client = self._chat_client()
        content: list[str] = []
        thinking: list[str] = []
        done_reason = ""
        try:
            for part in client.chat(**kwargs):
                message = part.message
                content.append(message.content or "")
                thinking.append(message.thinking or "")
                if part.done:
                    done_reason = part.done_reason or ""
        except (ConnectionError, httpx.ConnectError):
            # Streamed, the client hands back httpx's error rather than its own.
            raise self._unreachable() from None
        except httpx.ConnectTimeout:
            raise self._unreachable() from None
        except httpx.TimeoutException:
            raise _Retry(
                f"timeout: Ollama at {host} sent nothing for {self.settings.timeout:g} s "
                f"(set {TIMEOUT_ENV}, --ollama-timeout or Settings for a slower model)",
                "timeout",
            ) from None
        except httpx.TransportError as exc:
            # The server dropped the connection mid-request; it may be restarting.
            raise _Retry(
                f"the connection to Ollama at {host} broke ({exc or type(exc).__name__})",
                "unreachable",
            ) from None
        except ollama.ResponseError as exc:
            status, error = exc.status_code, str(exc.error)
            if status == 400 and "think" in error.lower() and self._send_think:
                self._send_think = False
                return self._send(messages, fmt, num_predict)
            if status == 404:
                raise LanguageModelError(
                    f"model '{model}' is not installed at {host} ({error}); "
                    f"run `ollama pull {model}`",
                    "model",
                ) from None
            if status >= 500 or status == 429:
                raise _Retry(f"Ollama at {host} answered HTTP {status}: {error}", "http") from None
            raise LanguageModelError(
                f"Ollama at {host} refused the request (HTTP {status}: {error})", "http"
            ) from None
        except (ValueError, pydantic.ValidationError) as exc:
            raise _Retry(f"Ollama at {host} sent a malformed response ({exc})", "http") from None
        # A reply may carry lone surrogates (a "\\ud800" escape): no store takes them.
        return (
            without_surrogates("".join(content)),
            without_surrogates("".join(thinking)),
            done_reason,
        )

    def _unreachable(self) -> LanguageModelError:
        return LanguageModelError(
            f"Ollama is not reachable at {self.settings.host} — is `ollama serve` running?",
            "unreachable",
        )


NO_MODEL = "no language model is chosen (Settings)"


class ModelChoice:
    """Use a model or fall back to rules, and close it if we made it: the one
    place that decides.

    `given` is the caller's model (the caller closes it); without one the
    configured model is made (`configured()`, None when none is chosen) and
    closed here. `model` is the model to use once it answered a probe, else
    None, and `status` says why (state "none" when there was no model at all).
    Close the choice (or use it as a context manager) when done."""

    def __init__(
        self, given: LanguageModel | None, configured: Callable[[], LanguageModel | None]
    ) -> None:
        self._owned = given is None
        self.model = given if given is not None else configured()
        if self.model is None:
            self.status = ModelStatus("none", NO_MODEL)
            return
        self.status = self.model.probe()
        if not self.status.ready:
            self.close()

    @property
    def why_not(self) -> str:
        """Why no model is used, for a note ("" when one is)."""
        if self.model is not None:
            return ""
        return self.status.message if self.status.state == "none" else self.status.reason

    def close(self) -> None:
        """Close the model if it was made here; the choice holds no model after."""
        if self._owned and self.model is not None:
            self.model.close()
        self.model = None

    def __enter__(self) -> ModelChoice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
