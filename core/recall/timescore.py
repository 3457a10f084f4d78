"""How close a fact's occurrence is to the time a query is about."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.timeparse import OPEN_END, OPEN_START

DAY = 86400.0
# How fast proximity to the named side of an open interval falls: half at this gap.
OPEN_SCALE = 30 * DAY


def overlaps(
    start: datetime | None, end: datetime | None, q_start: datetime, q_end: datetime
) -> bool:
    """The same rule as the stores' time filters: [start, end or start] meets [q_start, q_end)."""
    if start is None:
        return False
    return start < q_end and (end or start) >= q_start


def interval_proximity(
    start: datetime | None, end: datetime | None, q_start: datetime, q_end: datetime
) -> float:
    """Midpoint proximity of an overlapping occurrence: 1 / (1 + gap / scale).

    gap = distance between the two midpoints, scale = the two half-lengths
    added (at least a day, so instants and short intervals compare sensibly).
    1 when the midpoints coincide, ~0.5 at the far edge; 0 when the occurrence
    does not overlap the interval (or is undated)."""
    if not overlaps(start, end, q_start, q_end):
        return 0.0
    end = end or start
    if q_start <= OPEN_START or q_end >= OPEN_END:
        # One side open ("as of December 2023", "since May"): near the bound that
        # was named is best, the state then; a month away counts half.
        bound, at = (q_end, end) if q_start <= OPEN_START else (q_start, start)
        gap = abs((bound - at).total_seconds())
        return 1.0 / (1.0 + gap / OPEN_SCALE)
    q_half = (q_end - q_start) / 2
    u_half = (end - start) / 2
    gap = abs(((start + u_half) - (q_start + q_half)).total_seconds())
    scale = max((q_half + u_half).total_seconds(), DAY)
    return 1.0 / (1.0 + gap / scale)


def midpoint(start: datetime, end: datetime | None) -> datetime:
    end = end or start
    return start + (end - start) / 2


def days(delta: timedelta) -> float:
    return delta.total_seconds() / DAY
