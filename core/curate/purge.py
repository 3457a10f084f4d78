"""Purging an entity: removed for good, from every store, in every old copy.

A purge cannot be undone. In one DuckDB transaction it deletes the entity,
every unit that mentions it (with their mentions, links, opinion events and
observation rows), redacts the entity's names in everything that stays
(turns, documents, other units' text, opinion reasons, aliases) and blanks
audit entries that name it. Then nothing old may survive:

- LanceDB keeps older table versions and rewrites a data file only when many
  of its rows are deleted, so the vector table is rebuilt from DuckDB in a
  fresh folder and swapped in (no history at all);
- Tantivy keeps deleted documents in their segments until a merge it may
  never schedule, so the BM25 index is rebuilt the same way;
- DuckDB reuses freed blocks without wiping them, so the database file is
  copied into a fresh one and swapped in (`BankStore.rebuild_database`).

A crash after the transaction leaves `purge_pending` in the bank's meta; the
next purge (or `finish_pending_purge`) completes the rebuilds first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from core.curate.action import (
    delete_unit_rows,
    entities_of,
    entity_row,
    units_mentioning,
)
from core.curate.audit import PURGE, record, scrub
from core.curate.derived import observation_pairs, reconcile
from core.curate.jobs import queue_observations
from core.curate.redaction import (
    NameMatcher,
    apply_plan,
    names_ever,
    plan_redactions,
)
from core.curate.rekey import rekey_named_ids
from core.curate.retract import RetractPreview, retract_preview
from core.progress import Progress, report
from core.store import purged as purged_names
from core.store.bank_store import utcnow
from core.store.failures import NEXT_OPEN, is_storage_failure, storage_error
from core.types import Change, EngramError, Kind

if TYPE_CHECKING:
    from core.handle import BankHandle

# Units per index chunk when filling fresh indexes (a LanceDB fragment, a Tantivy commit).
FILL_CHUNK = 5000
PENDING_KEY = "purge_pending"


def purge_entity(
    bank: BankHandle,
    entity_id: str,
    *,
    confirm: bool = False,
    progress: Progress | None = None,
) -> Change:
    """Remove an entity and everything derived from it for good. THIS CANNOT BE
    UNDONE: pass `confirm=True`. See the module docstring for what goes where."""
    if not confirm:
        raise EngramError(
            "a purge removes the entity and everything derived from it for good and cannot"
            " be undone; preview it with retract_preview, then confirm"
        )
    finish_pending_purge(bank, progress)
    con = bank.store.reader()
    entity_row(con, entity_id)  # it exists
    preview = retract_preview(bank, entity_id)
    purged = units_mentioning(con, entity_id)
    matcher = NameMatcher(names_ever(con, entity_id))
    journal = bank.journal
    if journal is None:
        return _purge(bank, entity_id, con, preview, purged, matcher, progress)
    # The journal first, while the names are still known (the bank forgets them):
    # entries naming them are redacted and its file rewritten; operations still
    # running are redacted as they are recorded (core/journal/store.py).
    with journal.purging(_hit(matcher, set(purged))):
        journal.scrub(_hit(matcher, {entity_id, *purged}))
        return _purge(bank, entity_id, con, preview, purged, matcher, progress)


def _hit(matcher: NameMatcher, ids: set[str]) -> Callable[[str], bool]:
    def hit(text: str) -> bool:
        return bool(matcher and matcher.search(text)) or any(i in text for i in ids)

    return hit


def _purge(
    bank: BankHandle,
    entity_id: str,
    con: duckdb.DuckDBPyConnection,
    preview: RetractPreview,
    purged: list[str],
    matcher: NameMatcher,
    progress: Progress | None,
) -> Change:
    # Units that name the entity without mentioning it keep their place, not its name;
    # re-embedded before the transaction (the model is slow).
    ahead = plan_redactions(con, matcher, purged, entity_id)
    embedded = _embedded(bank, ahead.units)
    report(progress, 1, 4, "removing from DuckDB")
    neighbours = (entities_of(con, purged) | entities_of(con, list(ahead.units))) - {entity_id}
    with bank.store.transaction() as tx:
        c = tx.con
        pairs = observation_pairs(c, [*purged, *ahead.units])
        bank.store.set_meta(c, PENDING_KEY, True)
        # Planned again inside the transaction: exactly what stays at this moment.
        plan = plan_redactions(c, matcher, purged, entity_id)
        delete_unit_rows(c, purged)
        c.execute("DELETE FROM mentions WHERE entity_id = ?", [entity_id])
        c.execute("DELETE FROM links WHERE entity_id = ?", [entity_id])
        c.execute("DELETE FROM observations WHERE entity_id = ?", [entity_id])
        c.execute(
            "DELETE FROM entity_decisions WHERE entity_id = $e OR candidate_id = $e",
            {"e": entity_id},
        )
        c.execute("DELETE FROM jobs WHERE target = ?", [entity_id])
        c.execute("DELETE FROM entities WHERE id = ?", [entity_id])
        apply_plan(c, plan)
        # Ids a caller chose may hold the name (a turn "zorblax-7"): fresh ones.
        rekeyed = rekey_named_ids(c, matcher)
        # Remembered without the name: an import of an older snapshot asks first.
        bank.store.set_meta(
            c,
            purged_names.KEY,
            purged_names.remember(bank.store.meta(purged_names.KEY), matcher.names),
        )
        if matcher:
            for rowid, surface in c.execute(
                "SELECT rowid, surface FROM entity_decisions"
            ).fetchall():
                if matcher.search(surface):
                    c.execute("DELETE FROM entity_decisions WHERE rowid = ?", [rowid])
            _redact_entities(c, matcher)
        missing = {i: t for i, t in plan.units.items() if embedded.get(i, (None,))[0] != t}
        embedded.update(_embedded(bank, missing))
        now = utcnow()
        for unit_id, text in plan.units.items():
            c.execute(
                "UPDATE units SET text = ?, vector = ?, updated_at = ? WHERE id = ?",
                [text, embedded[unit_id][1], now, unit_id],
            )
        scrub(c, matcher if matcher else None, {entity_id, *purged})
        turns = plan.count("turns")
        record(
            c,
            action=PURGE,
            target=entity_id,
            before={
                "units": preview.total_units,
                "opinions": preview.opinions,
                "observations": preview.observations,
                "links": preview.links,
                "source_turns": preview.source_turns,
                "turns_redacted": turns,
                "units_redacted": len(plan.units),
                "ids_rekeyed": sum(rekeyed.values()),
            },
            after={"purged": True},
        )
        jobs = queue_observations(c, neighbours)
        derived = reconcile(c, [*purged, *plan.units], pairs_before=pairs)
        tx.touch([*purged, *plan.units, *derived.units])
    try:
        _finish(bank, progress)
    except Exception as error:
        if not is_storage_failure(error):
            raise
        raise storage_error(
            error,
            "the purge was committed (the entity and its memories are gone from the database)"
            " but the old copies in the index and database files could not be rewritten;"
            f" {NEXT_OPEN} (it completes the purge)",
        ) from error
    ids = list(plan.units)
    return derived.change() | Change.of(
        removed={Kind.UNIT: purged, Kind.ENTITY: [entity_id]},
        updated={
            Kind.UNIT: ids,
            Kind.ENTITY: neighbours,
            Kind.DOCUMENT: ["*"] if turns or any(rekeyed.values()) else [],
        },
        added={Kind.JOB: jobs},
    )


def _embedded(bank: BankHandle, texts: dict[str, str]) -> dict[str, tuple[str, list[float]]]:
    """unit id -> (text, vector) for the redacted texts."""
    ids = list(texts)
    if not ids:
        return {}
    vectors = bank.embedder.embed([texts[i] for i in ids])
    return {
        i: (texts[i], np.asarray(v, dtype=np.float32).tolist())
        for i, v in zip(ids, vectors, strict=True)
    }


def _redact_entities(con: duckdb.DuckDBPyConnection, matcher: NameMatcher) -> None:
    """Other entities named after, or aliased by, the purged one lose that name."""
    for entity_id, name, aliases in con.execute(
        "SELECT id, name, aliases FROM entities"
    ).fetchall():
        kept = [a for a in aliases or [] if not matcher.search(a)]
        new_name = matcher.sub(name)
        if new_name != name or len(kept) != len(aliases or []):
            con.execute(
                "UPDATE entities SET name = ?, aliases = ? WHERE id = ?",
                [new_name, kept, entity_id],
            )


def finish_pending_purge(bank: BankHandle, progress: Progress | None = None) -> bool:
    """Complete the rebuilds of a purge a crash interrupted; True if there was one."""
    if not bank.store.meta(PENDING_KEY):
        return False
    _finish(bank, progress)
    return True


def _finish(bank: BankHandle, progress: Progress | None) -> None:
    store = bank.store
    report(progress, 2, 4, "rebuilding the vector and BM25 indexes")
    store.rebuild_indexes()
    report(progress, 3, 4, "rewriting the database file")
    store.rebuild_database()
    with store.transaction() as tx:
        tx.con.execute("DELETE FROM meta WHERE key = ?", [PENDING_KEY])
    store.checkpoint()
    report(progress, 4, 4, "purged")
