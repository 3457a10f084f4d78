"""Row deltas: what an audited action changed in DuckDB, and how to put it back.

An action names a *scope* (the units and entities it may touch). The rows of
every curated table inside that scope are read before and after the action;
the difference is the delta stored in the audit log. Undo applies the delta
backwards, redo forwards. Only the difference is kept, so a retract of a
thousand units stores a thousand status flips, not a thousand rows.

Tables with a primary key are diffed by key (a changed row keeps only the
columns that changed); tables without one (mentions, links) are multisets of
whole rows. Units carry their vectors only where the action may change or
delete them (`Scope.vectors`): elsewhere a hash of the vector stands in.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import duckdb

from core.types import Change, Kind


@dataclass(frozen=True)
class TableSpec:
    name: str
    key: tuple[str, ...] | None  # None: a multiset of whole rows
    unit_columns: tuple[str, ...] = ()  # columns holding unit ids (in scope by unit)
    entity_columns: tuple[str, ...] = ()  # columns holding entity ids (in scope by entity)
    document_columns: tuple[str, ...] = ()  # columns holding document ids (in scope by document)


# Every table curation may change and undo. Tables a later migration adds are
# picked up only if they exist in the bank (`existing_tables`).
TABLES: tuple[TableSpec, ...] = (
    TableSpec("units", ("id",), unit_columns=("id",)),
    TableSpec("entities", ("id",), entity_columns=("id",)),
    TableSpec("mentions", None, unit_columns=("unit_id",), entity_columns=("entity_id",)),
    TableSpec("links", None, unit_columns=("source", "target"), entity_columns=("entity_id",)),
    TableSpec("opinion_events", ("id",), unit_columns=("opinion_id",)),
    TableSpec(
        "observations", ("entity_id",), unit_columns=("unit_id",), entity_columns=("entity_id",)
    ),
    TableSpec("observation_sources", None, unit_columns=("observation_id", "unit_id")),
    TableSpec(
        "entity_decisions",
        ("id",),
        entity_columns=("entity_id", "candidate_id"),
        document_columns=("document_id",),
    ),
    # Only a document's deletion reaches these (its scope names the document).
    TableSpec("documents", ("id",), document_columns=("id",)),
    TableSpec("turns", None, document_columns=("document_id",)),
    TableSpec("ingest_failures", None, document_columns=("document_id",)),
)
SPECS = {spec.name: spec for spec in TABLES}
VECTOR_HASH = "_vector_hash"


@dataclass
class Scope:
    units: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    # Units whose vectors are read in full: those the action may delete or re-embed.
    vectors: set[str] = field(default_factory=set)
    # Only these tables are read (an action that flips a status need not read links).
    tables: frozenset[str] | None = None
    documents: set[str] = field(default_factory=set)


def existing_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables()"
            " WHERE database_name = current_database() AND schema_name = 'main'"
        ).fetchall()
    ]


def columns_of(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database()"
            " AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
            [table],
        ).fetchall()
    ]


def _scope_where(spec: TableSpec, scope: Scope) -> tuple[str, list]:
    clauses, params = [], []
    for column in spec.unit_columns:
        if scope.units:
            clauses.append(f"{column} IN (SELECT unnest(?))")
            params.append(sorted(scope.units))
    for column in spec.entity_columns:
        if scope.entities:
            clauses.append(f"{column} IN (SELECT unnest(?))")
            params.append(sorted(scope.entities))
    for column in spec.document_columns:
        if scope.documents:
            clauses.append(f"{column} IN (SELECT unnest(?))")
            params.append(sorted(scope.documents))
    return " OR ".join(clauses), params


Rows = dict[str, list[dict[str, Any]]]


def capture(con: duckdb.DuckDBPyConnection, scope: Scope) -> Rows:
    """Every row of the curated tables inside `scope`."""
    present = set(existing_tables(con))
    out: Rows = {}
    for spec in TABLES:
        if spec.name not in present or (scope.tables is not None and spec.name not in scope.tables):
            continue
        where, params = _scope_where(spec, scope)
        if not where:
            out[spec.name] = []
            continue
        columns = columns_of(con, spec.name)
        select = [c for c in columns if c != "vector"]
        sql_columns = ", ".join(select)
        if spec.name == "units":
            sql_columns += (
                f", hash(vector) AS {VECTOR_HASH},"
                " CASE WHEN id IN (SELECT unnest(?)) THEN vector END AS vector"
            )
            params = [sorted(scope.vectors), *params]
            select += [VECTOR_HASH, "vector"]
        rows = con.execute(f"SELECT {sql_columns} FROM {spec.name} WHERE {where}", params)
        out[spec.name] = [dict(zip(select, r, strict=True)) for r in rows.fetchall()]
    return out


def _key(spec: TableSpec, row: Mapping[str, Any]) -> tuple:
    assert spec.key is not None
    return tuple(row[c] for c in spec.key)


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _row_tuple(row: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, _frozen(v)) for k, v in row.items()))


def diff(con: duckdb.DuckDBPyConnection, before: Rows, after: Rows) -> tuple[dict, dict]:
    """(before side, after side) of what changed between two captures of one scope.

    Each side maps table -> {"rows": [...], "changed": [[key, {column: value}], ...]}."""
    back: dict[str, dict] = {}
    forward: dict[str, dict] = {}
    for table in before.keys() | after.keys():
        spec = SPECS[table]
        old, new = before.get(table, []), after.get(table, [])
        if spec.key is None:
            old_count = Counter(_row_tuple(r) for r in old)
            new_count = Counter(_row_tuple(r) for r in new)
            removed = old_count - new_count
            added = new_count - old_count
            b = [dict(t) for t, n in removed.items() for _ in range(n)]
            a = [dict(t) for t, n in added.items() for _ in range(n)]
            if b or a:
                back[table] = {"rows": [_thaw(r) for r in b], "changed": []}
                forward[table] = {"rows": [_thaw(r) for r in a], "changed": []}
            continue
        old_by = {_key(spec, r): r for r in old}
        new_by = {_key(spec, r): r for r in new}
        b_rows = [old_by[k] for k in old_by.keys() - new_by.keys()]
        a_rows = [new_by[k] for k in new_by.keys() - old_by.keys()]
        b_changed, a_changed = [], []
        for k in old_by.keys() & new_by.keys():
            o, n = old_by[k], new_by[k]
            columns = [c for c in o if c != "vector" and o[c] != n.get(c)]
            if VECTOR_HASH in columns:
                columns.remove(VECTOR_HASH)
                columns.append("vector")
            if columns:
                b_changed.append([list(k), {c: o.get(c) for c in columns}])
                a_changed.append([list(k), {c: n.get(c) for c in columns}])
        if table == "units":
            _need_vectors(con, b_rows, b_changed, a_rows, a_changed)
        if b_rows or a_rows or b_changed:
            back[table] = {"rows": b_rows, "changed": b_changed}
            forward[table] = {"rows": a_rows, "changed": a_changed}
    return _strip(back), _strip(forward)


def _thaw(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(_thaw_value(v)) if isinstance(v, tuple) else v for k, v in row.items()}


def _thaw_value(value: tuple) -> Iterable[Any]:
    return (list(_thaw_value(v)) if isinstance(v, tuple) else v for v in value)


def _need_vectors(con, b_rows, b_changed, a_rows, a_changed) -> None:
    """Removed or re-embedded units must carry their vectors; the before side was
    captured with them (the action named them in `Scope.vectors`), the after side
    is read now."""
    for row in b_rows:
        if row.get("vector") is None:
            raise RuntimeError(f"unit {row['id']} was deleted but its vector was not captured")
    for key, cols in b_changed:
        if "vector" in cols and cols["vector"] is None:
            raise RuntimeError(f"unit {key[0]} was re-embedded but its vector was not captured")
    missing = [r["id"] for r in a_rows if r.get("vector") is None]
    missing += [k[0] for k, cols in a_changed if "vector" in cols and cols["vector"] is None]
    if missing:
        vectors = dict(
            con.execute(
                "SELECT id, vector FROM units WHERE id IN (SELECT unnest(?))", [missing]
            ).fetchall()
        )
        for row in a_rows:
            if row.get("vector") is None:
                row["vector"] = vectors[row["id"]]
        for k, cols in a_changed:
            if "vector" in cols and cols["vector"] is None:
                cols["vector"] = vectors[k[0]]


def _strip(side: dict[str, dict]) -> dict[str, dict]:
    for delta in side.values():
        for row in delta["rows"]:
            row.pop(VECTOR_HASH, None)
    return side


# -- applying a delta ------------------------------------------------------------


def apply(
    con: duckdb.DuckDBPyConnection, current: Mapping[str, Any], target: Mapping[str, Any]
) -> tuple[set[str], set[str]]:
    """Move the scope from the `current` side of a delta to the `target` side.

    Undo applies (after -> before), redo (before -> after). Returns the unit and
    entity ids whose rows changed."""
    units: set[str] = set()
    entities: set[str] = set()
    present = set(existing_tables(con))
    for table in current.keys() | target.keys():
        if table not in present:
            continue
        spec = SPECS[table]
        cur = current.get(table, {"rows": [], "changed": []})
        tgt = target.get(table, {"rows": [], "changed": []})
        if spec.key is None:
            _delete_multiset(con, table, cur["rows"])
        else:
            _delete_keys(con, spec, cur["rows"])
        _insert_rows(con, table, tgt["rows"])
        if spec.key is not None:
            _update_columns(con, spec, tgt["changed"])
        for row in cur["rows"] + tgt["rows"]:
            units.update(row[c] for c in spec.unit_columns if row.get(c))
            entities.update(row[c] for c in spec.entity_columns if row.get(c))
        for key, _ in tgt["changed"]:
            ids = dict(zip(spec.key or (), key, strict=True))
            units.update(ids[c] for c in spec.unit_columns if ids.get(c))
            entities.update(ids[c] for c in spec.entity_columns if ids.get(c))
    return units, entities


def _columnar(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    columns = sorted({c for r in rows for c in r})
    return columns, [[r.get(c) for r in rows] for c in columns]


def _insert_rows(con, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    columns, values = _columnar(rows)
    select = ", ".join(f"unnest(${i + 1})" for i in range(len(columns)))
    con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {select}", values)


def _delete_keys(con, spec: TableSpec, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    assert spec.key is not None
    keys = [[r[c] for r in rows] for c in spec.key]
    match = " AND ".join(f"{spec.name}.{c} = k.{c}" for c in spec.key)
    unnest = ", ".join(f"unnest(${i + 1}) AS {c}" for i, c in enumerate(spec.key))
    con.execute(
        f"DELETE FROM {spec.name} USING (SELECT {unnest}) k WHERE {match}",
        keys,
    )


def _delete_multiset(con, table: str, rows: list[dict[str, Any]]) -> None:
    """Delete one stored copy per given row (rows may repeat)."""
    if not rows:
        return
    columns, values = _columnar(rows)
    unnest = ", ".join(f"unnest(${i + 1}) AS {c}" for i, c in enumerate(columns))
    same = " AND ".join(f"t.{c} IS NOT DISTINCT FROM d.{c}" for c in columns)
    partition = ", ".join(f"t.{c}" for c in columns)
    con.execute(
        f"DELETE FROM {table} WHERE rowid IN (SELECT rid FROM ("
        f" SELECT t.rowid AS rid, d.k,"
        f" row_number() OVER (PARTITION BY {partition} ORDER BY t.rowid) AS rn"
        f" FROM {table} t JOIN (SELECT {', '.join(columns)}, count(*) AS k"
        f" FROM (SELECT {unnest}) GROUP BY ALL) d ON {same}) WHERE rn <= k)",
        values,
    )


def _update_columns(con, spec: TableSpec, changed: list[list[Any]]) -> None:
    """Set changed columns back; rows that changed the same way go in one statement."""
    assert spec.key is not None
    groups: dict[str, tuple[dict[str, Any], list[list[Any]]]] = {}
    for key, cols in changed:
        signature = json.dumps(encode(cols), sort_keys=True)
        groups.setdefault(signature, (cols, []))[1].append(key)
    for cols, keys in groups.values():
        assignments = ", ".join(f"{c} = ?" for c in cols)
        if len(spec.key) == 1:
            con.execute(
                f"UPDATE {spec.name} SET {assignments} WHERE {spec.key[0]} IN (SELECT unnest(?))",
                [*cols.values(), [k[0] for k in keys]],
            )
        else:
            match = " AND ".join(f"{c} = ?" for c in spec.key)
            for key in keys:
                con.execute(
                    f"UPDATE {spec.name} SET {assignments} WHERE {match}", [*cols.values(), *key]
                )


# -- JSON ------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """JSON-safe form of captured values; timestamps are tagged so they come back typed."""
    if isinstance(value, datetime):
        return {"$ts": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and "$ts" in value:
            return datetime.fromisoformat(value["$ts"])
        if len(value) == 1 and "$date" in value:
            return date.fromisoformat(value["$date"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def change_of(current: Mapping[str, Any], target: Mapping[str, Any]) -> Change:
    """The `Change` of moving from `current` to `target` (ids grouped by kind)."""
    added: dict[Kind, set[str]] = {}
    updated: dict[Kind, set[str]] = {}
    removed: dict[Kind, set[str]] = {}
    for table, kind in (
        ("units", Kind.UNIT),
        ("entities", Kind.ENTITY),
        ("documents", Kind.DOCUMENT),
    ):
        cur = {r["id"] for r in current.get(table, {}).get("rows", [])}
        tgt = {r["id"] for r in target.get(table, {}).get("rows", [])}
        changed = {k[0] for k, _ in target.get(table, {}).get("changed", [])}
        added.setdefault(kind, set()).update(tgt - cur)
        removed.setdefault(kind, set()).update(cur - tgt)
        updated.setdefault(kind, set()).update(changed | (cur & tgt))

    def rows_of(table: str) -> list[dict[str, Any]]:
        return current.get(table, {}).get("rows", []) + target.get(table, {}).get("rows", [])

    updated.setdefault(Kind.LINK, set()).update(r["source"] for r in rows_of("links"))
    for r in rows_of("mentions"):
        updated.setdefault(Kind.ENTITY, set()).add(r["entity_id"])
        updated.setdefault(Kind.UNIT, set()).add(r["unit_id"])
    updated.setdefault(Kind.OPINION, set()).update(
        r["opinion_id"] for r in rows_of("opinion_events")
    )
    for kind in (Kind.UNIT, Kind.ENTITY):
        updated[kind] = updated.get(kind, set()) - added.get(kind, set()) - removed.get(kind, set())
    return Change.of(added=added, updated=updated, removed=removed)
