"""An exact vector index in memory, for banks small enough to scan.

Below `EXACT_MAX_UNITS` units, one matrix product over every unit's normalised
vector answers a nearest-neighbour query in well under a millisecond, where a
LanceDB search costs ~15 ms of fixed overhead (planning, reading fragments,
decoding). So a small bank also keeps its vectors here, with the columns recall
filters on (network, status, occurrence time), as boolean masks and arrays:
the same answers as LanceDB's prefiltered cosine search, from memory.

It is derived, like LanceDB: loaded from DuckDB on first use (under the store's
write lock, so no write slips between the load and the first update) and kept
current by the same path that keeps LanceDB current (`BankStore._index_chunk`:
the ids a committed transaction touched, upserted or deleted). A bank that grows
past the limit drops it, and its searches go to LanceDB; the trace says which
answered (`search_index`).

Updates copy the arrays and swap them in whole, so a recall on another thread
always reads one consistent state without a lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.types import UnitStatus
from core.vocabulary import NETWORKS

# ~30 MB of vectors at 384 dimensions; a scan of that many takes ~2 ms on one core.
EXACT_MAX_UNITS = 20_000
NO_TIME = np.iinfo(np.int64).min  # an occurrence time not given
_NETWORK_CODE = {name: i for i, name in enumerate(NETWORKS)}
ACTIVE = UnitStatus.ACTIVE.value


@dataclass(frozen=True)
class _State:
    ids: tuple[str, ...]
    index: dict[str, int]
    id_array: pa.Array
    matrix: np.ndarray  # float32 (n, dim), rows normalised
    network: np.ndarray  # int8 code in NETWORKS (-1 unknown)
    active: np.ndarray  # bool
    start: np.ndarray  # int64 µs, NO_TIME when none
    end: np.ndarray  # int64 µs: occurred_end, else occurred_start (what overlap tests use)


def _empty(dim: int) -> _State:
    return _State(
        (),
        {},
        pa.array([], pa.string()),
        np.zeros((0, dim), np.float32),
        np.zeros(0, np.int8),
        np.zeros(0, bool),
        np.zeros(0, np.int64),
        np.zeros(0, np.int64),
    )


def _micros(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    values = pc.cast(column, pa.timestamp("us")).cast(pa.int64())
    return pc.fill_null(values, NO_TIME).to_numpy(zero_copy_only=False).astype(np.int64)


def _columns(rows: pa.Table, dim: int) -> tuple[np.ndarray, ...]:
    """(matrix, network, active, start, end) of arrow rows as the store reads them."""
    n = rows.num_rows
    vectors = rows.column("vector").combine_chunks()
    if n:
        matrix = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
        matrix = matrix.reshape(n, dim)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    else:
        matrix = np.zeros((0, dim), np.float32)
    network = np.array(
        [_NETWORK_CODE.get(v, -1) for v in rows.column("network").to_pylist()], np.int8
    )
    active = np.array([v == ACTIVE for v in rows.column("status").to_pylist()], bool)
    start = _micros(rows.column("occurred_start"))
    end = _micros(rows.column("occurred_end"))
    end = np.where(end == NO_TIME, start, end)
    return matrix, network, active, start, end


class ExactVectors:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.state = _empty(dim)

    def __len__(self) -> int:
        return len(self.state.ids)

    def load(self, rows: pa.Table) -> None:
        """Every unit: id, vector, network, status, occurred_start, occurred_end."""
        ids = tuple(rows.column("id").to_pylist())
        self.state = _State(
            ids,
            {unit_id: i for i, unit_id in enumerate(ids)},
            pa.array(ids, pa.string()),
            *_columns(rows, self.dim),
        )

    def update(self, rows: pa.Table, gone: Sequence[str]) -> None:
        """Put `rows` in (in place of the same ids) and take `gone` out."""
        old = self.state
        drop = {i for i in gone if i in old.index}
        drop.update(i for i in rows.column("id").to_pylist() if i in old.index)
        keep = np.ones(len(old.ids), bool)
        if drop:
            keep[[old.index[i] for i in drop]] = False
        new_ids = tuple(rows.column("id").to_pylist())
        ids = tuple(i for i, k in zip(old.ids, keep.tolist(), strict=True) if k) + new_ids
        fresh = _columns(rows, self.dim)
        kept = (old.matrix, old.network, old.active, old.start, old.end)
        columns = [np.concatenate([c[keep], f]) for c, f in zip(kept, fresh, strict=True)]
        self.state = _State(
            ids, {unit_id: i for i, unit_id in enumerate(ids)}, pa.array(ids, pa.string()), *columns
        )

    # -- reading ---------------------------------------------------------------

    def mask(
        self,
        networks: Sequence[str] | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        state: _State | None = None,
    ) -> np.ndarray:
        """Active units of these networks (None: all) overlapping [start, end),
        as DuckDB's and LanceDB's filters read it (no occurrence time: outside
        any time limit)."""
        s = state or self.state
        keep = s.active.copy()
        if networks is not None:
            codes = [_NETWORK_CODE[n] for n in networks if n in _NETWORK_CODE]
            keep &= np.isin(s.network, codes)
        if end is not None:
            keep &= (s.start != NO_TIME) & (s.start < _micro(end))
        if start is not None:
            keep &= (s.end != NO_TIME) & (s.end >= _micro(start))
        return keep

    def positions(self, ids: pa.Array, state: _State | None = None) -> np.ndarray:
        """Each id's row (-1: not held)."""
        s = state or self.state
        found = pc.index_in(ids, value_set=s.id_array)
        return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)

    def search(
        self, vector: np.ndarray, k: int, mask: np.ndarray, state: _State | None = None
    ) -> list[tuple[str, float]]:
        """The `k` rows under `mask` nearest `vector` by cosine, nearest first."""
        s = state or self.state
        if k <= 0 or not len(s.ids):
            return []
        query = np.asarray(vector, np.float32)
        query = query / max(float(np.linalg.norm(query)), 1e-12)
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        sims = s.matrix[rows] @ query if rows.size < len(s.ids) else s.matrix @ query
        if k < sims.size:
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.lexsort((rows[top], -sims[top]))]
        else:
            top = np.lexsort((rows, -sims))
        return [(s.ids[rows[i]], float(sims[i])) for i in top.tolist()]

    def similarities(self, ids: Sequence[str], vector: np.ndarray) -> dict[str, float]:
        """Cosine similarity of each held id to `vector`."""
        s = self.state
        rows = [(i, s.index[i]) for i in ids if i in s.index]
        if not rows:
            return {}
        query = np.asarray(vector, np.float32)
        query = query / max(float(np.linalg.norm(query)), 1e-12)
        sims = s.matrix[[r for _, r in rows]] @ query
        return {unit_id: float(x) for (unit_id, _), x in zip(rows, sims.tolist(), strict=True)}


def _micro(when: datetime) -> int:
    return int(np.datetime64(when, "us").astype(np.int64))
