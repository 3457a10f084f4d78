"""What recall hands back: the packed facts and the trace of how they were chosen."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.recall.trace import RecallTrace
    from core.types import Unit


@dataclass(frozen=True)
class RecallItem:
    """One packed fact. `score` is the final (reranked) score, `rank` its 1-based place."""

    unit_id: str
    network: str
    text: str
    score: float
    tokens: int
    source_ids: tuple[str, ...] = ()
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    confidence: float | None = None
    entity_ids: tuple[str, ...] = ()
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit_id": self.unit_id,
            "network": self.network,
            "text": self.text,
            "score": self.score,
            "tokens": self.tokens,
            "source_ids": list(self.source_ids),
            "occurred_start": _iso(self.occurred_start),
            "occurred_end": _iso(self.occurred_end),
            "confidence": self.confidence,
            "entity_ids": list(self.entity_ids),
            "rank": self.rank,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecallItem:
        return cls(
            unit_id=str(data["unit_id"]),
            network=str(data.get("network", "")),
            text=str(data.get("text", "")),
            score=float(data.get("score", 0.0)),
            tokens=int(data.get("tokens", 0)),
            source_ids=tuple(data.get("source_ids") or ()),
            occurred_start=_time(data.get("occurred_start")),
            occurred_end=_time(data.get("occurred_end")),
            confidence=data.get("confidence"),
            entity_ids=tuple(data.get("entity_ids") or ()),
            rank=int(data.get("rank", 0)),
        )


@dataclass(frozen=True)
class RecallResult:
    """`items` fit `budget` tokens together; `observations` (entity profiles) have
    their own budget. `trace` is what each stage did (typed, see core/recall/trace.py;
    `trace.to_dict()` is its JSON)."""

    query: str
    items: tuple[RecallItem, ...]
    reranker: str
    trace: RecallTrace
    budget: int
    tokens_used: int
    observations: tuple[RecallItem, ...] = field(default=())
    # The packed facts' and observations' units as recall loaded them, so a
    # caller that shows more of them (the HTTP server) need not read them again.
    # Not serialized: empty in a result read back from JSON.
    units: Mapping[str, Unit] = field(default_factory=dict, compare=False, repr=False)

    @property
    def unit_ids(self) -> list[str]:
        return [item.unit_id for item in self.items]

    @property
    def source_ids(self) -> set[str]:
        """Every source turn id behind the packed facts."""
        return {s for item in self.items for s in item.source_ids}

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "budget": self.budget,
            "tokens_used": self.tokens_used,
            "reranker": self.reranker,
            "items": [item.to_dict() for item in self.items],
            "observations": [item.to_dict() for item in self.observations],
            "trace": self.trace.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecallResult:
        """A result read back from its JSON (a recall the activity journal kept)."""
        from core.recall.trace import RecallTrace

        return cls(
            query=str(data.get("query", "")),
            items=tuple(RecallItem.from_dict(i) for i in data.get("items") or ()),
            reranker=str(data.get("reranker", "")),
            trace=RecallTrace.from_dict(data.get("trace") or {}),
            budget=int(data.get("budget", 0)),
            tokens_used=int(data.get("tokens_used", 0)),
            observations=tuple(RecallItem.from_dict(i) for i in data.get("observations") or ()),
        )

    def to_json(self, indent: int | None = None, trace: bool = True) -> str:
        data = self.to_dict()
        if not trace:
            data.pop("trace")
        return json.dumps(data, indent=indent, ensure_ascii=False)

    def __len__(self) -> int:
        return len(self.items)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None
