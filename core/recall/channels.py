"""The four retrieval channels. Each returns a ranked list with its raw scores.

Every channel sees only active units of the requested networks inside the
caller's time filter and, when the caller names tags, inside the set of units
those tags let through (`Scope.allowed`, core/store/tagged.py): a pre-filter
each channel applies in its own search, never a filter on what it found.
Channels run on worker threads, so each takes the store and opens its own
DuckDB cursor.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from core.recall.activation import Activation
from core.recall.arrayspread import spread_arrays
from core.recall.linkgraph import LinkGraph, link_graph
from core.recall.settings import activation_params
from core.recall.timescore import interval_proximity
from core.recall.trace import ChannelResult
from core.store.bank_store import BankStore
from core.store.exact import ExactVectors
from core.store.filters import sql_string, sql_string_list
from core.store.vectors import VectorHit, occurred_where
from core.types import UnitStatus
from core.vocabulary import NETWORKS, STOP_REASONS

ALL_NETWORKS = NETWORKS
_WORD = re.compile(r"[^\W_]", re.UNICODE)


def has_words(text: str) -> bool:
    """Whether `text` has a letter or digit: punctuation alone retrieves nothing."""
    return _WORD.search(text) is not None


# A tag scope this small is searched exactly, over its own vectors in DuckDB
# (a few ms for a thousand units); a larger one is a prefilter on LanceDB's search.
EXACT_SCOPE = 5_000


@dataclass(frozen=True)
class Scope:
    """What every channel is limited to: active units, these networks, this time,
    and (`allowed`, None: no limit) these unit ids."""

    networks: tuple[str, ...] = ALL_NETWORKS
    start: datetime | None = None
    end: datetime | None = None
    allowed: frozenset[str] | None = None
    # The scope as a mask over the bank's in-memory vectors, computed once for
    # each state of them and shared by the channels of one recall (see `mask`).
    _masks: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def mask(self, exact: ExactVectors, state) -> np.ndarray:
        """Which rows of `exact`'s `state` are in this scope."""
        cached = self._masks.get("mask")
        if cached is not None and cached[0] is state:
            return cached[1]
        mask = exact.mask(None if self.all_networks else self.networks, self.start, self.end, state)
        if self.allowed is not None:
            rows = exact.positions(pa.array(sorted(self.allowed), pa.string()), state)
            tagged = np.zeros(len(mask), bool)
            tagged[rows[rows >= 0]] = True
            mask &= tagged
        self._masks["mask"] = (state, mask)
        return mask

    def admits(self, unit_id: str) -> bool:
        return self.allowed is None or unit_id in self.allowed

    @property
    def all_networks(self) -> bool:
        return set(self.networks) >= set(ALL_NETWORKS)

    def lance_where(self) -> str:
        parts = [f"status = {sql_string(UnitStatus.ACTIVE.value)}"]
        if not self.all_networks:
            parts.append(f"network IN {sql_string_list(self.networks)}")
        when = occurred_where(self.start, self.end)
        if when:
            parts.append(when)
        return " AND ".join(parts)

    def sql(self, alias: str = "u") -> tuple[str, list[Any]]:
        """A DuckDB condition on units `alias`, with its parameters."""
        parts = [f"{alias}.status = ?"]
        params: list[Any] = [UnitStatus.ACTIVE.value]
        if not self.all_networks:
            parts.append(f"{alias}.network IN (SELECT unnest(?))")
            params.append(list(self.networks))
        if self.end is not None:
            parts.append(f"{alias}.occurred_start < ?")
            params.append(self.end)
        if self.start is not None:
            parts.append(f"coalesce({alias}.occurred_end, {alias}.occurred_start) >= ?")
            params.append(self.start)
        return " AND ".join(parts), params

    def within(self, start: datetime | None, end: datetime | None) -> Scope:
        """This scope, further limited to what occurs in [start, end)."""
        later = [t for t in (self.start, start) if t is not None]
        earlier = [t for t in (self.end, end) if t is not None]
        return Scope(
            self.networks,
            max(later) if later else None,
            min(earlier) if earlier else None,
            self.allowed,
        )


