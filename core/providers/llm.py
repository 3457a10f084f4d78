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
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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
    "ModelInfo",
    "ModelStatus",
    "Speed",
    "is_echo",
    "open_model",
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
# Nothing streams while the model reads the prompt: the first token may take
# the silence timeout plus the prompt's reading time. Until a reply measured the
# model's speed, assume a slow CPU (a 0.5B model on two busy cores reads ~60
# tokens/s; a 7B on a laptop fewer), with a margin for a busy machine.
ASSUMED_PROMPT_RATE = 30.0
PROMPT_MARGIN = 1.5
# A measured prompt rate counts once this many prompt tokens were seen.
MIN_MEASURED_TOKENS = 200
# A reply cut at its limit that says the same piece (a sentence, a JSON string)
# this often is a model that loops: more room only buys more of the loop.
LOOP_REPEATS = 3
# Pieces shorter than this repeat legitimately (names, dates, field values).
LOOP_MIN_CHARS = 20


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
    # room, up to max_predict. 2,048 is 2.5x the longest extraction reply a 0.5B
    # model wrote for a chunk (811 tokens); one more chance at 4,096 covers a
    # genuinely long chunk. More room than that only buys a looping model's next
    # 8,000 tokens (SmolLM2 135M filled every limit it was given).
    num_predict: int = 2048
    max_predict: int = 4096
    # How long Ollama keeps the model loaded after a call (its default is 5 minutes).
    keep_alive: str = "30m"
    # Sent with every call, so the same prompt gets the same answer (extraction
    # is repeatable); None lets the server choose.
    seed: int | None = 42
    # "ollama" (its own API) or "openai" (an OpenAI-compatible server:
    # llama-server, LM Studio, vLLM, Ollama's /v1); see `open_model`.
    provider: str = "ollama"


