"""Every value of an imported snapshot checked before it can reach a bank.

The archive layer (archive.py) proves a snapshot is intact; this proves its
rows make a bank that works: enums hold known values, numbers are finite and in
range, vectors have no NaN, Inf or null, nothing is duplicated, every reference
points at a row that exists, and the profile can be read. Each refusal names
the table, the row and the field. Checks run in DuckDB on the freshly loaded
(still private) tables, a query each, so a large snapshot costs seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb

from core import vocabulary
from core.snapshot.archive import SnapshotError
from core.types import UnitStatus


@dataclass(frozen=True)
class Rule:
    table: str
    field: str
    problem: str
    where: str  # rows that break the rule
    row: str = "id"  # how the row is named in the refusal


def _among(column: str, values) -> str:
    listed = ", ".join(f"'{v}'" for v in values)
    return f"{column} IS NULL OR {column} NOT IN ({listed})"


def _unfinite(column: str) -> str:
    return f"isnan({column}) OR isinf({column})"


def _out_of_unit(column: str, nullable: bool = True) -> str:
    test = f"{_unfinite(column)} OR {column} < 0 OR {column} > 1"
    return f"{column} IS NOT NULL AND ({test})" if nullable else f"{column} IS NULL OR {test}"


def _bad_vector(column: str) -> str:
    return (
        f"{column} IS NULL OR len({column}) = 0 OR list_bool_or(list_transform({column},"
        " lambda x: x IS NULL OR isnan(x) OR isinf(x)))"
    )


NETWORKS = list(vocabulary.NETWORKS)
STATUSES = [s.value for s in UnitStatus]
LINK_KINDS = list(vocabulary.LINK_KINDS)

RULES: tuple[Rule, ...] = (
    Rule("units", "network", f"must be one of {', '.join(NETWORKS)}", _among("network", NETWORKS)),
    Rule("units", "status", f"must be one of {', '.join(STATUSES)}", _among("status", STATUSES)),
    Rule("units", "confidence", "must be a number from 0 to 1", _out_of_unit("confidence")),
    Rule("units", "vector", "holds NaN, infinite or missing numbers", _bad_vector("vector")),
    Rule("units", "access_count", "cannot be negative", "access_count < 0"),
    Rule("units", "text", "is empty", "trim(text) = ''"),
    Rule("entities", "status", f"must be one of {', '.join(STATUSES)}", _among("status", STATUSES)),
    Rule("entities", "name", "is empty", "trim(name) = ''"),
    Rule(
        "links",
        "kind",
        f"must be one of {', '.join(LINK_KINDS)}",
        _among("kind", LINK_KINDS),
        "source || ' -> ' || target",
    ),
    Rule(
        "links",
        "weight",
        "must be a finite number from 0 to 1",
        f"weight IS NULL OR {_unfinite('weight')} OR weight < 0 OR weight > 1",
        "source || ' -> ' || target",
    ),
    Rule(
        "opinion_events",
        "confidence_before",
        "must be a number from 0 to 1",
        _out_of_unit("confidence_before"),
    ),
    Rule(
        "opinion_events",
        "confidence_after",
        "must be a number from 0 to 1",
        _out_of_unit("confidence_after", nullable=False),
    ),
    Rule(
        "entity_decisions",
        "score",
        "must be a finite number",
        f"score IS NOT NULL AND ({_unfinite('score')})",
    ),
)

# Rows that must be unique, beyond the primary keys DuckDB enforces itself.
UNIQUE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("turns", ("document_id", "id")),
    ("mentions", ("unit_id", "entity_id", "surface")),
    ("links", ("source", "target", "kind", "entity_id", "relation")),
    ("observation_sources", ("observation_id", "unit_id")),
)

# (table, column, the table and column it points at)
REFERENCES: tuple[tuple[str, str, str, str], ...] = (
    ("mentions", "unit_id", "units", "id"),
    ("mentions", "entity_id", "entities", "id"),
    ("links", "source", "units", "id"),
    ("links", "target", "units", "id"),
    ("opinion_events", "opinion_id", "units", "id"),
    ("observations", "unit_id", "units", "id"),
    ("observations", "entity_id", "entities", "id"),
    ("observation_sources", "observation_id", "units", "id"),
    ("observation_sources", "unit_id", "units", "id"),
    ("turns", "document_id", "documents", "id"),
)


def validate_tables(con: duckdb.DuckDBPyConnection, dim: int | None) -> list[str]:
    """Refuse (SnapshotError) the first value that would break the bank; returns
    warnings about what is kept but ignored (a setting this version does not know)."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    for rule in RULES:
        if rule.table in tables:
            _refuse_first(
                con,
                f"SELECT {rule.row} FROM {rule.table} WHERE {rule.where} LIMIT 1",
                lambda row, r=rule: f"{r.table} row {_name(r.row, row)}: {r.field} {r.problem}",
            )
    if dim is not None:
        _refuse_first(
            con,
            f"SELECT id, len(vector) FROM units WHERE len(vector) <> {int(dim)} LIMIT 1",
            lambda row: (
                f"units row id={row[0]!r}: vector has {row[1]} numbers, the manifest says {dim}"
            ),
        )
    for table, columns in UNIQUE:
        if table in tables:
            key = ", ".join(columns)
            _refuse_first(
                con,
                f"SELECT {key}, count(*) FROM {table} GROUP BY ALL HAVING count(*) > 1 LIMIT 1",
                lambda row, t=table, c=columns: (
                    f"{t}: the row with"
                    f" {', '.join(f'{n}={v!r}' for n, v in zip(c, row, strict=False))} appears"
                    f" {row[-1]} times"
                ),
            )
    for table, column, target, key in REFERENCES:
        if table in tables and target in tables:
            _refuse_first(
                con,
                f"SELECT {column} FROM {table} t WHERE {column} IS NOT NULL AND NOT EXISTS"
                f" (SELECT 1 FROM {target} x WHERE x.{key} = t.{column}) LIMIT 1",
                lambda row, t=table, c=column, g=target: (
                    f"{t}: {c}={row[0]!r} points at no row of {g}"
                ),
            )
    return _check_meta(con)


