"""The bank's links as compact arrays in memory, for spreading activation.

Why not one SQL query per activation step: DuckDB answers `links WHERE source
IN (frontier)` by scanning the whole table (its ART index is only used for
tiny result sets, and then fetches row by row), and a bank of 100k units holds
~10M link rows (retain stores each link in both directions). That costs tens
to hundreds of milliseconds per step; recall's whole budget is 150 ms.

So the links are read once into CSR arrays (int32 target, int8 kind, float32
weight per edge; ~9 bytes an edge, ~100 MB at 100k units) and kept per open
bank. After any write to the bank (the store's `generation` counter moved),
the row count and the highest rowid of `links` say whether the table changed:
rows appended since (what retain does; found by rowid) are read and added as a
delta; anything else (deletes, or a rewrite that keeps the count: new rows get
new rowids) rebuilds the arrays. An UPDATE in place of a link's entity (an
entity merge) is not seen until the next rebuild; only the fan weighting reads
that column.

Which units are in scope (active, networks, time) is *not* cached: unit status
changes without touching links, so each step checks the neighbours it found
against DuckDB.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.recall.activation import Edge
from core.vocabulary import LINK_KINDS

# Alphabetical, so a code order is the string order spread() breaks ties with.
KINDS = tuple(sorted(LINK_KINDS))
BATCH_ROWS = 1_000_000
# Deltas are merged into the base arrays once they grow past this share of it.
MERGE_SHARE = 0.1


class LinkGraph:
    def __init__(self) -> None:
        # Held while refreshing and while one recall spreads over the arrays.
        self.lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self.ids: list[str] = []
        self._index: dict[str, int] = {}
        self._id_array = pa.array([], pa.string())
        self.entities: list[str] = []
        self._entity_index: dict[str, int] = {}
        self._entity_array = pa.array([], pa.string())
        # How specific each entity is (1 rare .. 0 in every unit), see `specificity`.
        self.specificity = np.zeros(0, np.float32)
        self.count = 0
        self.max_rowid = -1
        self.generation: object = None
        self._order: np.ndarray | None = None  # see `order`
        # base: CSR over the nodes known when it was built; delta: appended edges
        # sorted by source and found with searchsorted. Columns per edge:
        # target (int32), kind (int8), weight (float32), entity (int32, -1 none).
        self._offsets = np.zeros(1, np.int64)
        self._base = _empty_columns()
        self._d_sources = np.zeros(0, np.int32)
        self._delta = _empty_columns()

    @property
    def edges_held(self) -> int:
        return len(self._base[0]) + len(self._delta[0])

    # -- loading ---------------------------------------------------------------

    def _intern(self, values: pa.Array, entity: bool = False) -> np.ndarray:
        """Indices of `values` (node ids, or entity ids), adding unseen ones."""
        names, index = (self.entities, self._entity_index) if entity else (self.ids, self._index)
        value_set = self._entity_array if entity else self._id_array
        found = pc.index_in(values, value_set=value_set)
        missing = pc.unique(pc.filter(values, pc.and_(pc.is_null(found), pc.is_valid(values))))
        if len(missing):
            for name in missing.to_pylist():
                index[name] = len(names)
                names.append(name)
            value_set = pa.array(names, pa.string())
            if entity:
                self._entity_array = value_set
            else:
                self._id_array = value_set
            found = pc.index_in(values, value_set=value_set)
        return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)

    def _read(self, con, after_rowid: int):
        """(sources, columns, max rowid, rows read) of the rows past `after_rowid`."""
        reader = con.sql(
            "SELECT rowid, source, target, kind, weight, entity_id FROM links WHERE rowid > $after",
            params={"after": after_rowid},
        ).to_arrow_reader(BATCH_ROWS)
        kinds_set = pa.array(KINDS, pa.string())
        parts: list[tuple[np.ndarray, tuple[np.ndarray, ...]]] = []
        max_rowid, rows = after_rowid, 0
        for batch in reader:
            if batch.num_rows == 0:
                continue
            rows += batch.num_rows
            max_rowid = max(max_rowid, pc.max(batch.column(0)).as_py())
            kind = pc.index_in(batch.column(3), value_set=kinds_set)
            keep = pc.is_valid(kind)  # an unknown kind carries no activation
            batch = batch.filter(keep)
            if batch.num_rows == 0:
                continue
            parts.append(
                (
                    self._intern(batch.column(1)),
                    (
                        self._intern(batch.column(2)),
                        pc.filter(kind, keep).to_numpy(zero_copy_only=False).astype(np.int8),
                        batch.column(4).to_numpy(zero_copy_only=False).astype(np.float32),
                        self._intern(batch.column(5), entity=True),
                    ),
                )
            )
        if not parts:
            return np.zeros(0, np.int32), _empty_columns(), max_rowid, rows
        sources = np.concatenate([p[0] for p in parts])
        columns = tuple(np.concatenate([p[1][i] for p in parts]) for i in range(len(parts[0][1])))
        return sources, columns, max_rowid, rows

    def rebuild(self, con) -> None:
        self._reset()
        sources, columns, max_rowid, rows = self._read(con, -1)
        self._set_base(sources, columns)
        self.count, self.max_rowid = rows, max_rowid

    def _set_base(self, sources: np.ndarray, columns: tuple[np.ndarray, ...]) -> None:
        self._order = None
        order = np.argsort(sources, kind="stable")
        self._base = tuple(c[order] for c in columns)
        counts = np.bincount(sources, minlength=len(self.ids))
        self._offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._d_sources = np.zeros(0, np.int32)
        self._delta = _empty_columns()

    def refresh(self, con, generation: object = None) -> str:
        """Bring the arrays in line with the links table; returns what it did.
        `generation`: the store's (every committed write moves it), so at the one
        they were read at, the arrays are current without a query."""
        if generation is not None and generation == self.generation:
            return "current"
        # count(*) is read from table metadata (~0.2 ms at 12M rows; a query, ~1 ms
        # a recall under load); max(rowid) scans (~5 ms), so it is read only when
        # the count moved.
        count = con.execute("SELECT count(*) FROM links").fetchall()[0][0]
        if count == self.count and generation is None:
            return "current"
        max_rowid = con.execute("SELECT coalesce(max(rowid), -1) FROM links").fetchall()[0][0]
        if count == self.count and max_rowid == self.max_rowid:
            self.generation = generation  # the writes since did not touch links
            return "current"
        state = "rebuilt"
        if count > self.count and max_rowid > self.max_rowid and self.max_rowid >= 0:
            sources, columns, new_max, rows = self._read(con, self.max_rowid)
            if self.count + rows == count:
                self._add_delta(sources, columns)
                self.count, self.max_rowid = count, new_max
                state = "appended"
        if state == "rebuilt":
            self.rebuild(con)
        self.generation = generation
        self._load_specificity(con)
        return state

    def _load_specificity(self, con) -> None:
        spec = np.ones(len(self.entities), np.float32)
        for entity_id, value in entity_specificity(con).items():
            ix = self._entity_index.get(entity_id)
            if ix is not None:
                spec[ix] = value
        self.specificity = spec

    def _add_delta(self, sources: np.ndarray, columns: tuple[np.ndarray, ...]) -> None:
        sources = np.concatenate([self._d_sources, sources])
        columns = tuple(np.concatenate([d, c]) for d, c in zip(self._delta, columns, strict=True))
        if len(sources) > MERGE_SHARE * max(len(self._base[0]), 1):
            base_sources = np.repeat(
                np.arange(len(self._offsets) - 1, dtype=np.int32), np.diff(self._offsets)
            )
            self._set_base(
                np.concatenate([base_sources, sources]),
                tuple(np.concatenate([b, c]) for b, c in zip(self._base, columns, strict=True)),
            )
            return
        order = np.argsort(sources, kind="stable")
        self._d_sources = sources[order]
        self._delta = tuple(c[order] for c in columns)

    # -- reading ---------------------------------------------------------------

    @property
    def id_array(self) -> pa.Array:
        """The node ids as an arrow array, by index."""
        return self._id_array

    def index_of(self, node: str) -> int:
        """The node's index in the arrays, -1 for a node without links."""
        return self._index.get(node, -1)

    def order(self) -> np.ndarray:
        """Each node's rank in the string order of the ids: spread() breaks ties
        by id, and the array spreading (arrayspread.py) must break them the same way."""
        if self._order is None or len(self._order) != len(self.ids):
            ranks = np.empty(len(self.ids), np.int64)
            ranks[np.argsort(np.array(self.ids, dtype=object), kind="stable")] = np.arange(
                len(self.ids)
            )
            self._order = ranks
        return self._order

    def edge_arrays(
        self, nodes: np.ndarray, entity_fan: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(sources, targets, kinds, weights as float64) of every edge leaving
        `nodes` (indices), in the order `neighbours` gives them."""
        nodes = np.asarray(nodes, np.int64)
        parts: list[tuple[np.ndarray, tuple[np.ndarray, ...]]] = []
        n_base = len(self._offsets) - 1
        in_base = nodes[nodes < n_base]
        if in_base.size:
            starts = self._offsets[in_base]
            lengths = self._offsets[in_base + 1] - starts
            take = _ranges(starts, lengths)
            parts.append((np.repeat(in_base, lengths), tuple(c[take] for c in self._base)))
        if self._d_sources.size and nodes.size:
            lo = np.searchsorted(self._d_sources, nodes, "left")
            lengths = np.searchsorted(self._d_sources, nodes, "right") - lo
            take = _ranges(lo, lengths)
            parts.append((np.repeat(nodes, lengths), tuple(c[take] for c in self._delta)))
        if not parts:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty, np.zeros(0, np.float64)
        out = []
        for sources, (targets, kinds, weights, entities) in parts:
            if entity_fan and entities.size and self.specificity.size:
                has = entities >= 0
                weights = weights.copy()
                weights[has] *= self.specificity[entities[has]]
            out.append((sources, targets, kinds, weights))
        if len(out) == 1:
            s, t, k, w = out[0]
        else:
            s, t, k, w = (np.concatenate([o[i] for o in out]) for i in range(4))
        return (
            s.astype(np.int64, copy=False),
            t.astype(np.int64, copy=False),
            k.astype(np.int64, copy=False),
            w.astype(np.float64),
        )

    def neighbours(self, frontier: Sequence[str], entity_fan: bool = False) -> list[Edge]:
        """Every edge leaving the frontier nodes (unknown nodes have none).

        With `entity_fan`, an entity link's weight is multiplied by its entity's
        specificity (see `_load_specificity`)."""
        nodes = np.array([self._index[n] for n in frontier if n in self._index], np.int64)
        if nodes.size == 0:
            return []
        ids = self.ids
        sources, targets, kinds, weights = self.edge_arrays(nodes, entity_fan)
        return [
            Edge(ids[s], ids[t], KINDS[k], w)
            for s, t, k, w in zip(
                sources.tolist(), targets.tolist(), kinds.tolist(), weights.tolist(), strict=True
            )
        ]


def entity_specificity(con) -> dict[str, float]:
    """specificity(e) = 1 − ln(units mentioning e) / ln(units), clipped to [0, 1],
    for every mentioned entity.

    The fan effect of associative memory (ACT-R: strength falls with the log
    of an item's fan) and IDF in one: a link through an entity that nearly
    every memory mentions (the agent, the user) says little about
    relatedness; one through a rare entity says a lot."""
    rows = con.execute(
        "SELECT entity_id, count(DISTINCT unit_id) FROM mentions GROUP BY entity_id"
    ).fetchall()
    total = con.execute("SELECT count(*) FROM units").fetchall()[0][0]
    if total <= 1:
        return {entity_id: 1.0 for entity_id, _df in rows}
    log_total = float(np.log(total))
    return {
        entity_id: min(max(1.0 - float(np.log(max(df, 1))) / log_total, 0.0), 1.0)
        for entity_id, df in rows
    }


def _empty_columns() -> tuple[np.ndarray, ...]:
    return (
        np.zeros(0, np.int32),
        np.zeros(0, np.int8),
        np.zeros(0, np.float32),
        np.zeros(0, np.int32),
    )


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated aranges [start, start + length) for each pair."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    offsets = np.repeat(starts - (ends - lengths), lengths)
    return np.arange(total, dtype=np.int64) + offsets


_graphs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_graphs_lock = threading.Lock()


def link_graph(store) -> LinkGraph:
    """The store's link graph (one per open store). Refresh it under its lock:

    with graph.lock:
        graph.refresh(store.reader(), store.generation)
        ...read it...
    """
    with _graphs_lock:
        graph = _graphs.get(store)
        if graph is None:
            graph = _graphs[store] = LinkGraph()
        return graph
