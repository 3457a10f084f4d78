"""Reciprocal Rank Fusion: channels vote with ranks, never with their raw scores.

    RRF(d) = Σ over channels c that returned d of  weight_c / (k + rank_c(d))

rank is 1-based. A unit missing from a channel gets nothing from it, so raw
scores on different scales (cosine, BM25, activation, proximity) never need
calibrating, and scaling any channel's scores changes nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Contribution:
    rank: int
    value: float


@dataclass
class Fused:
    id: str
    score: float
    contributions: dict[str, Contribution] = field(default_factory=dict)
    rank: int = 0
    factor: float = 1.0  # a boost after fusion (speaker focus); score includes it

    @property
    def best_rank(self) -> int:
        return min(c.rank for c in self.contributions.values())

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "rank": self.rank,
            "score": self.score,
            "factor": self.factor,
            "contributions": {
                channel: {"rank": c.rank, "value": c.value}
                for channel, c in self.contributions.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fused:
        """A fused entry as a trace's JSON records it (what `to_dict` wrote)."""
        return cls(
            str(data["id"]),
            float(data.get("score", 0.0)),
            {
                channel: Contribution(int(c["rank"]), float(c["value"]))
                for channel, c in (data.get("contributions") or {}).items()
            },
            int(data.get("rank", 0)),
            float(data.get("factor", 1.0)),
        )


def rrf(
    ranked: Mapping[str, Sequence[str]],
    k: float = 60,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse ranked id lists (channel -> ids, best first) into one list, best first.

    An id repeated within one list counts at its first (best) place. Ties are
    broken by the best single rank, then by how many channels agree, then by id,
    so equal inputs always give the same order."""
    if k < 0:
        raise ValueError(f"the RRF constant k must be >= 0, got {k}")
    fused: dict[str, Fused] = {}
    for channel, ids in ranked.items():
        weight = 1.0 if weights is None else float(weights.get(channel, 1.0))
        if weight <= 0:
            continue
        seen: set[str] = set()
        for position, unit_id in enumerate(ids, start=1):
            if unit_id in seen:
                continue
            seen.add(unit_id)
            value = weight / (k + position)
            entry = fused.setdefault(unit_id, Fused(unit_id, 0.0))
            entry.contributions[channel] = Contribution(position, value)
    for entry in fused.values():
        # Summed in a fixed order so equal inputs give bit-equal scores.
        entry.score = sum(c.value for _, c in sorted(entry.contributions.items()))
    return _ranked(fused.values())


def boost(fused: Sequence[Fused], ids: Collection[str], factor: float) -> list[Fused]:
    """The fused list with the scores of `ids` multiplied by `factor`, re-ranked."""
    for entry in fused:
        if entry.id in ids:
            entry.factor *= factor
            entry.score *= factor
    return _ranked(fused)


def _ranked(entries: Iterable[Fused]) -> list[Fused]:
    ordered = sorted(entries, key=lambda f: (-f.score, f.best_rank, -len(f.contributions), f.id))
    for position, entry in enumerate(ordered, start=1):
        entry.rank = position
    return ordered