def search_index(store: BankStore) -> str:
    """Which index answers a bank's vector searches, in words (for the trace)."""
    exact = store.exact_vectors()
    if exact is not None:
        return f"exact, in memory ({len(exact):,} vectors)"
    return "LanceDB"


def vector_search(store: BankStore, vector: np.ndarray, k: int, scope: Scope) -> list[VectorHit]:
    """The `k` units in `scope` nearest `vector` by cosine. A small bank is searched
    exactly in memory (core/store/exact.py); in a large one, a small tag scope is
    searched exactly over its own vectors, a large one, and no tag scope, through
    LanceDB's prefiltered search."""
    exact = store.exact_vectors()
    if exact is not None:
        state = exact.state
        hits = exact.search(vector, k, scope.mask(exact, state), state)
        return [VectorHit(unit_id, similarity) for unit_id, similarity in hits]
    if scope.allowed is None:
        return store.vectors.search(vector, k, scope.lance_where())
    if not scope.allowed or k <= 0:
        return []
    if len(scope.allowed) > EXACT_SCOPE:
        where = f"{scope.lance_where()} AND id IN {sql_string_list(sorted(scope.allowed))}"
        return store.vectors.search(vector, k, where)
    condition, params = scope.sql("u")
    table = (
        store.reader()
        .sql(
            f"SELECT u.id, u.vector FROM units u WHERE u.id IN (SELECT unnest(?)) AND {condition}",
            params=[sorted(scope.allowed), *params],
        )
        .to_arrow_table()
    )
    if table.num_rows == 0:
        return []
    ids = table.column("id").to_pylist()
    column = table.column("vector").combine_chunks()
    matrix = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    matrix = matrix.reshape(len(ids), -1)
    norms = np.maximum(np.linalg.norm(matrix, axis=1), 1e-12)
    query = np.asarray(vector, dtype=np.float32)
    sims = (matrix @ query) / (norms * max(float(np.linalg.norm(query)), 1e-12))
    top = np.argsort(-sims, kind="stable")[:k]
    return [VectorHit(ids[i], float(sims[i])) for i in top]


def silent(name: str, note: str) -> ChannelResult:
    return ChannelResult(name, ran=False, note=note)


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


# -- semantic ------------------------------------------------------------------


def semantic(store: BankStore, vector: np.ndarray, k: int, scope: Scope) -> ChannelResult:
    """LanceDB nearest neighbours by cosine; score = cosine similarity."""
    t0 = time.perf_counter()
    hits = vector_search(store, vector, k, scope)
    return ChannelResult(
        "semantic",
        [h.id for h in hits],
        [h.similarity for h in hits],
        _ms(t0),
        "" if hits else "no unit in scope",
        details={"index": search_index(store)},
    )


# -- lexical -------------------------------------------------------------------


def lexical(store: BankStore, text: str, k: int, scope: Scope) -> ChannelResult:
    """Tantivy BM25 over the unit text (words only: the text is never query syntax).

    The index knows networks but not status or time, so hits are checked
    against DuckDB; the search widens until k survive or the index runs out."""
    t0 = time.perf_counter()
    if not has_words(text):
        return ChannelResult("lexical", ms=_ms(t0), note="no words in the query")
    networks = None if scope.all_networks else list(scope.networks)
    condition, params = scope.sql("u")
    con = store.reader()
    want = k
    kept: list[tuple[str, float]] = []
    allowed = sorted(scope.allowed) if scope.allowed is not None else None
    if allowed == []:
        return ChannelResult("lexical", ms=_ms(t0), note="no unit in the tag scope")
    for _ in range(4):
        hits = store.lexical.search(text, want, networks, ids=allowed)
        if not hits:
            break
        allowed = _in_scope(store, con, [h.id for h in hits], scope, condition, params)
        kept = [(h.id, h.score) for h in hits if h.id in allowed]
        if len(kept) >= k or len(hits) < want:
            break
        want *= 4
    kept = kept[:k]
    return ChannelResult(
        "lexical",
        [i for i, _ in kept],
        [s for _, s in kept],
        _ms(t0),
        "" if kept else "no unit in scope shares a word with the query",
    )


