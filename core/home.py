"""The data folder and its bank labels, readable without opening any store.

Kept free of heavy imports: the CLI reads labels to decide whether a bank's
owner serves it (core/server/owner.py) before anything loads DuckDB.
"""

from __future__ import annotations

import json
import os
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import platformdirs

LABEL = "bank.json"
MAX_NAME = 100
# A renamed bank still answers to its old name this long (clients are told of
# the new one), then a request by it is refused with a message naming it.
RENAME_GRACE = timedelta(days=7)
FORMER_NAMES_KEPT = 20


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


def validate_bank_id(bank_id: str) -> str:
    """A bank id as a client may choose one (Hindsight's `bank_id`): a name's
    rules, and no `/` (it is one segment of every bank's URL)."""
    from core.types import InvalidInputError

    bank_id = validate_bank_name(bank_id)
    if "/" in bank_id:
        raise InvalidInputError("a bank id cannot contain '/'")
    return bank_id


def bank_id(folder: Path, label: dict) -> str:
    """A bank's immutable id: the one its label records, else its folder's name
    (banks made before ids were recorded: the folder never moves, so every
    process derives the same id)."""
    recorded = label.get("id")
    return recorded if isinstance(recorded, str) and recorded else folder.name


@dataclass(frozen=True)
class Found:
    """A bank found by a reference to it: `how` it matched (id, name, or
    `former`: a name it had, renamed `renamed_at`; `expired` past the grace)."""

    folder: Path
    label: dict
    how: str
    renamed_at: datetime | None = None

    @property
    def id(self) -> str:
        return bank_id(self.folder, self.label)

    @property
    def name(self) -> str:
        return self.label["name"]

    @property
    def expired(self) -> bool:
        return (
            self.how == "former"
            and self.renamed_at is not None
            and (datetime.now(UTC) - self.renamed_at > RENAME_GRACE)
        )

    def moved_message(self, ref: str) -> str:
        return (
            f"bank {ref!r} was renamed to {self.name!r}"
            f"{' on ' + self.renamed_at.date().isoformat() if self.renamed_at else ''}:"
            f" use its new name, or its id {self.id!r}, which never changes"
        )


def find_bank(banks_dir: Path, ref: str) -> Found | None:
    """The bank `ref` names: by id, then by name, then by a name it had before a
    rename (the latest bank to have had it)."""
    labelled = labelled_folders(banks_dir)
    for folder, label in labelled:
        if bank_id(folder, label) == ref:
            return Found(folder, label, "id")
    for folder, label in labelled:
        if label.get("name") == ref:
            return Found(folder, label, "name")
    latest: Found | None = None
    for folder, label in labelled:
        for former in label.get("former_names") or ():
            if isinstance(former, dict) and former.get("name") == ref:
                when = _when(former.get("renamed_at"))
                if latest is None or (when and latest.renamed_at and when > latest.renamed_at):
                    latest = Found(folder, label, "former", when)
    return latest


def renamed_label(label: dict, old: str, new: str) -> dict:
    """The label after a rename: the new name, the old one kept (for the grace)."""
    formers = [
        f for f in label.get("former_names") or () if isinstance(f, dict) and f.get("name") != new
    ]
    formers.append({"name": old, "renamed_at": datetime.now(UTC).isoformat()})
    return {**label, "name": new, "former_names": formers[-FORMER_NAMES_KEPT:]}


def _when(text) -> datetime | None:
    try:
        when = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


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