def _check_meta(con: duckdb.DuckDBPyConnection) -> list[str]:
    from core.config import stored_config

    warnings: list[str] = []
    for key, value in con.execute("SELECT key, value FROM meta").fetchall():
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            raise SnapshotError(f"meta row key={key!r}: value is not valid JSON") from None
        if key != "profile":
            continue
        if not isinstance(parsed, dict):
            raise SnapshotError(
                f"meta row key='profile': value must be a JSON object, not {type(parsed).__name__}"
            )
        for field in ("background", "agent_name"):
            if field in parsed and not isinstance(parsed[field], str):
                raise SnapshotError(f"meta row key='profile': {field} must be text")
        if "disposition" in parsed:
            from core.types import Disposition

            try:
                Disposition.from_dict(parsed["disposition"] or {})
            except (TypeError, ValueError, AttributeError) as error:
                raise SnapshotError(
                    f"meta row key='profile': disposition is malformed ({error})"
                ) from None
        config = parsed.get("config")
        if config is not None and not isinstance(config, dict):
            raise SnapshotError("meta row key='profile': config must be a JSON object")
        _, notes = stored_config(config)
        warnings += [f"profile: {note}" for note in notes]
    return warnings


def _refuse_first(con, sql: str, describe) -> None:
    try:
        row = con.execute(sql).fetchone()
    except duckdb.Error as error:
        raise SnapshotError(f"the snapshot's values cannot be checked ({error})") from None
    if row is not None:
        raise SnapshotError(f"refusing the snapshot: {describe(row)}")


def _name(expression: str, row: tuple) -> str:
    return f"{expression}={row[0]!r}" if expression == "id" else repr(row[0])