def _in_scope(store: BankStore, con, ids: list[str], scope: Scope, condition, params) -> set[str]:
    """The ids in `scope`: from the scope's mask when the bank's units are in
    memory, else asked of DuckDB."""
    exact = store.exact_vectors()
    if exact is not None:
        state = exact.state
        mask = scope.mask(exact, state)
        rows = exact.positions(pa.array(ids, pa.string()), state)
        return {i for i, r in zip(ids, rows.tolist(), strict=True) if r >= 0 and mask[r]}
    return {
        r[0]
        for r in con.execute(
            f"SELECT u.id FROM units u WHERE u.id IN (SELECT unnest(?)) AND {condition}",
            [ids, *params],
        ).fetchall()
    }


# -- graph ---------------------------------------------------------------------


class ScopeMask:
    """Which of the link graph's nodes spreading may pass through: active units of
    the scope's networks and time (and tag scope), as a boolean array by graph
    index (arrayspread.py reads it). In a small bank, from the scope's mask over
    the vectors in memory, at once; in a large one, checked against DuckDB once
    per node, in one query per step for the nodes a step reaches first."""

    def __init__(self, store: BankStore, scope: Scope, graph: LinkGraph) -> None:
        self._con = store.reader()
        self._scope = scope
        self._condition, self._params = scope.sql("u")
        self._graph = graph
        n = len(graph.ids)
        self._admitted = np.zeros(n, bool)
        self._checked = np.zeros(n, bool)
        exact = store.exact_vectors()
        if exact is not None and n:
            # A small bank's units are in memory: the whole mask at once, no query.
            state = exact.state
            rows = exact.positions(graph.id_array, state)
            inside = rows >= 0
            self._admitted[inside] = scope.mask(exact, state)[rows[inside]]
            self._checked[:] = True

    def __call__(self, targets: np.ndarray) -> np.ndarray:
        """Whether each target (graph index) may be lit."""
        fresh = np.unique(targets[~self._checked[targets]])
        if fresh.size:
            ids = self._graph.ids
            names = [ids[i] for i in fresh.tolist()]
            if self._scope.allowed is not None:
                names = [n for n in names if n in self._scope.allowed]
            if names:
                found = {
                    r[0]
                    for r in self._con.execute(
                        f"SELECT u.id FROM units u WHERE u.id IN (SELECT unnest(?))"
                        f" AND {self._condition}",
                        [names, *self._params],
                    ).fetchall()
                }
                index = self._graph.index_of
                self._admitted[[index(n) for n in found]] = True
            self._checked[fresh] = True
        return self._admitted[targets]


