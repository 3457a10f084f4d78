"""A recall replayed: what an agent was given then, against the bank as it is now.

`compare_recalls(then, now)` says which packed facts are gained, lost and
moved, and how the tokens changed: after a curator retracts or fixes a
memory, this is how the agent's next answer will differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.recall.result import RecallItem, RecallResult


@dataclass(frozen=True)
class Move:
    unit_id: str
    text: str
    was: int  # 1-based rank then
    now: int  # and now


@dataclass(frozen=True)
class RecallReplay:
    recorded: RecallResult  # what the agent got (the journal's copy)
    replayed: RecallResult  # the same query, the same arguments, the bank as it is now
    gained: tuple[RecallItem, ...] = ()
    lost: tuple[RecallItem, ...] = ()
    moved: tuple[Move, ...] = ()
    entry_id: int = 0
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def unchanged(self) -> bool:
        return not (self.gained or self.lost or self.moved)

    @property
    def tokens_before(self) -> int:
        return self.recorded.tokens_used

    @property
    def tokens_after(self) -> int:
        return self.replayed.tokens_used

    def summary(self) -> str:
        if self.unchanged:
            return f"the same {len(self.replayed.items)} facts, in the same order"
        parts = []
        if self.gained:
            parts.append(f"{len(self.gained)} gained")
        if self.lost:
            parts.append(f"{len(self.lost)} lost")
        if self.moved:
            parts.append(f"{len(self.moved)} moved")
        tokens = f"tokens {self.tokens_before} → {self.tokens_after}"
        return ", ".join(parts) + f"; {tokens}"


def compare_recalls(
    recorded: RecallResult,
    replayed: RecallResult,
    *,
    entry_id: int = 0,
    arguments: dict[str, Any] | None = None,
) -> RecallReplay:
    then = {item.unit_id: (rank, item) for rank, item in enumerate(recorded.items, 1)}
    now = {item.unit_id: (rank, item) for rank, item in enumerate(replayed.items, 1)}
    gained = tuple(item for unit_id, (_, item) in now.items() if unit_id not in then)
    lost = tuple(item for unit_id, (_, item) in then.items() if unit_id not in now)
    moved = tuple(
        Move(unit_id, item.text, then[unit_id][0], rank)
        for unit_id, (rank, item) in now.items()
        if unit_id in then and then[unit_id][0] != rank
    )
    return RecallReplay(recorded, replayed, gained, lost, moved, entry_id, dict(arguments or {}))
