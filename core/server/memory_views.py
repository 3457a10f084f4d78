"""Engram units in Hindsight's shapes: recall results, memory list items, reflect
facts, chunks. Everything a page of units needs is read in a few queries
(`UnitViews`), never one per unit.

A Hindsight "chunk" is an Engram source turn: its id is `DOCUMENT:INDEX` (the
turn's place in its document), its text the
turn as stored ("speaker: text" when it has a speaker). A unit's `chunk_id`
is its first source turn; `context` is its document's title (what retain's
`context` became).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from core.bank import Bank
from core.server import models as m
from core.types import Network, Turn, Unit, UnitStatus

if TYPE_CHECKING:
    from core import RecallResult


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def chunk_id(document_id: str, index: int) -> str:
    return f"{document_id}:{index}"


def turn_text(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text


class UnitViews:
    """The names, titles, source turns and observation sources of a set of units."""

    def __init__(self, bank: Bank, units: Iterable[Unit]) -> None:
        self.bank = bank
        self.units = {u.id: u for u in units}
        listed = list(self.units.values())
        self.names, self.titles, self.observation_sources = bank.unit_labels(
            [e for u in listed for e in u.entity_ids],
            sorted({u.document_id for u in listed if u.document_id}),
            [u.id for u in listed if u.network is Network.OBSERVATION],
        )
        self.turns = bank.sources([u.id for u in listed if u.document_id])

    @classmethod
    def of_ids(cls, bank: Bank, unit_ids: Sequence[str]) -> UnitViews:
        return cls(bank, bank.units_by_id(unit_ids).values())

    @classmethod
    def of_recall(cls, bank: Bank, result: RecallResult) -> UnitViews:
        """The units a recall returned, as it loaded them: read again only when
        the result came without them (one read back from JSON)."""
        ids = [item.unit_id for item in (*result.items, *result.observations)]
        units = dict(result.units)
        missing = [i for i in ids if i not in units]
        if missing:
            units.update(bank.units_by_id(missing))
        return cls(bank, [units[i] for i in dict.fromkeys(ids) if i in units])

    def entity_list(self, unit: Unit) -> list[str]:
        return [self.names[e] for e in unit.entity_ids if e in self.names]

    def chunk_id(self, unit: Unit) -> str | None:
        turns = self.turns.get(unit.id)
        if not turns or not unit.document_id:
            return None
        return chunk_id(unit.document_id, turns[0].index)

    def chunks(self, unit: Unit) -> list[tuple[str, Turn]]:
        if not unit.document_id:
            return []
        return [(chunk_id(unit.document_id, t.index), t) for t in self.turns.get(unit.id, ())]

    def _common(self, unit: Unit) -> dict:
        return {
            "context": self.titles.get(unit.document_id or ""),
            "occurred_start": iso(unit.occurred_start),
            "occurred_end": iso(unit.occurred_end),
            "mentioned_at": iso(unit.mentioned_at),
            "document_id": unit.document_id,
            "chunk_id": self.chunk_id(unit),
            "tags": list(unit.tags),
            "metadata": dict(unit.metadata) or None,
        }

    def recall_result(self, unit: Unit, score: float | None, with_sources: bool) -> m.RecallResult:
        sources = self.observation_sources.get(unit.id) if with_sources else None
        return m.RecallResult(
            id=unit.id,
            text=unit.text,
            type=str(unit.network),
            entities=self.entity_list(unit),
            score=score,
            source_fact_ids=sources,
            **self._common(unit),
        )

    def reflect_fact(self, unit: Unit) -> m.ReflectFact:
        return m.ReflectFact(
            id=unit.id, text=unit.text, type=str(unit.network), **self._common(unit)
        )

    def list_item(self, unit: Unit) -> m.MemoryUnitListItem:
        hidden = unit.status in (UnitStatus.RETRACTED, UnitStatus.HIDDEN)
        return m.MemoryUnitListItem(
            id=unit.id,
            text=unit.text,
            date=iso(unit.occurred_start or unit.mentioned_at or unit.created_at),
            fact_type=str(unit.network),
            entities=", ".join(self.entity_list(unit)) or None,
            state="invalidated" if hidden else "valid",
            updated_at=iso(unit.updated_at),
            source_memory_ids=self.observation_sources.get(unit.id)
            if unit.network is Network.OBSERVATION
            else None,
            **self._common(unit),
        )
