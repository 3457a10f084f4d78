"""The audit log: every curation action, who did it, when, and what it changed.

A row's `before_state` / `after_state` hold {"state": ..., "rows": ...}: the
state is what a person reads (names, texts, counts), the rows are the delta
undo and redo apply (`core.curate.rows`). An entry without rows (a purge, or
an entry a purge scrubbed) cannot be undone.

The undo and redo stacks are not stored: they are replayed from the log, so
they survive restarts and cannot disagree with it. A new action clears the
redo stack; a purge clears both (nothing before it may come back).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from core.context import current_caller, note
from core.curate.rows import decode, encode
from core.store.bank_store import utcnow
from core.types import InvalidInputError

UNDO = "undo"
REDO = "redo"
PURGE = "purge_entity"


@dataclass(frozen=True)
class AuditEntry:
    seq: int
    recorded_at: datetime
    actor: str
    action: str
    target: str | None
    before: Mapping[str, Any] = field(default_factory=dict)
    after: Mapping[str, Any] = field(default_factory=dict)
    undone: bool = False
    # On the undo stack now: successive undos reach it (purges, entries a purge
    # scrubbed, and everything before a purge never are).
    undoable: bool = False
    redoable: bool = False  # on the redo stack now (a new action clears it)
    summary: str = ""


def record(
    con: duckdb.DuckDBPyConnection,
    *,
    action: str,
    target: str | None,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    rows: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
) -> int:
    """Append one entry (inside the action's own transaction); returns its seq.
    Its actor is the caller of the request that runs the action (core/context.py)."""
    seq = con.execute("SELECT coalesce(max(seq), 0) + 1 FROM audit").fetchall()[0][0]
    before_state: dict[str, Any] = {"state": encode(dict(before))}
    after_state: dict[str, Any] = {"state": encode(dict(after))}
    if rows is not None:
        before_state["rows"] = encode(dict(rows[0]))
        after_state["rows"] = encode(dict(rows[1]))
    con.execute(
        "INSERT INTO audit VALUES (?, ?, ?, ?, ?, ?, ?, false)",
        [
            seq,
            utcnow(),
            current_caller().actor,
            action,
            target,
            json.dumps(before_state, ensure_ascii=False),
            json.dumps(after_state, ensure_ascii=False),
        ],
    )
    # The journal's entry for the operation reads what was done from here.
    note(("audit", seq, summarize(action, dict(before), dict(after))))
    return seq


def load_rows(con: duckdb.DuckDBPyConnection, seq: int) -> tuple[dict, dict]:
    row = con.execute(
        "SELECT json_extract(before_state, '$.rows'), json_extract(after_state, '$.rows')"
        " FROM audit WHERE seq = ?",
        [seq],
    ).fetchall()
    row = row[0] if row else None
    if row is None or row[0] is None:
        raise InvalidInputError(f"audit entry {seq} cannot be undone")
    return decode(json.loads(row[0])), decode(json.loads(row[1]))


def stacks(con: duckdb.DuckDBPyConnection) -> tuple[list[int], list[int]]:
    """(undo stack, redo stack) of seqs, top last, replayed from the log."""
    undo: list[int] = []
    redo: list[int] = []
    for seq, action, target, has_rows in con.execute(
        "SELECT seq, action, target, json_extract(before_state, '$.rows') IS NOT NULL"
        " FROM audit ORDER BY seq"
    ).fetchall():
        if action == UNDO:
            done = int(target)
            if done in undo:
                undo.remove(done)
                redo.append(done)
        elif action == REDO:
            done = int(target)
            if done in redo:
                redo.remove(done)
                undo.append(done)
        elif action == PURGE:
            undo.clear()
            redo.clear()
        elif has_rows:
            undo.append(seq)
            redo.clear()
    return undo, redo


def entries(
    con: duckdb.DuckDBPyConnection,
    *,
    limit: int | None = 100,
    offset: int = 0,
    action: str | None = None,
    target: str | None = None,
    actor: str | None = None,
) -> list[AuditEntry]:
    """Entries newest first; only the readable state is loaded, not the row deltas."""
    clauses, params = [], []
    for column, value in (("action", action), ("target", target), ("actor", actor)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    sql = (
        "SELECT seq, recorded_at, actor, action, target,"
        " json_extract(before_state, '$.state'), json_extract(after_state, '$.state'),"
        f" undone FROM audit{where} ORDER BY seq DESC"
    )
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
    undo_stack, redo_stack = stacks(con)
    out = []
    for seq, at, who, what, tgt, before, after, undone in con.execute(sql, params).fetchall():
        b = decode(json.loads(before)) if before else {}
        a = decode(json.loads(after)) if after else {}
        out.append(
            AuditEntry(
                seq=seq,
                recorded_at=at,
                actor=who,
                action=what,
                target=tgt,
                before=b,
                after=a,
                undone=bool(undone),
                undoable=seq in undo_stack,
                redoable=seq in redo_stack,
                summary=summarize(what, b, a),
            )
        )
    return out


def entry(con: duckdb.DuckDBPyConnection, seq: int) -> AuditEntry | None:
    found = [e for e in entries(con, limit=None) if e.seq == seq]
    return found[0] if found else None


def summarize(action: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """One line a person can read in the audit pane or `engram audit`."""
    if before.get("redacted"):
        return f"{action} (details removed by a purge)"
    if action == "edit_unit":
        # The unit by its text (an id says nothing in a list), a number by how it moved.
        changed = [
            f"{k} {_number(before.get(k))} → {_number(after.get(k))}" if k == "confidence" else k
            for k in after
            if before.get(k) != after.get(k)
        ]
        return f"edited “{_short(before.get('text'))}”: {', '.join(changed) or 'nothing'}"
    if action == "delete_units":
        return f"deleted {before.get('count', 0)} unit(s)"
    if action == "add_unit":
        return f"added a {after.get('network', '')} memory by hand: {_short(after.get('text'))}"
    if action in ("hide_units", "unhide_units"):
        verb = "hid" if action == "hide_units" else "unhid"
        units = before.get("units") or [{}]
        if before.get("count", 0) == 1:
            return f"{verb} unit {units[0].get('id', '')}: {_short(units[0].get('text'))}"
        return f"{verb} {before.get('count', 0)} unit(s)"
    if action == "delete_document":
        return (
            f"deleted document {before.get('title')!r} ({before.get('units', 0)} unit(s),"
            f" {before.get('turns', 0)} turn(s))"
        )
    if action == "rename_entity":
        return f"renamed entity {before.get('name')!r} to {after.get('name')!r}"
    if action == "merge_entities":
        src, dst = before.get("source", {}), before.get("target", {})
        return f"merged entity {src.get('name')!r} into {dst.get('name')!r}"
    if action == "split_entity":
        new = after.get("new_entity", {})
        return (
            f"split {len(before.get('units', []))} mention(s) of {before.get('name')!r}"
            f" into new entity {new.get('name')!r}"
        )
    if action == "retract_entity":
        return f"retracted entity {before.get('name')!r} ({after.get('units', 0)} unit(s) hidden)"
    if action == "restore_entity":
        return f"restored entity {before.get('name')!r} ({after.get('units', 0)} unit(s) back)"
    if action == PURGE:
        return (
            f"purged an entity for good ({before.get('units', 0)} unit(s) removed,"
            f" {before.get('turns_redacted', 0)} turn(s) redacted)"
        )
    if action in (UNDO, REDO):
        return f"{action} of #{before.get('seq')} ({before.get('action')})"
    return action


def _number(value: Any) -> str:
    return "—" if value is None else f"{float(value):.2f}"


def _short(text: Any, width: int = 60) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _strings(value: Any) -> list[str]:
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def scrub(con: duckdb.DuckDBPyConnection, pattern: re.Pattern[str] | None, ids: set[str]) -> int:
    """Blank the states of entries whose text matches `pattern` (the purged
    entity's names, as whole words) or that name any id in `ids`: a purge must
    not leave the purged text in the log, and an entry that lost its delta can
    no longer be undone. Returns how many."""
    hit = []
    for seq, before, after, target in con.execute(
        "SELECT seq, before_state::VARCHAR, after_state::VARCHAR, target FROM audit"
    ).fetchall():
        strings = [target or ""]
        for state in (before, after):
            strings += _strings(json.loads(state)) if state else []
        named = pattern is not None and any(pattern.search(t) for t in strings)
        if named or ids.intersection(strings):
            hit.append(seq)
    if hit:
        blank = json.dumps({"state": {"redacted": True}})
        con.execute(
            "UPDATE audit SET before_state = ?, after_state = ?,"
            " target = CASE WHEN list_contains(?, target) THEN NULL ELSE target END"
            " WHERE seq IN (SELECT unnest(?))",
            [blank, blank, sorted(ids), hit],
        )
    return len(hit)
