"""Engine-wide settings: the language model and reranker a person chose.

Kept in `settings.json` in the data folder (not in a bank: the same Ollama
serves every bank). Environment variables override the file, so CI and
scripts can point at a test server without touching it.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from core.types import InvalidInputError

SETTINGS_FILE = "settings.json"
TIMEOUT_ENV = "ENGRAM_OLLAMA_TIMEOUT"


def _seconds(text: str | None, source: str) -> float | None:
    """A positive number of seconds from `text` (None when unset); a clear error otherwise."""
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise InvalidInputError(f"{source} must be a positive number of seconds, got {text!r}")
    return value


def parse_timeout(text: str) -> float:
    """`--ollama-timeout` and the settings pane: seconds, a clear error if not."""
    value = _seconds(text, "the Ollama timeout")
    if value is None:
        raise InvalidInputError("the Ollama timeout must be a positive number of seconds")
    return value


@dataclass(frozen=True)
class EngineSettings:
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = ""  # empty: no language model, offline rules everywhere
    ollama_timeout: float = 60.0
    reranker_model_path: str = ""  # a sentence-transformers CrossEncoder folder; empty: heuristic

    @classmethod
    def load(cls, home: Path) -> EngineSettings:
        try:
            stored = json.loads((home / SETTINGS_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            stored = {}
        known = {f.name for f in fields(cls)}
        settings = cls(**{k: v for k, v in stored.items() if k in known})
        env = {
            "ollama_host": os.environ.get("ENGRAM_OLLAMA_HOST"),
            "ollama_model": os.environ.get("ENGRAM_OLLAMA_MODEL"),
            "ollama_timeout": _seconds(os.environ.get(TIMEOUT_ENV), TIMEOUT_ENV),
        }
        return replace(settings, **{k: v for k, v in env.items() if v is not None})

    def save(self, home: Path) -> None:
        tmp = home / (SETTINGS_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2), "utf-8")
        os.replace(tmp, home / SETTINGS_FILE)
