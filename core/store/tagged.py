"""Which units a tag scope lets through: the set every recall channel is limited to.

Tags are filters before retrieval, not after it: each channel searches only
the units in this set (core/recall/channels.py), so a scoped recall fills its
budget from the scope instead of finding the bank's best and throwing most of
them away.

A fact passes when its own tags do (core/tags.py). An observation is made
from many facts, perhaps of many scopes, so it passes only when every fact it
was made from passes: a profile never tells a caller what its scope could not
see. Listings (`UnitFilter.tags`) use the same rule through `scoped_ids_sql`.
"""

from __future__ import annotations

from typing import Any

import duckdb

from core import tags as tagging
from core.types import Network, UnitStatus


def scoped_ids_sql(scope: tagging.TagScope) -> tuple[str, list[Any]]:
    """A query of the ids (any status) `scope` lets through, with its parameters."""
    condition, params = tagging.sql(scope, "u.tags")
    return (
        "WITH passing AS ("
        f" SELECT u.id FROM units u WHERE u.network <> ? AND {condition})"
        " SELECT id FROM passing"
        " UNION ALL"
        " SELECT s.observation_id FROM observation_sources s"
        " LEFT JOIN passing p ON p.id = s.unit_id"
        " GROUP BY s.observation_id HAVING bool_and(p.id IS NOT NULL)",
        [Network.OBSERVATION.value, *params],
    )


def allowed_units(con: duckdb.DuckDBPyConnection, scope: tagging.TagScope) -> frozenset[str]:
    """The ids of the active units `scope` lets through."""
    ids, params = scoped_ids_sql(scope)
    rows = con.execute(
        f"SELECT u.id FROM units u WHERE u.status = ? AND u.id IN ({ids})",
        [UnitStatus.ACTIVE.value, *params],
    ).fetchall()
    return frozenset(r[0] for r in rows)


def tag_counts(
    con: duckdb.DuckDBPyConnection, q: str | None = None, offset: int = 0, limit: int | None = 100
) -> tuple[list[tuple[str, int]], int]:
    """(tag, active units carrying it) most used first, a page of them, and how
    many tags there are; `q` keeps the tags containing it (case-insensitive)."""
    from core.store.filters import like_pattern

    where, params = "", []
    if q:
        where, params = "WHERE tag ILIKE ? ESCAPE '\\'", [like_pattern(q)]
    base = (
        "WITH t AS (SELECT unnest(tags) AS tag FROM units WHERE status = ?)"
        f" SELECT tag, count(*) AS n FROM t {where} GROUP BY tag"
    )
    total = con.execute(
        f"SELECT count(*) FROM ({base})", [UnitStatus.ACTIVE.value, *params]
    ).fetchone()[0]
    page = f"{base} ORDER BY n DESC, tag"
    page_params = [UnitStatus.ACTIVE.value, *params]
    if limit is not None:
        page += " LIMIT ? OFFSET ?"
        page_params += [int(limit), int(offset)]
    rows = con.execute(page, page_params).fetchall()
    return [(r[0], int(r[1])) for r in rows], int(total)
