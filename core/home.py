"""The data folder and its bank labels, readable without opening any store.

Kept free of heavy imports: the CLI reads labels to decide whether a bank's
owner serves it (core/server/owner.py) before anything loads DuckDB.
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import platformdirs

LABEL = "bank.json"
MAX_NAME = 100


def default_home() -> Path:
    env = os.environ.get("ENGRAM_HOME")
    return Path(env) if env else Path(platformdirs.user_data_dir("engram-studio", "engram"))


def read_label(folder: Path) -> dict | None:
    try:
        return json.loads((folder / LABEL).read_text("utf-8"))
    except (OSError, ValueError):
        return None


def write_label(folder: Path, label: dict) -> None:
    """Write a bank's label atomically: the label is what makes a folder a bank."""
    tmp = folder / (LABEL + ".tmp")
    tmp.write_text(json.dumps(label), "utf-8")
    os.replace(tmp, folder / LABEL)


def validate_bank_name(name: str) -> str:
    """`name` trimmed, or InvalidInputError saying what is wrong with it."""
    from core.types import InvalidInputError

    if not isinstance(name, str):
        raise InvalidInputError("a bank name must be text")
    name = name.strip()
    if not name:
        raise InvalidInputError("a bank name cannot be empty")
    if len(name) > MAX_NAME:
        raise InvalidInputError(f"a bank name is at most {MAX_NAME} characters")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise InvalidInputError("a bank name cannot contain control characters")
    return name


def labelled_folders(banks_dir: Path) -> list[tuple[Path, dict]]:
    """(folder, label) of every bank under `banks_dir`; unlabelled folders are not banks."""
    if not banks_dir.is_dir():
        return []
    found = []
    for folder in sorted(banks_dir.iterdir()):
        label = read_label(folder)
        if label is not None:
            found.append((folder, label))
    return found