def prompt_tokens(messages: Sequence[dict[str, str]]) -> int:
    """A conservative estimate of the tokens `messages` take in the model's context."""
    chars = sum(len(m.get("content", "")) for m in messages)
    return -(-chars // CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(messages)


def context_size(
    messages: Sequence[dict[str, str]], num_predict: int, model_limit: int | None = None
) -> int:
    """The num_ctx that holds `messages` and a reply of `num_predict` tokens, no
    larger than the model's own context (`model_limit`, from /api/show) when known.

    LanguageModelError when even the largest step cannot: Ollama would drop the
    prompt's start without a word, so the call is refused with the reason."""
    needed = prompt_tokens(messages) + num_predict
    steps = CONTEXT_STEPS
    if model_limit and model_limit < CONTEXT_STEPS[-1]:
        # The model's own context lowers the steps; it never raises them (a
        # 128k context's KV cache would not fit a laptop).
        steps = tuple(n for n in CONTEXT_STEPS if n < model_limit) + (model_limit,)
    size = next((n for n in steps if n >= needed), None)
    if size is None:
        limit = steps[-1]
        whose = (
            "the model's own context"
            if model_limit and limit == model_limit
            else ("what Engram asks Ollama for")
        )
        raise LanguageModelError(
            f"the prompt and its reply need about {needed:,} tokens, more than the "
            f"{limit:,} of {whose} (the model would silently lose the prompt's start): "
            "ask with a smaller budget",
            "config",
        )
    return size


@dataclass(frozen=True)
class ModelInfo:
    """What the server says about a model (Ollama's /api/show): its own context
    length and what it can do, shown in Settings and used to size requests."""

    context_length: int | None = None
    capabilities: tuple[str, ...] = ()
    family: str = ""
    parameter_size: str = ""
    quantization: str = ""

    @property
    def can_chat(self) -> bool:
        # Servers before capabilities were reported list none: assume it chats.
        return not self.capabilities or "completion" in self.capabilities

    @property
    def thinks(self) -> bool:
        return "thinking" in self.capabilities

    def describe(self) -> str:
        """e.g. "qwen2 · 494M · Q4_K_M · context 32,768 tokens · completion"."""
        parts = [p for p in (self.family, self.parameter_size, self.quantization) if p]
        if self.context_length:
            parts.append(f"context {self.context_length:,} tokens")
        if self.capabilities:
            parts.append(", ".join(self.capabilities))
        return " · ".join(parts)


def model_info_from_show(show: Any) -> ModelInfo:
    """ModelInfo from an /api/show answer (the client's ShowResponse or a dict)."""

    def get(obj: Any, key: str) -> Any:
        if obj is None:
            return None
        if isinstance(obj, dict):
            return obj.get(key)
        return getattr(obj, key, None)

    info = get(show, "modelinfo") or get(show, "model_info") or {}
    details = get(show, "details")
    family = str(get(details, "family") or info.get("general.architecture") or "")
    context = None
    for key, value in info.items():
        if key.endswith(".context_length"):
            try:
                context = int(float(value)) if not isinstance(value, bool) else None
            except (TypeError, ValueError):
                continue
            if context and context > 0:
                break
            context = None
    return ModelInfo(
        context_length=context,
        capabilities=tuple(str(c) for c in (get(show, "capabilities") or ())),
        family=family,
        parameter_size=str(get(details, "parameter_size") or ""),
        quantization=str(get(details, "quantization_level") or ""),
    )


@dataclass
class Speed:
    """What the model's replies measured (Ollama's counts and durations): the
    prompt-reading and writing speeds, so a slow CPU model is given the time it
    needs to read a long prompt, and so a benchmark can report tokens/s."""

    calls: int = 0
    prompt_tokens: int = 0
    prompt_seconds: float = 0.0
    eval_tokens: int = 0
    eval_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, prompt_tokens: int, prompt_s: float, eval_tokens: int, eval_s: float) -> None:
        with self._lock:
            self.calls += 1
            self.prompt_tokens += max(0, prompt_tokens)
            self.prompt_seconds += max(0.0, prompt_s)
            self.eval_tokens += max(0, eval_tokens)
            self.eval_seconds += max(0.0, eval_s)

    @property
    def prompt_rate(self) -> float | None:
        """Prompt tokens read a second, once some were measured."""
        if self.prompt_seconds <= 0 or self.prompt_tokens < MIN_MEASURED_TOKENS:
            return None
        return self.prompt_tokens / self.prompt_seconds

    @property
    def eval_rate(self) -> float | None:
        if self.eval_seconds <= 0 or self.eval_tokens <= 0:
            return None
        return self.eval_tokens / self.eval_seconds


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
    # What the server says the model is and supports (None: it did not say).
    info: ModelInfo | None = None
    server: str = "Ollama"  # what kind of server, in messages
    pull_hint: str = ""  # how to get a missing model

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def reason(self) -> str:
        """Why the model is not used, short enough for a status bar or a note."""
        if self.state == "none":
            return "no language model chosen"
        if self.state == "down":
            return f"{self.server} not reachable at {self.host}"
        if self.state == "missing":
            hint = self.pull_hint or f"run `ollama pull {self.model}`"
            return f"'{self.model}' not installed at {self.host} ({hint})"
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


def _loop_in(text: str) -> tuple[str, int] | None:
    """The piece a runaway reply keeps repeating and how often, or None.

    Pieces are split at quotes, line ends and sentence ends, so a looping JSON
    reply (the same fact object again and again) and a looping text (the same
    sentence) are both seen, whatever the conversation."""
    counts: dict[str, int] = {}
    for raw in re.split(r'["\n]|(?<=[.!?])\s', text):
        piece = raw.strip()
        if len(piece) >= LOOP_MIN_CHARS:
            counts[piece] = counts.get(piece, 0) + 1
    if not counts:
        return None
    piece, times = max(counts.items(), key=lambda item: item[1])
    return (piece, times) if times >= LOOP_REPEATS else None


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


