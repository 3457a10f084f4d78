"""The data folder and its bank labels, readable without opening any store.

Kept free of heavy imports: the CLI reads labels to decide whether a bank's
owner serves it (core/server/owner.py) before anything loads DuckDB.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs

LABEL = "bank.json"


def default_home() -> Path:
    env = os.environ.get("ENGRAM_HOME")
    return Path(env) if env else Path(platformdirs.user_data_dir("engram-studio", "engram"))


def read_label(folder: Path) -> dict | None:
    try:
        return json.loads((folder / LABEL).read_text("utf-8"))
    except (OSError, ValueError):
        return None


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
