"""Undo and redo: apply an audited action's delta backwards or forwards."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from core.curate.action import entities_of, touched_units
from core.curate.audit import REDO, UNDO, load_rows, record, stacks
from core.curate.derived import mention_units, observation_pairs, reconcile
from core.curate.jobs import queue_observations
from core.curate.rows import apply, change_of
from core.types import Change, EngramError, Kind

if TYPE_CHECKING:
    from core.handle import BankHandle


def _step(bank: BankHandle, *, redo: bool) -> Change:
    with bank.store.transaction() as tx:
        undo_stack, redo_stack = stacks(tx.con)
        stack = redo_stack if redo else undo_stack
        if not stack:
            raise EngramError("nothing to redo" if redo else "nothing to undo")
        seq = stack[-1]
        action = tx.con.execute("SELECT action FROM audit WHERE seq = ?", [seq]).fetchall()[0][0]
        back, forward = load_rows(tx.con, seq)
        current, target = (back, forward) if redo else (forward, back)
        moved = touched_units(current, target) | mention_units(current, target)
        pairs = observation_pairs(tx.con, moved)
        try:
            units, entities = apply(tx.con, current, target)
        except duckdb.ConstraintException as error:
            # Something outside curation re-created a row the delta brings back.
            raise EngramError(
                f"cannot {'redo' if redo else 'undo'} #{seq} ({action}): the bank changed"
                f" since in a way that conflicts ({error})"
            ) from None
        tx.con.execute("UPDATE audit SET undone = ? WHERE seq = ?", [not redo, seq])
        record(
            tx.con,
            action=REDO if redo else UNDO,
            target=str(seq),
            before={"seq": seq, "action": action},
            after={"seq": seq, "action": action, "undone": not redo},
        )
        # The entities of the facts that moved get their observations rebuilt too.
        jobs = queue_observations(tx.con, entities | entities_of(tx.con, moved))
        # No `rewritten`: the target side is what the derived units were built from.
        derived = reconcile(tx.con, moved, pairs_before=pairs)
        tx.touch(sorted(units | set(derived.units)))
    return change_of(current, target) | Change.of(added={Kind.JOB: jobs}) | derived.change()


def undo(bank: BankHandle) -> Change:
    """Take back the latest curation action still in effect."""
    return _step(bank, redo=False)


def redo(bank: BankHandle) -> Change:
    """Apply again the action the latest undo took back (a new action clears redo)."""
    return _step(bank, redo=True)
