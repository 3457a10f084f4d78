"""Documents in the bank: their identity, storage and the turns behind a unit.

A document is known by its content hash, so the same conversation ingested
twice is found again (and skipped, or replaced under `force`). Turn ids are the
documents' own (LoCoMo `dia_id`s repeat across conversations): a unit's
`source_ids` are resolved within its own document first (`provenance`).

The writers here run inside the ingest's one transaction (write.py); the
readers take any connection.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import pyarrow as pa

from core import tags as tagging
from core.context import current_caller
from core.limits import check_document as check_limits
from core.retain.report import ChunkFailure
from core.store.turns import TURN_COLUMNS, turn_of_row
from core.store.units import delete_units
from core.types import (
    Document,
    EngramError,
    ExtractionMode,
    InvalidInputError,
    Turn,
    Unit,
    UnitContext,
)

# -- identity -----------------------------------------------------------------------------


def check_document(document: Document) -> None:
    """The limits any way in must respect (core/limits.py), and turns to keep."""
    check_limits(document)
    name = document.title or document.source_path or "the document"
    if not any(t.text.strip() for t in document.turns):
        raise InvalidInputError(f"{name}: no turns to retain")
    ids = [t.id for t in document.turns]
    if len(set(ids)) != len(ids) or not all(ids):
        raise InvalidInputError(f"{name}: every turn needs an id of its own")


def content_hash(document: Document) -> str:
    """The document's content hash, derived from its turns when the importer gave none."""
    if document.content_hash:
        return document.content_hash
    canonical = json.dumps(
        [
            [t.id, t.speaker, t.text, t.timestamp.isoformat() if t.timestamp else None, t.session]
            # Tags and metadata count only when given, so hashes of documents
            # without them are what they were before they existed.
            + ([list(t.tags), dict(sorted(t.metadata.items()))] if t.tags or t.metadata else [])
            for t in document.turns
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def stored_with_hash(con: duckdb.DuckDBPyConnection, digest: str) -> tuple | None:
    """The (id,) row of the document already stored with this content hash, if any."""
    return con.execute(
        "SELECT id FROM documents WHERE content_hash = ? ORDER BY created_at LIMIT 1",
        [digest],
    ).fetchone()


def stored_with_id(con: duckdb.DuckDBPyConnection, document_id: str) -> tuple | None:
    """The (id,) row of the document stored under this id, if any."""
    return con.execute("SELECT id FROM documents WHERE id = ?", [document_id]).fetchone()


def new_document_id(con: duckdb.DuckDBPyConnection, document: Document, digest: str) -> str:
    """The importer's id, unless another document holds it: then the hash's prefix."""
    candidate = document.id or digest[:16]
    taken = con.execute("SELECT 1 FROM documents WHERE id = ?", [candidate]).fetchone()
    return digest[:16] if taken and candidate != digest[:16] else candidate


def units_of(con: duckdb.DuckDBPyConnection, document_id: str) -> list[str]:
    rows = con.execute("SELECT id FROM units WHERE document_id = ?", [document_id]).fetchall()
    return [r[0] for r in rows]


# -- writes (inside the ingest's transaction) ---------------------------------------------


def insert_document(
    con: duckdb.DuckDBPyConnection,
    document_id: str,
    document: Document,
    digest: str,
    now: datetime,
    mode: ExtractionMode,
    model: str,
) -> None:
    con.execute(
        "INSERT INTO documents (id, title, source_path, content_hash, format, created_at,"
        " extraction_mode, model, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            document_id,
            document.title or "conversation",
            document.source_path or None,
            digest,
            document.format or None,
            now,
            str(mode),
            model,
            current_caller().actor,
        ],
    )


def remove_document(
    con: duckdb.DuckDBPyConnection, document_id: str, unit_ids: list[str]
) -> list[str]:
    """Everything a previous ingest of the document wrote (for force)."""
    removed = delete_units(con, unit_ids)
    if removed:
        con.execute("DELETE FROM opinion_events WHERE opinion_id IN (SELECT unnest(?))", [removed])
        con.execute(
            "DELETE FROM observation_sources WHERE unit_id IN (SELECT unnest(?))", [removed]
        )
    con.execute("DELETE FROM turns WHERE document_id = ?", [document_id])
    con.execute("DELETE FROM ingest_failures WHERE document_id = ?", [document_id])
    con.execute("DELETE FROM documents WHERE id = ?", [document_id])
    return removed


def mentioned_entities(con: duckdb.DuckDBPyConnection, unit_ids: Sequence[str]) -> list[str]:
    rows = con.execute(
        "SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT unnest(?))",
        [list(unit_ids)],
    ).fetchall()
    return sorted(r[0] for r in rows)


def drop_orphans(
    con: duckdb.DuckDBPyConnection, entity_ids: Sequence[str]
) -> tuple[list[str], list[str]]:
    """Of `entity_ids` (the replaced content's), those no unit mentions any more
    go, with their observation, decisions, jobs and links: (those entities, the
    observation units gone, to unindex). The others are the caller's to rebuild."""
    if not entity_ids:
        return [], []
    orphans = [
        r[0]
        for r in con.execute(
            "SELECT id FROM entities WHERE id IN (SELECT unnest(?)) AND NOT EXISTS"
            " (SELECT 1 FROM mentions m WHERE m.entity_id = entities.id)",
            [list(entity_ids)],
        ).fetchall()
    ]
    if not orphans:
        return [], []
    observed = [
        r[0]
        for r in con.execute(
            "SELECT unit_id FROM observations WHERE entity_id IN (SELECT unnest(?))", [orphans]
        ).fetchall()
    ]
    gone = delete_units(con, observed)
    con.execute(
        "DELETE FROM observation_sources WHERE observation_id IN (SELECT unnest(?))", [observed]
    )
    for statement in (
        "DELETE FROM observations WHERE entity_id IN (SELECT unnest($e))",
        "DELETE FROM entity_decisions WHERE entity_id IN (SELECT unnest($e))"
        " OR candidate_id IN (SELECT unnest($e))",
        "DELETE FROM jobs WHERE target IN (SELECT unnest($e))",
        "DELETE FROM links WHERE entity_id IN (SELECT unnest($e))",
        "DELETE FROM entities WHERE id IN (SELECT unnest($e))",
    ):
        con.execute(statement, {"e": orphans})
    return orphans, gone


def insert_turns(con: duckdb.DuckDBPyConnection, document_id: str, turns: Sequence[Turn]) -> None:
    table = pa.table(
        {
            "document_id": pa.array([document_id] * len(turns), pa.string()),
            "id": pa.array([t.id for t in turns], pa.string()),
            "idx": pa.array([t.index if t.index else i for i, t in enumerate(turns)], pa.int32()),
            "speaker": pa.array([t.speaker for t in turns], pa.string()),
            "text": pa.array([t.text for t in turns], pa.string()),
            "timestamp": pa.array([t.timestamp for t in turns], pa.timestamp("us")),
            "session": pa.array([t.session or None for t in turns], pa.string()),
            "tags": pa.array([list(t.tags) for t in turns], pa.list_(pa.string())),
            "metadata": pa.array([tagging.metadata_json(t.metadata) for t in turns], pa.string()),
        }
    )
    con.register("_new_turns", table)
    try:
        con.execute("INSERT INTO turns BY NAME SELECT * FROM _new_turns")
    finally:
        con.unregister("_new_turns")


def clear_failures(con: duckdb.DuckDBPyConnection, document_id: str) -> None:
    con.execute("DELETE FROM ingest_failures WHERE document_id = ?", [document_id])


def write_failures(
    con: duckdb.DuckDBPyConnection, failures: Sequence[ChunkFailure], now: datetime
) -> None:
    if not failures:
        return
    table = pa.table(
        {
            "document_id": pa.array([f.document_id for f in failures], pa.string()),
            "turn_ids": pa.array([list(f.turn_ids) for f in failures], pa.list_(pa.string())),
            "reason": pa.array([f.reason for f in failures], pa.string()),
            "recorded_at": pa.array([now] * len(failures), pa.timestamp("us")),
        }
    )
    con.register("_failures", table)
    try:
        con.execute("INSERT INTO ingest_failures BY NAME SELECT * FROM _failures")
    finally:
        con.unregister("_failures")


# -- reading documents and provenance ---------------------------------------------------


@dataclass(frozen=True)
class StoredDocument:
    id: str
    title: str
    source_path: str | None
    content_hash: str
    format: str | None
    created_at: datetime
    extraction_mode: str | None
    model: str | None
    turns: int
    units: int
    # Chunks whose extraction failed (nothing of them stored): the document is
    # partial until an ingest of it again extracts them.
    failed_chunks: int = 0
    text_length: int = 0  # characters in its turns' text
    tags: tuple[str, ...] = ()  # every tag its turns carry
    metadata: dict[str, str] = field(default_factory=dict)  # its turns' metadata merged

    created_by: str = ""  # the actor that retained it ("" before schema 8)

    @property
    def partial(self) -> bool:
        return self.failed_chunks > 0


def list_documents(
    con: duckdb.DuckDBPyConnection, ids: Sequence[str] | None = None
) -> list[StoredDocument]:
    """Every document (or those with these ids), oldest first."""
    where, params = (
        ("WHERE d.id IN (SELECT unnest(?))", [list(ids)]) if ids is not None else ("", [])
    )
    rows = con.execute(
        "WITH t AS (SELECT document_id, count(*) AS n, sum(length(text)) AS chars,"
        "  list(tags ORDER BY idx) AS tags,"
        "  list(metadata ORDER BY idx) FILTER (WHERE metadata IS NOT NULL) AS metadata"
        "  FROM turns GROUP BY document_id),"
        " u AS (SELECT document_id, count(*) AS n FROM units GROUP BY document_id),"
        " f AS (SELECT document_id, count(*) AS n FROM ingest_failures GROUP BY document_id)"
        " SELECT d.id, d.title, d.source_path, d.content_hash, d.format, d.created_at,"
        " d.extraction_mode, d.model, coalesce(t.n, 0), coalesce(u.n, 0), coalesce(f.n, 0),"
        " coalesce(t.chars, 0), t.tags, t.metadata, coalesce(d.created_by, '')"
        " FROM documents d LEFT JOIN t ON t.document_id = d.id"
        " LEFT JOIN u ON u.document_id = d.id LEFT JOIN f ON f.document_id = d.id"
        f" {where} ORDER BY d.created_at, d.id",
        params,
    ).fetchall()
    return [
        StoredDocument(
            *r[:11],
            text_length=r[11],
            tags=tagging.union(t or () for t in r[12] or ()),
            metadata=tagging.merged(tagging.metadata_from(m) for m in r[13] or ()),
            created_by=r[14],
        )
        for r in rows
    ]


def titles(con: duckdb.DuckDBPyConnection, document_ids: Sequence[str]) -> dict[str, str]:
    """The title of each of these documents (one indexed lookup: a served recall
    needs only the titles, not `list_documents`' counts over every turn and unit)."""
    if not document_ids:
        return {}
    rows = con.execute(
        "SELECT id, title FROM documents WHERE id IN (SELECT unnest(?))", [list(document_ids)]
    ).fetchall()
    return dict(rows)


def content_hashes(con: duckdb.DuckDBPyConnection, document_ids: Sequence[str]) -> dict[str, str]:
    if not document_ids:
        return {}
    rows = con.execute(
        "SELECT id, content_hash FROM documents WHERE id IN (SELECT unnest(?))",
        [list(document_ids)],
    ).fetchall()
    return dict(rows)


def document_turns(con: duckdb.DuckDBPyConnection, document_id: str) -> list[Turn]:
    rows = con.execute(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE document_id = ? ORDER BY idx",
        [document_id],
    ).fetchall()
    return [turn_of_row(r) for r in rows]


def provenance(con: duckdb.DuckDBPyConnection, unit_id: str) -> list[Turn]:
    """The turns a unit came from, in its source order: a turn id is looked up in
    the unit's own document first, then in any document (merged duplicates)."""
    row = con.execute(
        "SELECT source_ids, document_id FROM units WHERE id = ?", [unit_id]
    ).fetchone()
    if row is None:
        raise EngramError(f"no unit {unit_id!r}")
    sources, document_id = list(row[0] or ()), row[1]
    if not sources:
        return []
    rows = con.execute(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE id IN (SELECT unnest(?))"
        " ORDER BY (document_id IS NOT DISTINCT FROM ?) DESC, document_id, idx",
        [sources, document_id],
    ).fetchall()
    found: dict[str, Turn] = {}
    for r in rows:
        found.setdefault(r[0], turn_of_row(r))
    return [found[s] for s in sources if s in found]


def unit_context(con: duckdb.DuckDBPyConnection, unit: Unit, around: int = 3) -> UnitContext:
    """A unit's source turns and the conversation around them: the turns of the
    document holding them (the unit's own, else the one holding most of them: a
    merged duplicate's), from `around` turns before the first used one to `around`
    after the last. Three indexed queries whatever the number of documents."""
    sources = provenance(con, unit.id)
    if not sources:
        return UnitContext(unit)
    found = con.execute(
        "SELECT document_id, min(idx), max(idx) FROM turns WHERE id IN (SELECT unnest(?))"
        " GROUP BY document_id"
        " ORDER BY (document_id IS NOT DISTINCT FROM ?) DESC, count(*) DESC, document_id"
        " LIMIT 1",
        [[t.id for t in sources], unit.document_id],
    ).fetchone()
    if found is None:
        return UnitContext(unit, tuple(sources))
    document_id, lo, hi = found[0], found[1] - around, found[2] + around
    rows = con.execute(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE document_id = ? AND idx BETWEEN ? AND ?"
        " ORDER BY idx",
        [document_id, lo, hi],
    ).fetchall()
    title, first, last = con.execute(
        "SELECT any_value(d.title), min(t.idx), max(t.idx) FROM turns t"
        " LEFT JOIN documents d ON d.id = t.document_id WHERE t.document_id = ?",
        [document_id],
    ).fetchone()
    return UnitContext(
        unit,
        tuple(sources),
        document_id,
        title or "",
        tuple(turn_of_row(r) for r in rows),
        first < lo,
        last > hi,
    )


def stored_document(con: duckdb.DuckDBPyConnection, document_id: str) -> Document:
    """A stored document as an importer would give it (same id and content hash),
    so ingesting it again with `force` replaces it."""
    row = con.execute(
        "SELECT id, title, source_path, content_hash, format FROM documents WHERE id = ?",
        [document_id],
    ).fetchone()
    if row is None:
        raise EngramError(f"no document {document_id!r} in this bank")
    turns = tuple(document_turns(con, document_id))
    speakers = tuple(dict.fromkeys(t.speaker for t in turns))
    return Document(
        id=row[0],
        title=row[1],
        turns=turns,
        source_path=row[2] or "",
        content_hash=row[3],
        format=row[4] or "",
        speakers=speakers,
    )


def failures_of(con: duckdb.DuckDBPyConnection, document_id: str) -> list[ChunkFailure]:
    rows = con.execute(
        "SELECT f.document_id, d.title, f.turn_ids, f.reason FROM ingest_failures f"
        " LEFT JOIN documents d ON d.id = f.document_id WHERE f.document_id = ?"
        " ORDER BY f.recorded_at",
        [document_id],
    ).fetchall()
    return [ChunkFailure(r[0], r[1] or "", tuple(r[2]), r[3]) for r in rows]


__all__ = [
    "StoredDocument",
    "check_document",
    "clear_failures",
    "content_hash",
    "document_turns",
    "failures_of",
    "insert_document",
    "insert_turns",
    "list_documents",
    "new_document_id",
    "provenance",
    "remove_document",
    "stored_document",
    "stored_with_hash",
    "units_of",
    "write_failures",
]
