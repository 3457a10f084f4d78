"""The write: one document's plan stored in ONE transaction.

A cancel or an error before the commit leaves the bank exactly as it was
before that document. Observations are not regenerated here: each entity whose
facts changed gets a queued job (`process_jobs`, observations.py, runs them).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from core.retain.documents import (
    clear_failures,
    drop_orphans,
    insert_document,
    insert_turns,
    mentioned_entities,
    remove_document,
    write_failures,
)
from core.retain.links import write_links
from core.retain.observations import queue_observation_jobs
from core.retain.opinions import write_events, write_opinion_updates
from core.retain.plan import Plan
from core.retain.report import ChunkFailure, IngestReport
from core.store.bank_store import utcnow
from core.store.units import insert_mentions, insert_units
from core.types import Change, Document, ExtractionMode, Kind

if TYPE_CHECKING:
    from core.store.bank_store import BankStore


def write_document(
    store: BankStore,
    report: IngestReport,
    mode: ExtractionMode,
    document: Document,
    document_id: str,
    digest: str,
    existing: tuple | None,
    replaced: list[str],
    plan: Plan,
    failures: Sequence[ChunkFailure],
    *,
    retry: bool = False,
    appended: bool = False,
) -> Change:
    """Store one document's plan in ONE transaction: the document and its turns,
    entities and resolution decisions, units and mentions, merged duplicates,
    links, opinion updates and their events, failed chunks, observation jobs.
    `existing` (a forced re-ingest) is removed in the same transaction. Returns
    what changed, for the studio's views.

    `retry`: the document is stored and partial; its failed chunks were
    extracted again. Their facts join it, and its failures become `failures`
    (the chunks that failed again), in the same transaction.

    `appended`: `document` holds only turns added to the stored document
    `document_id`, whose content hash becomes `digest`."""
    now = utcnow()
    removed: list[str] = []
    before: list[str] = []  # the entities the replaced content mentioned
    with store.transaction() as tx:
        con = tx.con
        if retry:
            clear_failures(con, document_id)
        elif appended:
            con.execute("UPDATE documents SET content_hash = ? WHERE id = ?", [digest, document_id])
            insert_turns(con, document_id, document.turns)
        else:
            if existing:
                before = mentioned_entities(con, replaced)
                removed = remove_document(con, existing[0], replaced)
                tx.touch(removed)
            insert_document(con, document_id, document, digest, now, mode, report.model)
            insert_turns(con, document_id, document.turns)
        plan.resolver.write(con)
        ids = insert_units(
            con, plan.units, plan.vectors, store.embedding_model, now, document_id=document_id
        )
        if plan.mentions:
            insert_mentions(con, *zip(*plan.mentions, strict=True))
        _merge_into_existing(con, plan.merged_sources, plan.merged_mentions, now)
        updated_opinions = plan.opinions.updated
        rewritten = write_opinion_updates(con, updated_opinions, now)
        write_events(con, plan.opinions.events)
        write_links(con, plan.links)
        write_failures(con, failures, now)
        rebuild = set(plan.job_entities)
        if existing and not retry and not appended:
            # What only the replaced content named goes; the profiles of what stays
            # are rebuilt without it.
            orphans, gone = drop_orphans(con, before)
            tx.touch(gone)
            removed += gone
            rebuild |= set(before) - set(orphans)
        jobs = queue_observation_jobs(con, sorted(rebuild), now)
        tx.touch(ids + rewritten)
    report.notes += [
        f"opinion assessment fell back to rules: {reason}"
        for reason in dict.fromkeys(plan.opinions.fallbacks)
    ]
    return Change.of(
        added={
            Kind.UNIT: ids,
            Kind.DOCUMENT: [] if retry or appended else [document_id],
            Kind.ENTITY: plan.resolver.new_entities,
            Kind.JOB: jobs,
        },
        updated={
            Kind.UNIT: list(plan.merged_sources) + [s.id for s in updated_opinions],
            Kind.DOCUMENT: [document_id] if retry or appended else [],
            Kind.OPINION: [s.id for s in updated_opinions],
            Kind.ENTITY: plan.resolver.updated_entities,
            Kind.LINK: ids,
        },
        removed={Kind.UNIT: removed},
    )


def _merge_into_existing(
    con: duckdb.DuckDBPyConnection,
    sources: dict[str, list[str]],
    mentions: list[tuple[str, str, str]],
    now: datetime,
) -> None:
    """A fact merged into an existing unit as a near-duplicate adds its source
    turns and entities to that unit; the unit's text and vector stay."""
    if sources:
        table = pa.table(
            {
                "id": pa.array(list(sources), pa.string()),
                "source_ids": pa.array(list(sources.values()), pa.list_(pa.string())),
            }
        )
        con.register("_merged", table)
        try:
            con.execute(
                "UPDATE units SET source_ids = m.source_ids, updated_at = ?"
                " FROM _merged m WHERE units.id = m.id",
                [now],
            )
        finally:
            con.unregister("_merged")
    if mentions:
        unit_ids, entity_ids, surfaces = (list(c) for c in zip(*mentions, strict=True))
        con.execute(
            "INSERT INTO mentions SELECT DISTINCT n.unit_id, n.entity_id, n.surface FROM"
            " (SELECT unnest(?) AS unit_id, unnest(?) AS entity_id, unnest(?) AS surface) n"
            " WHERE NOT EXISTS (SELECT 1 FROM mentions m"
            " WHERE m.unit_id = n.unit_id AND m.entity_id = n.entity_id)",
            [unit_ids, entity_ids, surfaces],
        )


__all__ = ["write_document"]
