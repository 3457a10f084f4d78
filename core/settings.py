"""Engine-wide settings: the language model a person chose.

Kept in `settings.json` in the data folder (not in a bank: the same Ollama
serves every bank). Environment variables override the file, so CI and
scripts can point at a test server without touching it. Ollama's own
`OLLAMA_HOST` (the variable its users already set, e.g. `0.0.0.0:11435` or
`http://gpu-box:11434`) is honoured as the host whenever no host was chosen
here (`ENGRAM_OLLAMA_HOST` and a host saved in Settings come first).

The fields' types, ranges, defaults and help are the spec's (`EngineFields` in
core/config.py); this module stays import-light (`engram banks` reads the
file on every start), so it wakes the spec only for a value it must check: one
being set (`with_values`, `--ollama-timeout`, the environment) or a stored one
that is not what `save` writes.
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from core.types import InvalidInputError

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
TIMEOUT_ENV = "ENGRAM_OLLAMA_TIMEOUT"
OLLAMA_HOST_ENV = "OLLAMA_HOST"
DEFAULT_HOST = "http://127.0.0.1:11434"
ENV = {
    "llm_provider": "ENGRAM_LLM_PROVIDER",
    "ollama_host": "ENGRAM_OLLAMA_HOST",
    "ollama_model": "ENGRAM_OLLAMA_MODEL",
    "ollama_timeout": TIMEOUT_ENV,
}


def parse_timeout(text: str) -> float:
    """`--ollama-timeout` and the settings pane: seconds, a clear error if not."""
    from core.config import SettingError, parse_setting

    try:
        return parse_setting("ollama_timeout", text)
    except SettingError as error:
        raise InvalidInputError(
            f"the Ollama timeout must be a positive number of seconds, got {text!r} ({error})"
        ) from None


@dataclass(frozen=True)
class EngineSettings:
    # Defaults and help: core/config.py's EngineFields (a test keeps them equal).
    ollama_host: str = DEFAULT_HOST
    ollama_model: str = ""  # empty: no language model, offline rules everywhere
    ollama_timeout: float = 60.0
    # "ollama", or "openai" for an OpenAI-compatible server (llama-server, LM
    # Studio, vLLM, Ollama's /v1) at ollama_host.
    llm_provider: str = "ollama"

    @classmethod
    def load(cls, home: Path) -> EngineSettings:
        try:
            stored = json.loads((home / SETTINGS_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            stored = {}
        if not isinstance(stored, dict):
            stored = {}
        if not _as_saved(stored):
            from core.config import engine_values

            stored, notes = engine_values(stored)
            for note in notes:
                log.warning("%s", note)
        settings = cls(**stored)
        ollama_host = os.environ.get(OLLAMA_HOST_ENV, "").strip()
        if (
            ollama_host
            and settings.ollama_host in ("", DEFAULT_HOST)
            and settings.llm_provider == "ollama"
        ):
            settings = replace(settings, ollama_host=host_url(ollama_host))
        env = {k: os.environ.get(v) for k, v in ENV.items()}
        if env["ollama_timeout"] is not None and env["ollama_timeout"].strip():
            env["ollama_timeout"] = _timeout_from_env(env["ollama_timeout"])
        else:
            env["ollama_timeout"] = None
        return replace(settings, **{k: v for k, v in env.items() if v is not None})

    def with_values(self, **changes: Any) -> EngineSettings:
        """These settings with `changes`, each checked by the spec (SettingError names
        the key): what the settings pane and the CLI save."""
        from core.config import setting_value

        return replace(self, **{k: setting_value(k, v) for k, v in changes.items()})

    def save(self, home: Path) -> None:
        tmp = home / (SETTINGS_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2), "utf-8")
        os.replace(tmp, home / SETTINGS_FILE)


def host_url(text: str) -> str:
    """An address as Ollama's users write it (OLLAMA_HOST: `0.0.0.0`, `:11435`,
    `gpu-box`, `https://example.com/ollama`) as a URL a client connects to: the
    scheme defaults to http, the port to 11434 (80/443 with a scheme), and the
    listen-everywhere address means this machine."""
    text = text.strip().rstrip("/")
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "http", text
    hostport, slash, path = rest.partition("/")
    if hostport.startswith("["):  # [::1]:11434
        host, _, port = hostport[1:].partition("]")
        port = port.lstrip(":")
        host = f"[{host}]"
    elif hostport.count(":") == 1:
        host, _, port = hostport.partition(":")
    else:
        host, port = hostport, ""
    if host in ("", "0.0.0.0", "[::]"):
        host = "127.0.0.1"
    if not port:
        port = "11434" if not sep else {"https": "443"}.get(scheme, "80")
    return f"{scheme}://{host}:{port}" + (f"/{path}" if slash and path else "")


def _as_saved(stored: dict) -> bool:
    """True when `stored` holds only what `save` writes, each of the saved kind:
    read as it is, without loading the spec (and pydantic) on every start."""
    kinds = {f.name: f.type for f in fields(EngineSettings)}
    for key, value in stored.items():
        if key not in kinds or isinstance(value, bool):
            return False
        if kinds[key] == "str" and not isinstance(value, str):
            return False
        if kinds[key] == "float" and not (
            isinstance(value, int | float) and math.isfinite(value) and value > 0
        ):
            return False
    return True


def _timeout_from_env(text: str) -> float:
    try:
        return parse_timeout(text)
    except InvalidInputError as error:
        raise InvalidInputError(f"{TIMEOUT_ENV}: {error}") from None