# What each model measured, shared by every LanguageModel of the same server and
# model in this process: reflect's model (made per call) knows how fast the one
# that extracted read its prompts.
_SPEEDS: dict[tuple[str, str], Speed] = {}
_SPEEDS_LOCK = threading.Lock()


def _speed_of(host: str, model: str) -> Speed:
    key = (host.strip().rstrip("/"), model.strip())
    with _SPEEDS_LOCK:
        return _SPEEDS.setdefault(key, Speed())


class _PhasedTransport(httpx.HTTPTransport):
    """One streamed reply, two read timeouts: a model reads the whole prompt
    before its first token, and Ollama sends nothing (not even the response's
    headers) until then; after that, tokens stream, and only silence between
    them means trouble. The wait for the headers is `first_wait` (set per call,
    per thread); the body's reads get the silence timeout. (httpcore reads the
    request's timeout dict when it starts reading the body, after this returns.)"""

    def __init__(self, silence: float | None) -> None:
        # silence None: the body's reads keep the first wait (a server that sends
        # its headers before it has read the prompt).
        super().__init__()
        self.silence = silence
        self._first = threading.local()

    def first_wait(self, seconds: float) -> None:
        self._first.seconds = seconds

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout")
        first = getattr(self._first, "seconds", None)
        if isinstance(timeout, dict) and first:
            timeout["read"] = first
        response = super().handle_request(request)
        if isinstance(timeout, dict) and self.silence is not None:
            timeout["read"] = self.silence
        return response


