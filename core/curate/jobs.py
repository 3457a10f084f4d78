"""Observation refresh after curation, through retain's job queue.

Curation only enqueues, in the same transaction as the change; retain's
`process_jobs` regenerates. Jobs are work, not memory: undo does not take them
back (it queues again for the entities it touched).
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb

from core.retain.observations import JOB_KIND, QUEUED, queue_observation_jobs
from core.store.bank_store import utcnow


def queue_observations(con: duckdb.DuckDBPyConnection, entity_ids: Iterable[str]) -> list[str]:
    """Queue observation refresh for the entities among `entity_ids` that still
    exist; returns the ids of the jobs added."""
    wanted = sorted({e for e in entity_ids if e})
    if not wanted:
        return []
    existing = [
        r[0]
        for r in con.execute(
            "SELECT id FROM entities WHERE id IN (SELECT unnest(?)) ORDER BY id", [wanted]
        ).fetchall()
    ]
    return queue_observation_jobs(con, existing, utcnow())


def drop_jobs(con: duckdb.DuckDBPyConnection, entity_ids: Iterable[str]) -> None:
    """Queued jobs of entities that no longer exist (merged away, purged)."""
    ids = sorted(set(entity_ids))
    if ids:
        con.execute(
            "DELETE FROM jobs WHERE kind = ? AND target IN (SELECT unnest(?)) AND status = ?",
            [JOB_KIND, ids, QUEUED],
        )
