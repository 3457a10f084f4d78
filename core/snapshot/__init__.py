"""Snapshots: export a bank to one `.engram` file, import it back (as a new bank
or in place of one, atomically), and diff two snapshots or a snapshot and a
live bank. `Bank.export_snapshot`, `Engine.import_snapshot` and
`diff_snapshots` are the entry points."""

from core.snapshot.archive import FORMAT_VERSION, Manifest, SnapshotError
from core.snapshot.diff import (
    ConfidenceChange,
    EntityMerge,
    EntityRef,
    EntityRename,
    SnapshotDiff,
    UnitChange,
    UnitRef,
    diff_snapshots,
)

__all__ = [
    "FORMAT_VERSION",
    "ConfidenceChange",
    "EntityMerge",
    "EntityRef",
    "EntityRename",
    "Manifest",
    "SnapshotDiff",
    "SnapshotError",
    "UnitChange",
    "UnitRef",
    "diff_snapshots",
]
