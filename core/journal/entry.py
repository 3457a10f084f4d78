"""What the activity journal holds: one `ActivityEntry` per operation.

Plain data (safe across threads, the wire and the studio). The arguments are
kept size-capped (`capped`): a conversation retained is described, not copied;
a recall's whole result (its items, token count and typed trace) is kept
compressed beside the entry and comes back as `detail` from `Journal.entry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from core.types import Change, EngramError
from core.vocabulary import ACTIVITY_KINDS

# What an operation is, for the filters: the four words the users use.
RECALL, RETAIN, REFLECT, CURATE = KINDS = ACTIVITY_KINDS

OK = "ok"
ERROR = "error"
CANCELLED = "cancelled"
OUTCOMES = (OK, ERROR, CANCELLED)

MAX_TEXT = 500  # characters of one string argument kept
MAX_ITEMS = 50  # items of one list argument kept
MAX_ARGUMENTS = 16_384  # characters of an entry's arguments, as JSON
REDACTED = "details removed by a purge"


class ActivityNotFoundError(EngramError):
    """No entry with that id in the bank's journal (pruned, or never there)."""


@dataclass(frozen=True)
class ActivityEntry:
    """One operation on a bank: who (actor, transport), what (kind, operation,
    arguments, summary), how it went (outcome, error, duration) and, for a
    write, the `Change` it made; for a recall, the packed unit ids and tokens.
    `detail` (the recall's whole result, a reflection...) only from `entry(id)`."""

    id: int
    started_at: datetime
    duration_ms: float
    actor: str
    transport: str
    kind: str
    operation: str
    outcome: str
    summary: str
    error: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    change: Change | None = None
    tokens: int | None = None
    unit_ids: tuple[str, ...] = ()
    size: int = 0  # bytes the entry takes in the journal (what `journal.keep_mb` counts)
    detail: Mapping[str, Any] | None = None

    @property
    def redacted(self) -> bool:
        return self.summary == REDACTED

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON data (the API, `engram activity --json`, the live stream)."""
        data: dict[str, Any] = {
            "id": self.id,
            "started_at": self.started_at.isoformat(),
            "duration_ms": round(self.duration_ms, 3),
            "actor": self.actor,
            "transport": self.transport,
            "kind": self.kind,
            "operation": self.operation,
            "outcome": self.outcome,
            "summary": self.summary,
            "error": self.error or None,
            "arguments": dict(self.arguments),
            "change": change_to_json(self.change),
            "tokens": self.tokens,
            "unit_ids": list(self.unit_ids),
            "size": self.size,
        }
        if self.detail is not None:
            data["detail"] = self.detail
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ActivityEntry:
        """An entry read back from its JSON (the live stream, the API)."""
        return cls(
            id=int(data["id"]),
            started_at=datetime.fromisoformat(data["started_at"]),
            duration_ms=float(data.get("duration_ms", 0.0)),
            actor=str(data.get("actor", "")),
            transport=str(data.get("transport", "")),
            kind=str(data.get("kind", "")),
            operation=str(data.get("operation", "")),
            outcome=str(data.get("outcome", "")),
            summary=str(data.get("summary", "")),
            error=str(data.get("error") or ""),
            arguments=dict(data.get("arguments") or {}),
            change=change_from_json(data.get("change")),
            tokens=data.get("tokens"),
            unit_ids=tuple(data.get("unit_ids") or ()),
            size=int(data.get("size", 0)),
            detail=data.get("detail"),
        )


def capped(value: Any, depth: int = 0) -> Any:
    """`value` as JSON-able data, bounded: long texts cut, long lists cut (with how
    many were left out), nesting flattened past a few levels."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"
    if isinstance(value, datetime):
        return value.isoformat()
    if depth >= 4:
        return capped(repr(value))
    if isinstance(value, Mapping):
        return {str(k): capped(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else list(value)
        kept = [capped(v, depth + 1) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            kept.append(f"… {len(items) - MAX_ITEMS} more")
        return kept
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return capped(to_dict(), depth + 1)
    return capped(repr(value))


def change_to_json(change: Change | None) -> dict[str, dict[str, list[str]]] | None:
    if change is None:
        return None

    def side(ids) -> dict[str, list[str]]:
        return {str(kind): sorted(values) for kind, values in ids.items()}

    return {
        "added": side(change.added),
        "updated": side(change.updated),
        "removed": side(change.removed),
    }


def change_from_json(data: Mapping[str, Any] | None) -> Change | None:
    if not data:
        return None
    from core.types import Kind

    def side(name: str) -> dict:
        return {
            Kind(k): v for k, v in (data.get(name) or {}).items() if k in Kind._value2member_map_
        }

    return Change.of(added=side("added"), updated=side("updated"), removed=side("removed"))
