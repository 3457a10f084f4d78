"""The four kinds of links between units, planned in memory and written in bulk.

Every link is stored in both directions, so a reader follows `source = id`
and never needs `OR target = id`:
- entity, temporal and semantic links are symmetric: the two rows carry the
  same weight (and entity id);
- a causal link's forward row goes from cause to effect with the relation
  (`causes`, `enables`, `prevents`); its reverse row carries the inverse
  (`caused_by`, `enabled_by`, `prevented_by`).

Planning is pure (numpy over times and vectors); `write_links` inserts the
rows in one Arrow batch and skips rows that already exist.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import pyarrow as pa

from core.types import Link, LinkKind

# A causal relation as extracted -> (forward relation, reverse relation, is the
# fact the cause?). `caused_by` on an effect is the same edge as `causes` on its cause.
_CAUSAL = {
    "causes": ("causes", "caused_by", True),
    "caused_by": ("causes", "caused_by", False),
    "enables": ("enables", "enabled_by", True),
    "prevents": ("prevents", "prevented_by", True),
}
# Rows of the semantic similarity matrix computed at once (bounds memory).
SIM_BLOCK = 1024


@dataclass(frozen=True)
class Timed:
    """A unit placed in time for temporal and entity linking."""

    id: str
    when: datetime | None
    order: int = 0  # tie-breaker for equal times: position in its document


class LinkSet:
    """Links being planned for one document, deduplicated; both directions kept."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, str, str | None], tuple[float, str | None]] = {}

    def add(
        self,
        a: str,
        b: str,
        kind: LinkKind,
        weight: float,
        entity_id: str | None = None,
    ) -> None:
        """A symmetric link (entity, temporal, semantic); the stronger weight wins."""
        if a == b:
            return
        weight = float(weight)
        for source, target in ((a, b), (b, a)):
            key = (source, target, str(kind), entity_id)
            old = self._rows.get(key)
            if old is None or weight > old[0]:
                self._rows[key] = (weight, None)

    def add_causal(self, fact: str, other: str, relation: str, strength: float) -> None:
        """`fact` `relation` `other` (one of causes, caused_by, enables, prevents)."""
        if fact == other or relation not in _CAUSAL:
            return
        forward, reverse, fact_is_cause = _CAUSAL[relation]
        cause, effect = (fact, other) if fact_is_cause else (other, fact)
        strength = min(max(float(strength), 0.0), 1.0)
        for source, target, rel in ((cause, effect, forward), (effect, cause, reverse)):
            key = (source, target, str(LinkKind.CAUSAL), rel)
            old = self._rows.get(key)
            if old is None or strength > old[0]:
                self._rows[key] = (strength, rel)

    def __len__(self) -> int:
        return len(self._rows)

    def counts(self) -> dict[str, int]:
        """Links per kind, each pair counted once (rows / 2)."""
        out: dict[str, int] = {}
        for _s, _t, kind, _e in self._rows:
            out[kind] = out.get(kind, 0) + 1
        return {k: v // 2 for k, v in out.items()}

    def links(self) -> list[Link]:
        out = []
        for (source, target, kind, extra), (weight, relation) in self._rows.items():
            entity_id = extra if kind != LinkKind.CAUSAL else None
            out.append(Link(source, target, LinkKind(kind), weight, entity_id, relation))
        return out

    def table(self) -> pa.Table:
        links = self.links()
        return pa.table(
            {
                "source": pa.array([x.source for x in links], pa.string()),
                "target": pa.array([x.target for x in links], pa.string()),
                "kind": pa.array([str(x.kind) for x in links], pa.string()),
                "weight": pa.array([x.weight for x in links], pa.float64()),
                "entity_id": pa.array([x.entity_id for x in links], pa.string()),
                "relation": pa.array([x.relation for x in links], pa.string()),
            }
        )


_EPOCH = datetime(1970, 1, 1)


def _hours(when: datetime | None) -> float:
    # Naive datetimes are UTC in the engine; .timestamp() would read them as local time.
    return (when - _EPOCH).total_seconds() / 3600.0 if when is not None else math.nan


# -- planning -------------------------------------------------------------------------


def plan_entity_links(
    links: LinkSet,
    new_units: Mapping[str, Sequence[Timed]],
    existing: Mapping[str, Sequence[Timed]],
    cap: int,
) -> None:
    """Per entity, each new unit links to at most `cap` other units mentioning it:
    the most recent ones before it first, then the nearest after it.

    new_units / existing: entity id -> the units mentioning it."""
    if cap <= 0:
        return
    for entity_id, fresh in new_units.items():
        fresh_ids = {u.id for u in fresh}
        everyone = [u for u in existing.get(entity_id, ()) if u.id not in fresh_ids]
        everyone += list(fresh)
        # Undated units sort first (oldest), ties by their order in the document,
        # then by id: which stored units fill the cap must not depend on the
        # order a query happened to return them in.
        everyone.sort(key=lambda u: (u.when is not None, u.when or datetime.min, u.order, u.id))
        position = {u.id: i for i, u in enumerate(everyone)}
        for unit in fresh:
            p = position[unit.id]
            before = everyone[max(0, p - cap) : p][::-1]
            chosen = before + everyone[p + 1 : p + 1 + cap - len(before)]
            for other in chosen:
                links.add(unit.id, other.id, LinkKind.ENTITY, 1.0, entity_id)


def plan_temporal_links(
    links: LinkSet,
    new_units: Sequence[Timed],
    existing: Sequence[Timed],
    *,
    window_hours: float,
    decay_hours: float,
    per_unit: int,
) -> None:
    """Each dated new unit links to its `per_unit` nearest units in time within
    the window, weight exp(-gap / decay)."""
    dated_new = [u for u in new_units if u.when is not None]
    if not dated_new or per_unit <= 0 or window_hours <= 0:
        return
    new_ids = {u.id for u in new_units}
    pool = [u for u in existing if u.when is not None and u.id not in new_ids] + dated_new
    pool.sort(key=lambda u: (u.when, u.order, u.id))  # by id last: see plan_entity_links
    times = np.array([_hours(u.when) for u in pool])
    orders = np.array([u.order for u in pool])
    index = {u.id: i for i, u in enumerate(pool)}
    decay = max(decay_hours, 1e-9)
    for unit in dated_new:
        i = index[unit.id]
        lo = int(np.searchsorted(times, times[i] - window_hours, side="left"))
        hi = int(np.searchsorted(times, times[i] + window_hours, side="right"))
        span = np.arange(lo, hi)
        span = span[span != i]
        if span.size == 0:
            continue
        gaps = np.abs(times[span] - times[i])
        # Nearest in time first; among equal times, nearest in the conversation.
        tie = np.abs(orders[span] - orders[i]) + np.abs(span - i) * 1e-6
        best = span[np.lexsort((tie, gaps))[:per_unit]]
        for j in best:
            gap = abs(times[j] - times[i])
            links.add(unit.id, pool[j].id, LinkKind.TEMPORAL, math.exp(-gap / decay))


def plan_semantic_links(
    links: LinkSet,
    new_ids: Sequence[str],
    new_vectors: np.ndarray,
    existing_hits: Sequence[Sequence[tuple[str, float]]],
    *,
    top_k: int,
    threshold: float,
) -> None:
    """Each new unit links to its `top_k` most similar units (new ones by numpy,
    existing ones from the vector index) at cosine >= threshold, weight = cosine.

    existing_hits[i]: (unit id, cosine) of the i-th new unit's index search."""
    n = len(new_ids)
    if n == 0 or top_k <= 0:
        return
    vectors = np.asarray(new_vectors, dtype=np.float32)
    for start in range(0, n, SIM_BLOCK):
        block = vectors[start : start + SIM_BLOCK] @ vectors.T
        for r in range(block.shape[0]):
            i = start + r
            row = block[r]
            row[i] = -1.0
            candidates: list[tuple[float, str]] = []
            if n > 1:
                k = min(top_k, n - 1)
                top = np.argpartition(-row, k - 1)[:k] if k < n else np.arange(n)
                candidates += [(float(row[j]), new_ids[j]) for j in top if row[j] >= threshold]
            candidates += [
                (sim, uid)
                for uid, sim in existing_hits[i]
                if sim >= threshold and uid != new_ids[i]
            ]
            candidates.sort(key=lambda c: -c[0])
            seen: set[str] = set()
            for sim, uid in candidates:
                if uid in seen:
                    continue
                seen.add(uid)
                links.add(new_ids[i], uid, LinkKind.SEMANTIC, min(sim, 1.0))
                if len(seen) >= top_k:
                    break


# -- storage --------------------------------------------------------------------------


def write_links(con: duckdb.DuckDBPyConnection, links: LinkSet) -> int:
    """Insert the planned links, skipping rows already stored; returns rows inserted."""
    if not len(links):
        return 0
    con.register("_new_links", links.table())
    try:
        inserted = con.execute(
            "INSERT INTO links SELECT n.* FROM _new_links n WHERE NOT EXISTS ("
            " SELECT 1 FROM links l WHERE l.source = n.source AND l.target = n.target"
            " AND l.kind = n.kind AND l.entity_id IS NOT DISTINCT FROM n.entity_id"
            " AND l.relation IS NOT DISTINCT FROM n.relation)"
        ).fetchall()
    finally:
        con.unregister("_new_links")
    return int(inserted[0][0]) if inserted else 0


def links_of(
    con: duckdb.DuckDBPyConnection,
    unit_id: str,
    kinds: Iterable[LinkKind | str] | None = None,
) -> list[Link]:
    """The links leaving a unit (every link is stored both ways), strongest first."""
    sql = "SELECT source, target, kind, weight, entity_id, relation FROM links WHERE source = ?"
    params: list = [unit_id]
    if kinds is not None:
        sql += " AND kind IN (SELECT unnest(?))"
        params.append([str(LinkKind(k)) for k in kinds])
    rows = con.execute(sql + " ORDER BY weight DESC, kind, target", params).fetchall()
    return [Link(r[0], r[1], LinkKind(r[2]), r[3], r[4], r[5]) for r in rows]
