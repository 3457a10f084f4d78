"""Re-linking edited units with retain's own planners, so links laid by curation
look exactly like links laid by retain (both directions, same weights).

An edited unit loses its entity, temporal and semantic links and gets them
planned again from its current text, time and entities. Causal links came from
a language model reading the text and are kept as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

import duckdb
import numpy as np

from core.retain.links import (
    LinkSet,
    Timed,
    plan_entity_links,
    plan_semantic_links,
    plan_temporal_links,
    write_links,
)
from core.store.vectors import VectorIndex

# Links are laid among facts: observations summarise, they are not linked.
FACTS = "status = 'active' AND network IN ('world', 'experience', 'opinion')"


def _timed(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[Timed]:
    rows = con.execute(
        "SELECT id, coalesce(occurred_start, mentioned_at) FROM units"
        " WHERE id IN (SELECT unnest(?)) ORDER BY id",
        [ids],
    ).fetchall()
    return [Timed(r[0], r[1], i) for i, r in enumerate(rows)]


def _by_entity(
    con: duckdb.DuckDBPyConnection, entity_ids: list[str], exclude: list[str]
) -> dict[str, list[Timed]]:
    rows = con.execute(
        "SELECT m.entity_id, u.id, coalesce(u.occurred_start, u.mentioned_at) FROM mentions m"
        f" JOIN units u ON u.id = m.unit_id WHERE m.entity_id IN (SELECT unnest(?)) AND u.{FACTS}"
        " AND u.id NOT IN (SELECT unnest(?)) ORDER BY u.id",
        [entity_ids, exclude],
    ).fetchall()
    out: dict[str, list[Timed]] = {}
    for entity_id, unit_id, when in rows:
        out.setdefault(entity_id, []).append(Timed(unit_id, when, -1))
    return out


def entity_links(
    con: duckdb.DuckDBPyConnection, unit_ids: Iterable[str], entity_ids: Iterable[str], cap: int
) -> LinkSet:
    """Entity links from `unit_ids` to the other facts mentioning `entity_ids`."""
    links = LinkSet()
    entities = sorted(set(entity_ids))
    ids = [
        r[0]
        for r in con.execute(
            f"SELECT id FROM units WHERE id IN (SELECT unnest(?)) AND {FACTS} ORDER BY id",
            [sorted(set(unit_ids))],
        ).fetchall()
    ]
    if not ids or not entities:
        return links
    timed = {t.id: t for t in _timed(con, ids)}
    new: dict[str, list[Timed]] = {}
    for unit_id, entity_id in con.execute(
        "SELECT unit_id, entity_id FROM mentions WHERE unit_id IN (SELECT unnest(?))"
        " AND entity_id IN (SELECT unnest(?)) ORDER BY unit_id",
        [ids, entities],
    ).fetchall():
        if unit_id in timed:
            new.setdefault(entity_id, []).append(timed[unit_id])
    plan_entity_links(links, new, _by_entity(con, entities, ids), cap)
    return links


def relink_units(
    con: duckdb.DuckDBPyConnection,
    vectors: VectorIndex,
    unit_ids: Iterable[str],
    config: Mapping[str, Any],
) -> None:
    """Drop the non-causal links of `unit_ids` and plan them again from DuckDB's
    current rows (inside the transaction that changed the units)."""
    ids = sorted(set(unit_ids))
    if not ids:
        return
    con.execute(
        "DELETE FROM links WHERE (source IN (SELECT unnest($ids)) OR target IN (SELECT unnest($ids)))"
        " AND kind <> 'causal'",
        {"ids": ids},
    )
    # Only active facts are linked, as retain would link them.
    ids = [
        r[0]
        for r in con.execute(
            f"SELECT id FROM units WHERE id IN (SELECT unnest(?)) AND {FACTS} ORDER BY id", [ids]
        ).fetchall()
    ]
    if not ids:
        return
    entities = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT unnest(?))", [ids]
        ).fetchall()
    ]
    links = entity_links(con, ids, entities, int(config["retain.entity_links_per_entity"]))
    new = _timed(con, ids)
    window = float(config["retain.temporal_window_hours"])
    times = [t.when for t in new if t.when is not None]
    existing: list[Timed] = []
    if times:
        existing = [
            Timed(r[0], r[1], -1)
            for r in con.execute(
                f"SELECT id, coalesce(occurred_start, mentioned_at) FROM units WHERE {FACTS}"
                " AND coalesce(occurred_start, mentioned_at) BETWEEN ? AND ?"
                " AND id NOT IN (SELECT unnest(?)) ORDER BY id",
                [min(times) - timedelta(hours=window), max(times) + timedelta(hours=window), ids],
            ).fetchall()
        ]
    plan_temporal_links(
        links,
        new,
        existing,
        window_hours=window,
        decay_hours=float(config["retain.temporal_decay_hours"]),
        per_unit=int(config["retain.temporal_links_per_unit"]),
    )
    rows = dict(
        con.execute("SELECT id, vector FROM units WHERE id IN (SELECT unnest(?))", [ids]).fetchall()
    )
    matrix = np.asarray([rows[i] for i in ids], dtype=np.float32)
    top_k = int(config["retain.semantic_top_k"])
    hits = [
        [
            (h.id, h.similarity)
            for h in vectors.search(matrix[n], top_k + len(ids), where=FACTS)
            if h.id not in ids
        ]
        for n in range(len(ids))
    ]
    plan_semantic_links(
        links,
        ids,
        matrix,
        hits,
        top_k=top_k,
        threshold=float(config["retain.semantic_threshold"]),
    )
    write_links(con, links)
