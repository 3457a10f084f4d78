"""A bank's turns as stored, and what a page of units shows beside their text:
entity names, document titles, observation sources, each unit's source turns.
Plain reads (one query each), below retain and recall: retain's documents list
turns, recall's units in memory read them all at once (core/recall/unitcache.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from core import tags as tagging
from core.types import Turn

TURN_COLUMNS = "id, speaker, text, timestamp, coalesce(session, ''), idx, tags, metadata"


def turn_of_row(row: tuple) -> Turn:
    """The turn a row of TURN_COLUMNS holds."""
    return Turn(*row[:6], tags=tuple(row[6] or ()), metadata=tagging.metadata_from(row[7]))


def labels_of(
    con: duckdb.DuckDBPyConnection,
    entity_ids: Sequence[str],
    document_ids: Sequence[str],
    observation_ids: Sequence[str],
) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
    """(entity names, document titles, each observation's source facts in
    their order) in one query: what a page of units shows beside their text."""
    if not (entity_ids or document_ids or observation_ids):
        return {}, {}, {}
    rows = con.execute(
        "SELECT 'e', id, name, NULL::BIGINT FROM entities WHERE id IN (SELECT unnest($e))"
        " UNION ALL SELECT 'd', id, title, NULL FROM documents WHERE id IN (SELECT unnest($d))"
        " UNION ALL SELECT 'o', observation_id, unit_id, rowid FROM observation_sources"
        " WHERE observation_id IN (SELECT unnest($o)) ORDER BY 1, 4",
        {"e": sorted(set(entity_ids)), "d": list(document_ids), "o": list(observation_ids)},
    ).fetchall()
    names: dict[str, str] = {}
    titles: dict[str, str] = {}
    sources: dict[str, list[str]] = {}
    for kind, key, value, _ in rows:
        if kind == "e":
            names[key] = value
        elif kind == "d":
            titles[key] = value
        else:
            sources.setdefault(key, []).append(value)
    return names, titles, sources


def sources_of(con: duckdb.DuckDBPyConnection, unit_ids: Sequence[str]) -> dict[str, list[Turn]]:
    """The source turns of each unit found in its own document, in its source
    order (one query for all of them; `provenance` also looks elsewhere)."""
    if not unit_ids:
        return {}
    rows = con.execute(
        "SELECT u.id, list_position(u.source_ids, t.id) AS pos, t.id, t.speaker, t.text,"
        " t.timestamp, coalesce(t.session, ''), t.idx, t.tags, t.metadata"
        " FROM units u JOIN turns t ON t.document_id = u.document_id"
        " AND list_contains(u.source_ids, t.id)"
        " WHERE u.id IN (SELECT unnest(?)) ORDER BY u.id, pos",
        [list(unit_ids)],
    ).fetchall()
    out: dict[str, list[Turn]] = {}
    for row in rows:
        out.setdefault(row[0], []).append(turn_of_row(row[2:]))
    return out
