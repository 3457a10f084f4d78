"""LanceDB: each unit's vector plus the columns recall filters on.

Derived from DuckDB and rebuilt from it on demand, so every write here is
idempotent: delete by id, then add.
"""

from __future__ import annotations

import os

# Lance logs every first write as a warning; the bank owns that folder on purpose.
# lancedb 0.40 reads LANCEDB_LOG (LANCE_LOG is the older name): without it,
# folding rows into the vector index logs harmless "skip loading" warnings.
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCEDB_LOG", "error")

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from core.store.filters import sql_string_list

TABLE = "units"
INDEX_NAME = "vector_idx"  # LanceDB's name for an index on the "vector" column

# Below this many rows a flat scan is fast enough (~10 ms at 10k on two cores);
# it grows to ~25 ms at 20k and 70-100 ms at 100k, the indexed search to ~12 ms.
INDEX_MIN_ROWS = 10_000
# Rows written since the index was last brought up to date are found by a flat
# scan of their own (LanceDB does this for every query); past this share of the
# table that scan costs more per query than folding them in once (~2 s at 100k).
INDEX_STALE_SHARE = 0.1
# Probe every partition: on an IVF_FLAT index that is an exact search, and at
# 100k rows still ~5x faster than the table scan (the index holds the vectors
# in memory, the scan reads and decodes the data files each time). Probing half
# saved ~3 ms a query but dropped recall@50 to 0.91 under a one-network filter
# (the filtered neighbours sit in partitions not probed). Larger than any
# partition count; LanceDB probes what there is.
PROBE_ALL = 1 << 16


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
        import lancedb  # ~1.5 s to import: only when a bank's vectors are first needed

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
        result = self._query(vector, k, where).to_arrow()
        ids = result.column("id").to_pylist()
        distances = result.column("_distance").to_pylist()
        return [VectorHit(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    def _query(self, vector: np.ndarray, k: int, where: str | None):
        query = (
            self._table.search(np.asarray(vector, dtype=np.float32))
            .metric("cosine")
            .nprobes(PROBE_ALL)  # used only when the index exists
        )
        if where:
            query = query.where(where, prefilter=True)
        return query.select(["id", "_distance"]).limit(k)

    def compact(self, *, drop_history: bool = False) -> None:
        """Merge small fragments; with drop_history, older table versions go too
        (a purge must not leave deleted vectors readable in an old version)."""
        keep = timedelta(0) if drop_history else timedelta(days=7)
        self._table.optimize(cleanup_older_than=keep, delete_unverified=drop_history)
        if drop_history and self.versions() > 1:
            # LanceDB prunes before it brings the index up to date, which commits
            # one more version; a second pass prunes the one current until then.
            self._table.optimize(cleanup_older_than=keep, delete_unverified=True)
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

    def indexed(self) -> bool:
        return self._table.index_stats(INDEX_NAME) is not None

    def maybe_index(self) -> bool:
        """Build the vector index once the table is large, and fold rows written
        since into it once they are a sizeable share; returns whether it did either.

        Called after writes and on open (a bank from before the index existed
        gets one). Rows deleted after indexing stay out of results: the index
        skips every row the table's deletion files mark."""
        rows = self.count()
        stats = self._table.index_stats(INDEX_NAME)
        if stats is None:
            if rows < INDEX_MIN_ROWS:
                return False
            from lancedb.index import Bitmap, IvfFlat

            # Every recall search filters on status (and often network): bitmaps
            # answer that prefilter without reading the columns (~2 ms at 100k).
            # Built first: the vector index, made last, marks the job done.
            for column in ("status", "network"):
                self._table.create_index(column, config=Bitmap())
            # IVF_FLAT keeps exact distances, so no refine step is needed, and
            # trains in ~7 s at 100k on two cores (IVF_HNSW_SQ needed ~35 s, with
            # few partitions and a refine step, to reach the same recall on real
            # queries). ~sqrt(n) partitions is LanceDB's own default.
            config = IvfFlat(distance_type="cosine", num_partitions=max(1, round(rows**0.5)))
            self._table.create_index("vector", config=config)
            return True
        if stats.num_unindexed_rows > INDEX_STALE_SHARE * rows:
            # Appends the new rows to the trained partitions (no retraining:
            # every partition is probed, so their balance costs no recall).
            self.compact()
            return True
        return False

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
