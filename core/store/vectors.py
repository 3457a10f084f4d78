"""LanceDB: each unit's vector plus the columns recall filters on.

Derived from DuckDB and rebuilt from it on demand, so every write here is
idempotent: delete by id, then add.
"""

from __future__ import annotations

import os

# Lance logs every first write as a warning; the bank owns that folder on purpose.
os.environ.setdefault("LANCE_LOG", "error")

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

from core.store.filters import sql_string_list

TABLE = "units"


@dataclass(frozen=True)
class VectorHit:
    id: str
    similarity: float


def _schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("network", pa.string()),
            ("status", pa.string()),
            ("occurred_start", pa.timestamp("us")),
            ("occurred_end", pa.timestamp("us")),
        ]
    )


class VectorIndex:
    def __init__(self, folder: Path, dim: int) -> None:
        self.dim = dim
        self._db = lancedb.connect(str(folder))
        if TABLE in self._db.list_tables().tables:
            self._table = self._db.open_table(TABLE)
        else:
            self._table = self._db.create_table(TABLE, schema=_schema(dim))
        self._writes_since_compaction = 0

    def upsert(self, rows: pa.Table) -> None:
        """rows: id, vector (list<float>), network, status, occurred_start, occurred_end."""
        self.delete(rows.column("id").to_pylist())
        self.append(rows)

    def append(self, rows: pa.Table) -> None:
        """Add rows known not to be in the table yet (a fresh index being filled)."""
        if rows.num_rows:
            self._table.add(rows.cast(_schema(self.dim)))
        self._writes_since_compaction += 1

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._table.delete(f"id IN {sql_string_list(ids)}")

    def count(self) -> int:
        return self._table.count_rows()

    def ids(self) -> set[str]:
        return set(self._table.to_arrow().column("id").to_pylist())

    def search(self, vector: np.ndarray, k: int, where: str | None = None) -> list[VectorHit]:
        if k <= 0 or self.count() == 0:
            return []
        query = self._table.search(np.asarray(vector, dtype=np.float32)).metric("cosine")
        if where:
            query = query.where(where, prefilter=True)
        result = query.select(["id", "_distance"]).limit(k).to_arrow()
        ids = result.column("id").to_pylist()
        distances = result.column("_distance").to_pylist()
        return [VectorHit(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    def compact(self, *, drop_history: bool = False) -> None:
        """Merge small fragments; with drop_history, older table versions go too
        (a purge must not leave deleted vectors readable in an old version)."""
        self._table.optimize(
            cleanup_older_than=timedelta(0) if drop_history else timedelta(days=7),
            delete_unverified=drop_history,
        )
        self._writes_since_compaction = 0

    def maybe_compact(self) -> None:
        """Compact when single-unit writes have left many tiny fragments.

        A flat search scans fragments in parallel, so a bank added in batches
        (one fragment per thousand units) searches faster as it is than merged
        into one big fragment; only many tiny fragments (edits one by one) cost
        more than they give."""
        if self._writes_since_compaction < 64:
            return
        self._writes_since_compaction = 0
        fragments = self._table.stats()["fragment_stats"]
        if fragments["num_fragments"] > 32 and fragments["lengths"]["mean"] < 500:
            self.compact()

    def versions(self) -> int:
        return len(self._table.list_versions())


def occurred_where(start: datetime | None, end: datetime | None) -> str | None:
    """A LanceDB filter for units whose occurrence overlaps [start, end)."""
    parts = []
    if end is not None:
        parts.append(f"occurred_start < timestamp '{end.isoformat(sep=' ')}'")
    if start is not None:
        parts.append(
            f"coalesce(occurred_end, occurred_start) >= timestamp '{start.isoformat(sep=' ')}'"
        )
    return " AND ".join(parts) or None
