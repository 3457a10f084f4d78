"""A small bank's vectors in memory answer as LanceDB does, and follow its writes."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import numpy as np
import pytest

from core import NewUnit
from core.recall import channels as ch
from core.types import Network

NETWORKS = [n.value for n in Network]
DAY0 = datetime(2024, 1, 1)


def _units(rng: random.Random, dim: int, n: int) -> list[NewUnit]:
    units = []
    for i in range(n):
        vector = np.array([rng.gauss(0, 1) for _ in range(dim)], np.float32)
        start = DAY0 + timedelta(days=rng.randrange(60)) if rng.random() < 0.8 else None
        end = start + timedelta(days=rng.randrange(5)) if start and rng.random() < 0.5 else None
        units.append(
            NewUnit(
                text=f"fact {i}",
                network=Network(rng.choice(NETWORKS)),
                occurred_start=start,
                occurred_end=end,
                vector=tuple(float(x) for x in vector / np.linalg.norm(vector)),
                id=f"u{i:03d}",
            )
        )
    return units


def _lance(store, vector, k, scope):
    return [(h.id, h.similarity) for h in store.vectors.search(vector, k, scope.lance_where())]


def _exact(store, vector, k, scope):
    return [(h.id, h.similarity) for h in ch.vector_search(store, vector, k, scope)]


SCOPES = [
    ch.Scope(),
    ch.Scope(networks=("world",)),
    ch.Scope(networks=("world", "experience")),
    ch.Scope(start=DAY0 + timedelta(days=20)),
    ch.Scope(end=DAY0 + timedelta(days=10)),
    ch.Scope(("opinion", "world"), DAY0 + timedelta(days=5), DAY0 + timedelta(days=30)),
]


def _same(exact, lance):
    assert [i for i, _ in exact] == [i for i, _ in lance]
    assert [s for _, s in exact] == pytest.approx([s for _, s in lance], abs=1e-5)


def test_exact_search_answers_as_lancedb_and_follows_writes(bank):
    store = bank.store
    rng = random.Random(3)
    bank.add_units(_units(rng, store.dim, 120))
    assert store.exact_vectors() is not None and len(store.exact_vectors()) == 120
    assert ch.search_index(store).startswith("exact")
    queries = [np.array([rng.gauss(0, 1) for _ in range(store.dim)], np.float32) for _ in range(4)]
    for vector in queries:
        for scope in SCOPES:
            _same(_exact(store, vector, 15, scope), _lance(store, vector, 15, scope))
    # Writes after the load reach it: hidden, deleted and added units.
    hidden = [f"u{i:03d}" for i in range(0, 120, 7)]
    bank.hide_units(hidden)
    bank.delete_units(["u001", "u002"])
    bank.add_units(
        [NewUnit(text="late", vector=tuple(float(x) for x in queries[0]), id="late")]
    )
    for vector in queries:
        for scope in SCOPES:
            exact, lance = _exact(store, vector, 15, scope), _lance(store, vector, 15, scope)
            _same(exact, lance)
            assert not {i for i, _ in exact} & {*hidden, "u001", "u002"}
    assert _exact(store, queries[0], 1, ch.Scope())[0][0] == "late"


def test_a_tag_scope_limits_the_exact_search(bank):
    store = bank.store
    bank.add_units(_units(random.Random(5), store.dim, 40))
    vector = np.ones(store.dim, np.float32)
    allowed = frozenset({"u003", "u010", "u020", "missing"})
    hits = _exact(store, vector, 10, ch.Scope(allowed=allowed))
    assert {i for i, _ in hits} <= allowed - {"missing"}
    everything = dict(_exact(store, vector, 40, ch.Scope()))
    expected = sorted(
        (i for i in allowed if i in everything), key=lambda i: -everything[i]
    )
    assert [i for i, _ in hits] == expected


def test_a_bank_past_the_limit_searches_lancedb(bank, monkeypatch):
    from core.store import exact

    monkeypatch.setattr(exact, "EXACT_MAX_UNITS", 10)
    bank.add_units(_units(random.Random(9), bank.store.dim, 20))
    assert bank.store.exact_vectors() is None
    assert ch.search_index(bank.store) == "LanceDB"
    vector = np.ones(bank.store.dim, np.float32)
    assert len(ch.vector_search(bank.store, vector, 5, ch.Scope())) == 5
