"""Reading and writing units in DuckDB.

Functions take a connection (or a transaction's connection) so that retain,
curation and snapshots can compose them inside one unit of work. Every value
from a caller is a bound parameter; only whitelisted column names are
formatted into SQL.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
import numpy as np
import pyarrow as pa

from core import tags as tagging
from core.context import current_caller
from core.limits import FieldError, check_page
from core.store.filters import like_pattern
from core.store.order import ORDER_COLUMNS
from core.store.tagged import scoped_ids_sql
from core.text import printable
from core.timeparse import naive_utc
from core.types import ExtractionMode, InvalidInputError, Network, NewUnit, Unit, UnitStatus

UNIT_COLUMNS = (
    "u.id, u.text, u.network, u.occurred_start, u.occurred_end, u.mentioned_at, "
    "u.confidence, u.status, u.source_ids, u.extraction_mode, u.model, u.embedding_model, "
    "u.created_at, u.updated_at, u.access_count, u.last_accessed_at, u.document_id, u.tags, "
    "u.metadata, u.created_by"
)


@dataclass(frozen=True)
class UnitFilter:
    """Which units a listing shows. Every field narrows; None means no constraint."""

    network: Network | str | Sequence[Network | str] | None = None
    status: UnitStatus | str | Sequence[UnitStatus | str] | None = UnitStatus.ACTIVE
    entity: str | None = None  # an entity id, or a name or alias (case-insensitive)
    start: datetime | None = None  # occurrence overlaps [start, end)
    end: datetime | None = None
    text: str | None = None  # case-insensitive substring
    mode: ExtractionMode | str | None = None
    min_confidence: float | None = None
    max_confidence: float | None = None
    ids: Sequence[str] | None = None
    tags: tagging.TagScope | None = None  # units whose tags this scope lets through
    document: str | None = None  # units extracted from this document

    def where(self) -> tuple[str, list]:
        clauses: list[str] = []
        params: list = []
        if self.network is not None:
            networks = [self.network] if isinstance(self.network, str) else list(self.network)
            clauses.append("u.network IN (SELECT unnest(?))")
            params.append([str(n) for n in networks])
        if isinstance(self.status, tuple | list | frozenset | set):
            clauses.append("u.status IN (SELECT unnest(?))")
            params.append(sorted(str(s) for s in self.status))
        elif self.status is not None:
            clauses.append("u.status = ?")
            params.append(str(self.status))
        if self.entity is not None:
            clauses.append(
                "u.id IN (SELECT m.unit_id FROM mentions m JOIN entities e ON e.id = m.entity_id"
                " WHERE e.id = ? OR lower(e.name) = lower(?)"
                " OR list_contains(list_transform(e.aliases, lambda a: lower(a)), lower(?)))"
            )
            params += [self.entity, self.entity, self.entity]
        if self.end is not None:
            clauses.append("u.occurred_start < ?")
            params.append(_stored_time("end", self.end))
        if self.start is not None:
            # The occurrence's end is exclusive: one ending at `start` is before it.
            # An instant (no end, or end = start) counts when it is at or after it.
            clauses.append(
                "CASE WHEN u.occurred_end > u.occurred_start THEN u.occurred_end > ?"
                " ELSE u.occurred_start >= ? END"
            )
            start = _stored_time("start", self.start)
            params += [start, start]
        if self.text:
            clauses.append("u.text ILIKE ? ESCAPE '\\'")
            params.append(like_pattern(self.text))
        if self.mode is not None:
            clauses.append("u.extraction_mode = ?")
            params.append(str(self.mode))
        if self.min_confidence is not None:
            clauses.append("u.confidence >= ?")
            params.append(float(self.min_confidence))
        if self.max_confidence is not None:
            clauses.append("u.confidence <= ?")
            params.append(float(self.max_confidence))
        if self.ids is not None:
            clauses.append("u.id IN (SELECT unnest(?))")
            params.append(list(self.ids))
        if self.tags is not None:
            scoped, tag_params = scoped_ids_sql(self.tags)
            clauses.append(f"u.id IN ({scoped})")
            params += tag_params
        if self.document is not None:
            clauses.append("u.document_id = ?")
            params.append(self.document)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _arrow_units(
    units: Sequence[NewUnit], vectors: np.ndarray, embedding_model: str, now: datetime
) -> pa.Table:
    n = len(units)
    ts = pa.timestamp("us")
    return pa.table(
        {
            "id": pa.array([u.id for u in units], pa.string()),
            "text": pa.array([u.text for u in units], pa.string()),
            "network": pa.array([str(u.network) for u in units], pa.string()),
            "occurred_start": pa.array([u.occurred_start for u in units], ts),
            "occurred_end": pa.array([u.occurred_end for u in units], ts),
            "mentioned_at": pa.array([u.mentioned_at for u in units], ts),
            "confidence": pa.array([u.confidence for u in units], pa.float64()),
            "status": pa.array([str(UnitStatus.ACTIVE)] * n, pa.string()),
            "source_ids": pa.array([list(u.source_ids) for u in units], pa.list_(pa.string())),
            "document_id": pa.array([None] * n, pa.string()),
            "extraction_mode": pa.array([str(u.extraction_mode) for u in units], pa.string()),
            "model": pa.array([u.model for u in units], pa.string()),
            "embedding_model": pa.array([embedding_model] * n, pa.string()),
            "vector": pa.array(list(vectors.astype(np.float32)), pa.list_(pa.float32())),
            "created_at": pa.array([now] * n, ts),
            "updated_at": pa.array([now] * n, ts),
            "access_count": pa.array([0] * n, pa.int32()),
            "created_by": pa.array([current_caller().actor] * n, pa.string()),
            "tags": pa.array([list(u.tags) for u in units], pa.list_(pa.string())),
            "metadata": pa.array([tagging.metadata_json(u.metadata) for u in units], pa.string()),
        }
    )


def insert_units(
    con: duckdb.DuckDBPyConnection,
    units: Sequence[NewUnit],
    vectors: np.ndarray,
    embedding_model: str,
    now: datetime,
    document_id: str | None = None,
) -> list[str]:
    """Insert units (ids already assigned) with their vectors and entity mentions, in bulk."""
    if not units:
        return []
    table = _arrow_units(units, vectors, embedding_model, now)
    if document_id is not None:
        table = table.set_column(
            table.schema.get_field_index("document_id"),
            "document_id",
            pa.array([document_id] * len(units), pa.string()),
        )
    con.register("_new_units", table)
    try:
        con.execute("INSERT INTO units BY NAME SELECT * FROM _new_units")
    finally:
        con.unregister("_new_units")
    mention_units = [u.id for u in units for _ in u.entity_ids]
    mention_entities = [e for u in units for e in u.entity_ids]
    if mention_units:
        insert_mentions(con, mention_units, mention_entities)
    return [u.id for u in units]


def insert_mentions(
    con: duckdb.DuckDBPyConnection,
    unit_ids: Sequence[str],
    entity_ids: Sequence[str],
    surfaces: Sequence[str | None] | None = None,
) -> None:
    con.execute(
        "INSERT INTO mentions SELECT unnest(?), unnest(?), unnest(?)",
        [list(unit_ids), list(entity_ids), list(surfaces or [None] * len(unit_ids))],
    )


def _row_to_unit(row: tuple, entity_ids: tuple[str, ...]) -> Unit:
    return Unit(
        id=row[0],
        text=row[1],
        network=Network(row[2]),
        occurred_start=row[3],
        occurred_end=row[4],
        mentioned_at=row[5],
        confidence=row[6],
        status=UnitStatus(row[7]),
        source_ids=tuple(row[8] or ()),
        entity_ids=entity_ids,
        extraction_mode=ExtractionMode(row[9]),
        model=row[10],
        embedding_model=row[11],
        created_at=row[12],
        updated_at=row[13],
        access_count=row[14],
        last_accessed_at=row[15],
        document_id=row[16],
        tags=tuple(row[17] or ()),
        metadata=tagging.metadata_from(row[18]),
        created_by=row[19] or "",
    )


def _with_entities(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> list[Unit]:
    if not rows:
        return []
    ids = [r[0] for r in rows]
    mentions: dict[str, list[str]] = {}
    for unit_id, entity_id in con.execute(
        "SELECT unit_id, entity_id FROM mentions WHERE unit_id IN (SELECT unnest(?))"
        " ORDER BY unit_id, entity_id",
        [ids],
    ).fetchall():
        mentions.setdefault(unit_id, []).append(entity_id)
    return [_row_to_unit(r, tuple(dict.fromkeys(mentions.get(r[0], ())))) for r in rows]


def _stored_time(name: str, value: datetime) -> datetime:
    """A bound as the units store theirs (naive UTC); FieldError naming it if
    it is no time, or one whose offset carries it out of years 1..9999."""
    if not isinstance(value, datetime):
        raise FieldError(name, f"must be a date and time, not {type(value).__name__}")
    try:
        return naive_utc(value)
    except InvalidInputError as error:
        raise FieldError(name, str(error), "datetime_range") from None


def select_units(
    con: duckdb.DuckDBPyConnection,
    flt: UnitFilter,
    order: str = "occurred_start",
    descending: bool = False,
    offset: int = 0,
    limit: int | None = 100,
) -> list[Unit]:
    if not isinstance(order, str) or order not in ORDER_COLUMNS:
        raise FieldError(
            "order",
            f"cannot sort by {printable(str(order))[:80]}; choose one of {sorted(ORDER_COLUMNS)}",
            "literal_error",
        )
    check_page(offset, limit)
    where, params = flt.where()
    direction = "DESC" if descending else "ASC"
    sql = (
        f"SELECT {UNIT_COLUMNS} FROM units u{where}"
        f" ORDER BY {ORDER_COLUMNS[order]} {direction} NULLS LAST, u.id {direction}"
    )
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
    elif offset:
        sql += " OFFSET ?"
        params.append(int(offset))
    return _with_entities(con, con.execute(sql, params).fetchall())


def count_units(con: duckdb.DuckDBPyConnection, flt: UnitFilter) -> int:
    where, params = flt.where()
    return con.execute(f"SELECT count(*) FROM units u{where}", params).fetchone()[0]


def get_units(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> dict[str, Unit]:
    units = select_units(con, UnitFilter(ids=list(ids), status=None), limit=None)
    return {u.id: u for u in units}


def all_units(con: duckdb.DuckDBPyConnection) -> list[Unit]:
    """Every unit (any status) with its entities, as `get_units` gives them: one
    scan of each table, not a list of ids to match. `con` must be a cursor of
    its own: both scans read one snapshot, in a transaction of their own."""
    with read_snapshot(con):
        return scan_units(con)


@contextmanager
def read_snapshot(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Reads on `con` (a cursor of its own) that all see one snapshot."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    finally:
        con.execute("ROLLBACK")


def scan_units(con: duckdb.DuckDBPyConnection) -> list[Unit]:
    """`all_units` inside the caller's snapshot (`read_snapshot`)."""
    pairs = con.execute(
        "SELECT unit_id, entity_id FROM mentions ORDER BY unit_id, entity_id"
    ).fetchall()
    rows = con.execute(f"SELECT {UNIT_COLUMNS} FROM units u").fetchall()
    mentions: dict[str, list[str]] = {}
    for unit_id, entity_id in pairs:
        mentions.setdefault(unit_id, []).append(entity_id)
    return [_row_to_unit(r, tuple(dict.fromkeys(mentions.get(r[0], ())))) for r in rows]