def graph(
    store: BankStore,
    seed_hits: Sequence[tuple[str, float]],
    k: int,
    scope: Scope,
    settings: Mapping[str, Any],
    mu: Mapping[str, float],
    vector: np.ndarray | None = None,
) -> tuple[ChannelResult, Activation]:
    """Spreading activation from `seed_hits` (id, similarity to the query), best first.

    score = activation · ((1 − g) + g · max(similarity to the query, 0)) with
    g = `recall.graph_relevance` (0: activation alone)."""
    t0 = time.perf_counter()
    floor = float(settings["recall.seed_similarity_floor"])
    seeds = {
        unit_id: similarity
        for unit_id, similarity in seed_hits[: int(settings["recall.activation_seeds"])]
        if similarity >= floor
    }
    graph_arrays = link_graph(store)
    with graph_arrays.lock:
        t_load = time.perf_counter()
        state = graph_arrays.refresh(store.reader(), store.generation)
        load_ms = _ms(t_load)
        activation, steps_read, edges_read = spread_arrays(
            graph_arrays,
            seeds,
            ScopeMask(store, scope, graph_arrays),
            **{**activation_params(settings), "mu": mu},
            entity_fan=bool(settings["recall.entity_fan"]),
        )
    ranked = activation.ranked(include_seeds=bool(settings["recall.graph_include_seeds"]))
    relevance = float(settings["recall.graph_relevance"])
    if relevance > 0 and ranked and vector is not None:
        # Activation says "close to the best hits"; similarity says "about the
        # query". Among the many neighbours one seed lights equally, the ones
        # about the query come first.
        similarity = similarities(store, [n for n, _ in ranked], vector)
        ranked = sorted(
            (
                (n, a * ((1 - relevance) + relevance * max(similarity.get(n, 0.0), 0.0)))
                for n, a in ranked
            ),
            key=lambda pair: (-pair[1], pair[0]),
        )
    ranked = ranked[:k]
    if not seeds:
        note = f"no seed reached the similarity floor {floor:g}"
    else:  # why, in words: the note is what the trace, the CLI and the debugger show
        why = STOP_REASONS.get(activation.stopped, activation.stopped)
        note = (
            f"nothing beyond the seeds was lit (stopped: {why})"
            if not ranked
            else f"stopped: {why}"
        )
    result = ChannelResult(
        "graph",
        [n for n, _ in ranked],
        [a for _, a in ranked],
        _ms(t0),
        note,
        details={
            "activation": [activation.activation[n] for n, _ in ranked],
            "steps_read": steps_read,
            "edges_read": edges_read,
            "links": {"state": state, "ms": load_ms, "edges_held": graph_arrays.edges_held},
        },
    )
    return result, activation


def similarities(store: BankStore, ids: list[str], vector: np.ndarray) -> dict[str, float]:
    """Cosine similarity of each unit in `ids` to the (normalised) query vector."""
    if not ids:
        return {}
    exact = store.exact_vectors()
    if exact is not None:
        return exact.similarities(ids, vector)
    rows = (
        store.reader()
        .execute("SELECT id, vector FROM units WHERE id IN (SELECT unnest(?))", [ids])
        .fetchall()
    )
    if not rows:
        return {}
    matrix = np.asarray([r[1] for r in rows], dtype=np.float32)
    sims = matrix @ np.asarray(vector, dtype=np.float32)
    return {r[0]: float(x) for r, x in zip(rows, sims, strict=True)}


# -- temporal ------------------------------------------------------------------


def temporal(
    store: BankStore,
    vector: np.ndarray,
    q_start: datetime,
    q_end: datetime,
    k: int,
    scope: Scope,
    similarity_weight: float,
) -> ChannelResult:
    """Units whose occurrence overlaps the query's interval.

    score = (1 − s) · midpoint proximity + s · max(similarity to the query, 0)
    with s = `similarity_weight`. Proximity alone cannot order the many facts
    of one day (they share a midpoint), so similarity decides among them; the
    candidates are the most query-similar of the overlapping units."""
    t0 = time.perf_counter()
    hits = vector_search(store, vector, max(4 * k, 200), scope.within(q_start, q_end))
    if not hits:
        return ChannelResult("temporal", ms=_ms(t0), note="no unit in scope occurs in the interval")
    times = {
        r[0]: (r[1], r[2])
        for r in store.reader()
        .execute(
            "SELECT id, occurred_start, occurred_end FROM units WHERE id IN (SELECT unnest(?))",
            [[h.id for h in hits]],
        )
        .fetchall()
    }
    scored = []
    for h in hits:
        start, end = times.get(h.id, (None, None))
        proximity = interval_proximity(start, end, q_start, q_end)
        if proximity <= 0:
            continue
        score = (1 - similarity_weight) * proximity + similarity_weight * max(h.similarity, 0.0)
        scored.append((h.id, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    scored = scored[:k]
    return ChannelResult(
        "temporal",
        [i for i, _ in scored],
        [s for _, s in scored],
        _ms(t0),
        f"{len(hits)} overlapping units considered",
    )
