"""Engine-wide settings: the language model a person chose.

Kept in `settings.json` in the data folder (not in a bank: the same Ollama
serves every bank). Environment variables override the file, so CI and
scripts can point at a test server without touching it.

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
ENV = {
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
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = ""  # empty: no language model, offline rules everywhere
    ollama_timeout: float = 60.0

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
