"""The LanceDB vector index: built once a bank is large, exact-enough, and never a
way for deleted rows to come back. Real LanceDB on tmp_path; the size threshold
is lowered so a few thousand random vectors stand in for a large bank."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest

from core import Kind, NewUnit
from core.store import vectors as vectors_module
from core.store.vectors import VectorIndex, occurred_where
from tests.support.curation import folder_contains, table_rows, vector_ids

DIM = 32
NETWORKS = ["world", "experience", "opinion", "observation"]
BASE = datetime(2023, 1, 1)


def unit_vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def rows(ids: list[str], vectors: np.ndarray, status: str = "active") -> pa.Table:
    """Rows for `ids`: network by position, one day apart from BASE by position."""
    n = len(ids)
    return pa.table(
        {
            "id": ids,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
            "network": [NETWORKS[i % 4] for i in range(n)],
            "status": [status] * n,
            "occurred_start": [BASE + timedelta(days=i) for i in range(n)],
            "occurred_end": pa.array([None] * n, pa.timestamp("us")),
        }
    )


class Corpus:
    """A VectorIndex and the numpy copy of what it should hold."""

    def __init__(self, folder, n: int, seed: int = 1) -> None:
        self.index = VectorIndex(folder, DIM)
        self.ids = [f"u{i:05d}" for i in range(n)]
        self.vectors = unit_vectors(n, seed)
        self.table = rows(self.ids, self.vectors)
        for start in range(0, n, 1000):  # several fragments, as bulk writes leave them
            self.index.append(self.table.slice(start, 1000))

    def exact(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[str]:
        sims = self.vectors @ query
        if mask is not None:
            sims = np.where(mask, sims, -np.inf)
            k = min(k, int(mask.sum()))
        return [self.ids[i] for i in np.argsort(-sims)[:k]]


@pytest.fixture
def threshold(monkeypatch):
    monkeypatch.setattr(vectors_module, "INDEX_MIN_ROWS", 2000)


def overlap(got: list[str], want: list[str]) -> float:
    return len(set(got) & set(want)) / len(want)


def plan(index: VectorIndex, where: str | None = None) -> str:
    return index._query(unit_vectors(1, 0)[0], 10, where).explain_plan(True)


def test_a_table_below_the_threshold_stays_flat(tmp_path, threshold):
    corpus = Corpus(tmp_path, 1500)
    assert corpus.index.maybe_index() is False
    assert not corpus.index.indexed()
    assert "ANNIvfPartition" not in plan(corpus.index)
    query = unit_vectors(1, 9)[0]
    assert [h.id for h in corpus.index.search(query, 20)] == corpus.exact(query, 20)


def test_index_is_built_at_the_threshold_and_finds_the_exact_top_k(tmp_path, threshold):
    corpus = Corpus(tmp_path, 3000)
    assert corpus.index.maybe_index() is True and corpus.index.indexed()
    assert corpus.index.maybe_index() is False  # up to date: nothing more to do
    assert "ANNIvfPartition" in plan(corpus.index, "status = 'active'")
    assert "ScalarIndexQuery" in plan(corpus.index, "status = 'active'")
    for query in unit_vectors(20, 9):
        hits = corpus.index.search(query, 50)
        assert overlap([h.id for h in hits], corpus.exact(query, 50)) >= 0.95
        # Distances are exact, not quantised: recall scores by them.
        by_id = dict(zip(corpus.ids, corpus.vectors @ query, strict=True))
        assert all(h.similarity == pytest.approx(by_id[h.id], abs=1e-4) for h in hits)


@pytest.mark.slow
def test_rows_written_after_indexing_are_found_and_deleted_rows_are_not(tmp_path, threshold):
    corpus = Corpus(tmp_path, 3000)
    corpus.index.maybe_index()
    index = corpus.index
    # New rows are not in the index yet; LanceDB scans them flat on every search.
    fresh = unit_vectors(40, 5)
    index.append(rows([f"new{i}" for i in range(40)], fresh))
    assert index.maybe_index() is False  # 40 rows are too few to fold in
    assert all(index.search(v, 1)[0].id == f"new{i}" for i, v in enumerate(fresh))
    # Deleted indexed rows never come back, searched by their own vector.
    gone = corpus.ids[:30]
    index.delete(gone)
    for v in corpus.vectors[:30]:
        assert not set(gone) & {h.id for h in index.search(v, 10)}
    # An indexed row rewritten with a new vector is found once, by the new one.
    moved = unit_vectors(1, 6)
    index.upsert(rows([corpus.ids[100]], moved))
    assert [h.id for h in index.search(moved[0], 3)].count(corpus.ids[100]) == 1
    assert corpus.ids[100] not in {h.id for h in index.search(corpus.vectors[100], 1)}
    # Enough new rows to fold them into the index: still nothing deleted returns.
    more = unit_vectors(400, 7)
    index.append(rows([f"more{i}" for i in range(400)], more))
    assert index.maybe_index() is True
    assert index._table.index_stats(vectors_module.INDEX_NAME).num_unindexed_rows == 0
    assert all(index.search(v, 1)[0].id == f"more{i}" for i, v in enumerate(more[:20]))
    for v in corpus.vectors[:30]:
        assert not set(gone) & {h.id for h in index.search(v, 10)}
    assert index.count() == 3000 - 30 + 40 + 400


@pytest.mark.slow
def test_filters_work_with_the_index(tmp_path, threshold):
    corpus = Corpus(tmp_path, 3000)
    index = corpus.index
    index.upsert(rows(corpus.ids[:500], corpus.vectors[:500], status="superseded"))
    index.maybe_index()
    assert index.indexed()
    # Rows whose status changes after indexing (rewritten, so not in any index yet).
    index.upsert(rows(corpus.ids[500:540], corpus.vectors[500:540], status="superseded"))
    networks = np.array([NETWORKS[i % 4] for i in range(3000)])
    active = np.arange(3000) >= 540
    days = np.arange(3000)
    cases = [
        ("status = 'active'", active, 50),
        ("status = 'active' AND network IN ('opinion')", active & (networks == "opinion"), 50),
        (  # a narrow window: fewer matches than k, every one of them must come back
            "status = 'active' AND "
            + occurred_where(BASE + timedelta(days=1000), BASE + timedelta(days=1030)),
            active & (days >= 1000) & (days < 1030),
            200,
        ),
    ]
    for where, mask, k in cases:
        for query in unit_vectors(10, 11):
            got = [h.id for h in index.search(query, k, where)]
            want = corpus.exact(query, k, mask)
            assert set(got) <= {corpus.ids[i] for i in np.flatnonzero(mask)}
            assert overlap(got, want) >= 0.95


def big_units(n: int, seed: int = 3) -> list[NewUnit]:
    vectors = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [NewUnit(f"bulk fact number {i}", vector=tuple(vectors[i])) for i in range(n)]


@pytest.mark.slow
def test_bank_writes_build_the_index_and_opening_indexes_an_old_bank(engine, monkeypatch):
    monkeypatch.setattr(vectors_module, "INDEX_MIN_ROWS", 200)
    bank = engine.create_bank("written")
    bank.add_units(big_units(150))
    assert not bank.store.vectors.indexed()
    bank.add_units(big_units(100, seed=4))
    assert bank.store.vectors.indexed() and bank.verify().ok

    monkeypatch.setattr(vectors_module, "INDEX_MIN_ROWS", 10_000)
    old = engine.create_bank("old")
    old.add_units(big_units(300))
    assert not old.store.vectors.indexed()
    old.close()
    monkeypatch.setattr(vectors_module, "INDEX_MIN_ROWS", 200)
    old = engine.open_bank("old")
    assert old.store.vectors.indexed() and old.verify().ok

    old.store.rebuild_indexes()  # fresh tables swapped in: a large bank stays indexed
    assert old.store.vectors.indexed() and old.store.vectors.versions() == 1
    assert old.verify().ok


@pytest.fixture
def index_everything(monkeypatch):
    monkeypatch.setattr(vectors_module, "INDEX_MIN_ROWS", 1)


@pytest.mark.slow
def test_purge_of_an_indexed_bank_leaves_no_vector_and_an_index(index_everything, built):
    bank, b = built
    assert bank.store.vectors.indexed()  # the copied template bank was indexed on open
    doomed = b.units["o_music"]
    purged_vector = np.asarray(
        table_rows(bank, "SELECT vector FROM units WHERE id = ?", [doomed])[0][0],
        dtype=np.float32,
    ).tobytes()
    assert folder_contains(bank.folder / "vectors", purged_vector)  # positive control
    # The index keeps its own (transposed) copy of every vector, which a byte
    # scan cannot see: the index files that held the purged one must be gone.
    old_index_files = set((bank.folder / "vectors").rglob("_indices/*/*"))
    assert old_index_files

    change = bank.purge_entity(b.entities["marker"], confirm=True)

    assert doomed in change.removed[Kind.UNIT]
    assert bank.store.vectors.indexed() and bank.store.vectors.versions() == 1
    assert doomed not in vector_ids(bank, "plays the cello")
    assert folder_contains(bank.folder, purged_vector) == []
    assert not any(path.exists() for path in old_index_files)
    assert bank.verify().ok