class LanguageModel:
    """One configured Ollama model. Thread-safe for concurrent calls."""

    provider = "ollama"
    server = "Ollama"

    def _pull_hint(self, model: str) -> str:
        return f"run `ollama pull {model}`"

    def __init__(self, settings: LlmSettings) -> None:
        self.settings = settings
        self._client: ollama.Client | None = None
        self._transport: _PhasedTransport | None = None
        self._probe: ollama.Client | None = None
        self._lock = threading.Lock()
        # Sent as think=False so thinking models answer directly; dropped if a
        # server ever refuses the field (or /api/show says it cannot think).
        self._send_think = True
        self._info: ModelInfo | None = None
        self._info_read = False
        self.speed = _speed_of(settings.host, settings.model)

    @property
    def name(self) -> str:
        return self.settings.model

    @property
    def host(self) -> str:
        return self.settings.host

    def close(self) -> None:
        with self._lock:
            clients = self._take_clients()
        for client in clients:
            if client is not None:
                client.close()

    def _take_clients(self) -> list[Any]:
        """The open clients, forgotten (under the lock): `close` closes them."""
        clients = [self._client, self._probe]
        self._client = self._probe = None
        return clients

    def __enter__(self) -> LanguageModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- clients --------------------------------------------------------------------

    def _make_client(self, timeout: float, **kwargs: Any) -> ollama.Client:
        try:
            return ollama.Client(host=self.settings.host, timeout=timeout, **kwargs)
        except (ValueError, httpx.InvalidURL) as exc:
            raise LanguageModelError(
                f"the Ollama host {self.settings.host!r} is not a valid address ({exc})", "config"
            ) from None

    def _chat_client(self) -> tuple[ollama.Client, _PhasedTransport]:
        with self._lock:
            if self._client is None:
                transport = _PhasedTransport(self.settings.timeout)
                self._client = self._make_client(self.settings.timeout, transport=transport)
                self._transport = transport
            assert self._transport is not None
            return self._client, self._transport

    def _first_wait(self, messages: Sequence[dict[str, str]]) -> float:
        """How long to wait for a reply's first token: the silence timeout, plus
        the time the model needs to read this prompt (nothing streams until it
        has), from its measured speed or, before any, a slow CPU's. Under a
        second of reading is left to the silence timeout."""
        rate = self.speed.prompt_rate or ASSUMED_PROMPT_RATE
        reading = prompt_tokens(messages) / rate * PROMPT_MARGIN
        if reading < 1.0:
            return self.settings.timeout
        return float(math.ceil(self.settings.timeout + reading))

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
            return ModelStatus(state, str(exc), host, model, server=self.server)
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
            info = self.info()
            if info is not None and not info.can_chat:
                return ModelStatus(
                    "error",
                    f"{head}; '{model}' cannot chat (it can: {', '.join(info.capabilities)}):"
                    " choose a chat model",
                    host,
                    model,
                    listed,
                    info,
                )
            about = f" ({info.describe()})" if info is not None and info.describe() else ""
            return ModelStatus(
                "ready", f"{head}; '{model}' available{about}", host, model, listed, info
            )
        hint = f"'{model}' is not installed — {self._pull_hint(model)}"
        message = f"{head}, but {hint}" + (installed if names else "")
        return ModelStatus(
            "missing",
            message,
            host,
            model,
            listed,
            server=self.server,
            pull_hint=self._pull_hint(model),
        )

    def info(self) -> ModelInfo | None:
        """What the server says about the model (/api/show), read once; None when
        it does not say (an older server, or no answer in time). Never raises."""
        if self._info_read:
            return self._info
        model = self.settings.model.strip()
        if not model:
            return None
        try:
            show = self._probe_client().show(model)
        except Exception:  # noqa: BLE001 - an optional detail: without it requests are sized as before
            log.debug("no /api/show for %s", model, exc_info=True)
            return None
        self._info = model_info_from_show(show)
        self._info_read = True
        if self._info.capabilities and not self._info.thinks:
            self._send_think = False
        return self._info

    def available(self) -> bool:
        """The server answers quickly and has the configured model. Never raises."""
        if not self.settings.model.strip():
            return False
        return self.probe().ready

    def check(self) -> str:
        """A one-line connection test result for the settings pane. Never raises."""
        return self.probe().message

    # ---- asking ---------------------------------------------------------------------

    def chat(
        self,
        system: str,
        prompt: str,
        *,
        on_tokens: Callable[[int], None] | None = None,
        max_tokens: int | None = None,
        on_cut: Callable[[int], None] | None = None,
    ) -> str:
        """A plain-text answer, reasoning blocks removed. `on_tokens(n)` is called
        as the reply streams (n pieces so far); an exception it raises (a cancel)
        abandons the call. With `max_tokens` the answer is at most that long: one
        cut at the limit is kept, up to its last full sentence, rather than asked
        again with more room, and `on_cut(max_tokens)` is told so the caller can
        say the answer was cut."""

        def interpret(content: str, thinking: str) -> str:
            text = strip_think(content).strip()
            # Some thinking models put the whole answer in `thinking` when told not to think.
            text = text or strip_think(thinking).strip()
            if not text:
                raise _Retry("the model returned an empty answer", reply=content)
            return text

        return self._ask(
            system, prompt, None, interpret, on_tokens, limit=max_tokens, on_cut=on_cut
        )

    def structured(
        self,
        system: str,
        prompt: str,
        schema: dict[str, Any],
        validate: Callable[[Any], T],
        *,
        examples: Sequence[str] = (),
        on_tokens: Callable[[int], None] | None = None,
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

        return self._ask(system, prompt, schema, interpret, on_tokens)

    def _ask(
        self,
        system: str,
        prompt: str,
        fmt: dict[str, Any] | str | None,
        interpret: Callable[[str, str], T],
        on_tokens: Callable[[int], None] | None = None,
        limit: int | None = None,
        on_cut: Callable[[int], None] | None = None,
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
                content, thinking, done_reason = self._send(asked, fmt, num_predict, on_tokens)
                if done_reason == "length" and limit is not None and fmt is None:
                    # The caller's limit: keep what fits, to its last full sentence.
                    whole = _last_sentence(content)
                    if not whole.endswith((".", "!", "?")):
                        # Not resent: the same request at the same limit and seed
                        # gets the same reply, and the caller's limit is never raised.
                        raise LanguageModelError(
                            f"language model '{self.name}' was cut off at the limit of "
                            f"{num_predict} tokens before its first full sentence",
                            "truncated",
                        )
                    kept = interpret(whole, thinking)
                    if on_cut is not None:
                        on_cut(num_predict)
                    return kept
                if done_reason == "length" and (loop := _loop_in(content or thinking)):
                    piece, times = loop
                    raise LanguageModelError(
                        f"language model '{self.name}' ran to the limit of {num_predict} "
                        f"tokens repeating itself ({_shorten(piece)!r} {times} times): "
                        "a model that loops does not finish with more room, so it was "
                        "not asked again",
                        "truncated",
                    )
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
                if problem.kind == "truncated" and limit is None:
                    # The caller's own limit is never raised.
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
        self,
        messages: list[dict[str, str]],
        fmt: dict[str, Any] | str | None,
        num_predict: int,
        on_tokens: Callable[[int], None] | None = None,
    ) -> tuple[str, str, str]:
        """(content, thinking, done_reason) of one streamed reply."""
        host, model = self.settings.host, self.settings.model.strip()
        info = self.info()
        options: dict[str, Any] = {
            "temperature": self.settings.temperature,
            "num_ctx": context_size(
                messages, num_predict, info.context_length if info is not None else None
            ),
            "num_predict": num_predict,
        }
        if self.settings.seed is not None:
            options["seed"] = self.settings.seed
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "format": fmt,
            "options": options,
            "keep_alive": self.settings.keep_alive,
            "stream": True,
        }
        if self._send_think:
            kwargs["think"] = False
        first_wait = self._first_wait(messages)
        client, transport = self._chat_client()
        transport.first_wait(first_wait)
        content: list[str] = []
        thinking: list[str] = []
        done_reason = ""
        pieces = 0
        try:
            for part in client.chat(**kwargs):
                message = part.message
                content.append(message.content or "")
                thinking.append(message.thinking or "")
                pieces += 1
                if on_tokens is not None:
                    on_tokens(pieces)
                if part.done:
                    done_reason = part.done_reason or ""
                    self._measure(part)
        except (ConnectionError, httpx.ConnectError):
            # Streamed, the client hands back httpx's error rather than its own.
            raise self._unreachable() from None
        except httpx.ConnectTimeout:
            raise self._unreachable() from None
        except httpx.TimeoutException:
            if pieces or first_wait == self.settings.timeout:
                silence = f"sent nothing for {self.settings.timeout:g} s" + (
                    " mid-answer" if pieces else ""
                )
            else:
                rate = self.speed.prompt_rate
                speed = f"{rate:.0f} tokens/s measured" if rate else "no speed measured yet"
                silence = (
                    f"sent nothing for {first_wait:g} s: {self.settings.timeout:g} s of "
                    f"silence plus the time to read a prompt of ~"
                    f"{prompt_tokens(messages):,} tokens ({speed})"
                )
            raise _Retry(
                f"timeout: Ollama at {host} {silence} "
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
                return self._send(messages, fmt, num_predict, on_tokens)
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

    def _measure(self, final: Any) -> None:
        """Add the final chunk's counts and durations (nanoseconds) to `speed`."""

        def number(name: str) -> float:
            value = getattr(final, name, None)
            return float(value) if isinstance(value, int | float) and value > 0 else 0.0

        self.speed.add(
            int(number("prompt_eval_count")),
            number("prompt_eval_duration") / 1e9,
            int(number("eval_count")),
            number("eval_duration") / 1e9,
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


def open_model(settings: LlmSettings) -> LanguageModel:
    """The model for `settings`, spoken to in its provider's protocol."""
    provider = settings.provider.strip().lower() or "ollama"
    if provider == "ollama":
        return LanguageModel(settings)
    if provider in ("openai", "openai-compatible"):
        from core.providers.openai_compat import OpenAICompatibleModel

        return OpenAICompatibleModel(settings)
    raise LanguageModelError(
        f"unknown language-model provider {settings.provider!r} (choose ollama or openai)",
        "config",
    )