def get_vectors(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> dict[str, np.ndarray]:
    rows = con.execute(
        "SELECT id, vector FROM units WHERE id IN (SELECT unnest(?))", [list(ids)]
    ).fetchall()
    return {i: np.asarray(v, dtype=np.float32) for i, v in rows}


def delete_units(con: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> list[str]:
    """Delete units with their mentions and links; returns the ids that existed."""
    ids = list(ids)
    existing = [
        r[0]
        for r in con.execute(
            "SELECT id FROM units WHERE id IN (SELECT unnest(?))", [ids]
        ).fetchall()
    ]
    if existing:
        con.execute("DELETE FROM mentions WHERE unit_id IN (SELECT unnest(?))", [existing])
        con.execute(
            "DELETE FROM links WHERE source IN (SELECT unnest(?)) OR target IN (SELECT unnest(?))",
            [existing, existing],
        )
        con.execute("DELETE FROM units WHERE id IN (SELECT unnest(?))", [existing])
    return existing


def occurrence_span(
    con: duckdb.DuckDBPyConnection, network: Network | str | None = None
) -> tuple[datetime | None, datetime | None]:
    """The first and last moment the bank's active units occurred (the last day an
    interval covers, its end being exclusive), optionally of one network."""
    where = "WHERE status = 'active' AND occurred_start IS NOT NULL"
    params: list = []
    if network is not None:
        where += " AND network = ?"
        params.append(str(network))
    row = con.execute(
        "SELECT min(occurred_start), max(CASE WHEN occurred_end > occurred_start"
        " THEN occurred_end - INTERVAL 1 MICROSECOND ELSE occurred_start END)"
        f" FROM units {where}",
        params,
    ).fetchone()
    return (row[0], row[1]) if row else (None, None)


TIME_FIELDS = ("created_at", "mentioned_at", "occurred_start")
TRUNCS = ("minute", "hour", "day")


def memories_timeseries(
    con: duckdb.DuckDBPyConnection, start: datetime, end: datetime, trunc: str, time_field: str
) -> list[tuple[datetime, dict[str, int]]]:
    """Active units per network in each `trunc` bucket of [start, end), by
    `time_field` (created_at where a unit has none); every bucket is listed."""
    if time_field not in TIME_FIELDS or trunc not in TRUNCS:
        raise ValueError(f"time_field in {TIME_FIELDS}, trunc in {TRUNCS}")
    when = f"coalesce({time_field}, created_at)" if time_field != "created_at" else "created_at"
    rows = con.execute(
        f"SELECT date_trunc('{trunc}', {when}) AS b, network, count(*) FROM units"
        f" WHERE status = ? AND {when} >= ? AND {when} < ? GROUP BY ALL",
        [str(UnitStatus.ACTIVE), start, end],
    ).fetchall()
    counts: dict[datetime, dict[str, int]] = {}
    for bucket, network, n in rows:
        counts.setdefault(bucket, {})[network] = int(n)
    step = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1)}
    first = con.execute(f"SELECT date_trunc('{trunc}', ?::TIMESTAMP)", [start]).fetchone()[0]
    out = []
    at = first
    while at < end:
        out.append((at, {str(n): counts.get(at, {}).get(str(n), 0) for n in Network}))
        at += step[trunc]
    return out
