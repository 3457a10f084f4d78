"""One bank on disk: DuckDB as the source of truth, LanceDB and Tantivy derived.

The write order is the whole crash-safety argument:

1. one DuckDB transaction changes the rows *and* queues the touched unit ids
   in `index_queue`;
2. the indexes are brought in line with DuckDB for the queued ids
   (delete by id, then add what DuckDB holds: idempotent);
3. the queue rows are deleted.

A crash after 1 leaves queued ids that the next open replays; a crash inside 2
is replayed the same way; a crash before 1 commits loses nothing that was
reported as written. So the three stores can only disagree about ids that are
still queued, and the indexes drain the queue when they open (on the first
search or write after the bank opens: `open_indexes`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from core.store.access import AccessCounts, Pending
from core.store.failures import NEXT_OPEN, is_storage_failure, storage_error
from core.store.lexical import LexicalIndex
from core.store.lock import BankLock
from core.store.schema import migrate
from core.types import EmbeddingMismatchError, VerifyReport

if TYPE_CHECKING:
    from core.store.exact import ExactVectors
    from core.store.vectors import VectorIndex

DB_NAME = "bank.duckdb"
VECTORS_DIR = "vectors"
BM25_DIR = "bm25"
INDEX_CHUNK = 5000
# What a rebuild killed midway leaves: half-built indexes and database copies
# (`*.rebuild`) and live ones set aside (`*.old`). DuckDB is the source of
# truth, so they are only ever garbage; a live index found missing is rebuilt
# from DuckDB by the agreement check on open.
ORPHANS = (
    VECTORS_DIR + ".rebuild",
    VECTORS_DIR + ".old",
    BM25_DIR + ".rebuild",
    BM25_DIR + ".old",
    DB_NAME + ".rebuild",
    DB_NAME + ".rebuild.wal",
)


def remove_orphans(folder: Path) -> list[str]:
    """Delete what an interrupted rebuild left in a bank folder (the bank lock is
    held); returns the names removed."""
    removed = []
    for name in ORPHANS:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name)
    return removed


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back if a transaction is still open; never mask the error being handled."""
    with contextlib.suppress(duckdb.Error):
        con.execute("ROLLBACK")


def utcnow() -> datetime:
    """Naive UTC, the one time convention inside the engine."""
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass
class Tx:
    """An open write transaction. Rows go through `con`; units whose index
    entries must follow are named with `touch`."""

    con: duckdb.DuckDBPyConnection
    touched: set[str] = field(default_factory=set)

    def touch(self, unit_ids: Iterable[str]) -> None:
        new = [i for i in unit_ids if i not in self.touched]
        if new:
            self.con.execute("INSERT OR IGNORE INTO index_queue SELECT unnest(?)", [new])
            self.touched.update(new)


class BankStore:
    def __init__(
        self,
        folder: Path,
        name: str,
        embedding_model: str,
        dim: int,
        *,
        adopt_stored_embedding: bool = False,
    ) -> None:
        """Open (and lock) a bank's stores. A bank recorded with another embedding model
        is refused, unless `adopt_stored_embedding` (to re-embed it: `replace_embedding`)."""
        self.folder = folder
        self.name = name
        self._lock = BankLock(folder, name)
        self._lock.acquire()
        self._write_lock = threading.RLock()
        # Counts committed write transactions: caches derived from the tables
        # (recall's in-memory link graph) check it before they trust themselves.
        self.generation = 0
        # Everything after the lock is inside the try: an open that fails (a full
        # disk while the queue is replayed, say) must not keep the bank locked by
        # this very process until it exits.
        try:
            remove_orphans(folder)
            self._db = duckdb.connect(str(folder / DB_NAME))
            migrate(self._db)
            self.embedding_model, self.dim = self._check_embedding(
                embedding_model, dim, adopt=adopt_stored_embedding
            )
        except BaseException:
            self.abandon()
            raise
        # The indexes open, and `recover` runs, when first needed (a search, a
        # write, verify): browsing a bank reads DuckDB alone, and LanceDB takes
        # a second and more to import.
        self._vectors: VectorIndex | None = None
        self._lexical: LexicalIndex | None = None
        # A small bank's vectors in memory too (exact.py); None: not loaded, or
        # the bank is past the limit (then `_exact_checked` says so).
        self._exact: ExactVectors | None = None
        self._exact_checked = False
        # Ids whose LanceDB and Tantivy entries wait for the end of a batch
        # (`deferred_indexes`); None: no batch open.
        self._deferred: set[str] | None = None
        # Recall's access counts, written in the background (access.py).
        self.access = AccessCounts(self._write_access, self._write_lock)

    @property
    def vectors(self) -> VectorIndex:
        self.open_indexes()
        return self._vectors

    @property
    def lexical(self) -> LexicalIndex:
        self.open_indexes()
        return self._lexical

    def open_indexes(self) -> None:
        """Open LanceDB and Tantivy and bring them in line with DuckDB (`recover`),
        once. A failure (a full disk during the replay) leaves them closed: the
        next use tries again, and DuckDB, the source of truth, is untouched."""
        if self._lexical is not None:
            return
        with self._write_lock:
            if self._lexical is not None:
                return
            if self.closed:
                raise RuntimeError(f"bank {self.name!r} is closed")
            from core.store.vectors import VectorIndex

            self._vectors = VectorIndex(self.folder / VECTORS_DIR, self.dim)
            self._lexical = LexicalIndex(self.folder / BM25_DIR)
            try:
                self.recover()
            except BaseException:
                self._close_indexes()
                raise

    def exact_vectors(self) -> ExactVectors | None:
        """The bank's vectors in memory (exact.py) when it holds at most
        EXACT_MAX_UNITS units, loaded on first use; None above that."""
        if self._exact is not None or self._exact_checked:
            return self._exact
        with self._write_lock:
            if self._exact is None and not self._exact_checked:
                self._load_exact()
        return self._exact

    def _load_exact(self) -> None:
        # Under the write lock: no commit can land between this read and the
        # first update `_index_chunk` makes.
        from core.store.exact import EXACT_MAX_UNITS, ExactVectors

        con = self.reader()
        self._exact_checked = True
        if con.execute("SELECT count(*) FROM units").fetchall()[0][0] > EXACT_MAX_UNITS:
            self._exact = None
            return
        exact = ExactVectors(self.dim)
        exact.load(
            con.sql(
                "SELECT id, vector, network, status, occurred_start, occurred_end FROM units"
            ).to_arrow_table()
        )
        self._exact = exact

    def _forget_exact(self) -> None:
        """Drop the in-memory vectors (reloaded on next use): after a rebuild."""
        self._exact, self._exact_checked = None, False

    def _close_indexes(self) -> None:
        lexical, self._vectors, self._lexical = self._lexical, None, None
        if lexical is not None:
            lexical.close()

    # -- connections ---------------------------------------------------------

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A cursor for reads; cheap, and safe to use from the calling thread only."""
        return self._db.cursor()

    def counted_reader(self) -> duckdb.DuckDBPyConnection:
        """A reader that sees every access count recalled so far (access.py
        writes them in the background): for reads that show or copy them. A
        read never waits for a write (a long retain) to write them: then it
        sees the counts written so far."""
        # A duckdb.Error: this thread's own open transaction holds those rows (a
        # read inside a curation's transaction); the counts wait for the next flush.
        with contextlib.suppress(duckdb.Error):
            self.access.flush(wait=False)
        return self.reader()

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """One unit of work: DuckDB commit first, then the indexes catch up."""
        with self._write_lock:
            con = self._db.cursor()
            con.execute("BEGIN TRANSACTION")
            tx = Tx(con)
            try:
                yield tx
            except BaseException:
                _rollback(con)
                raise
            try:
                con.execute("COMMIT")
            except BaseException as error:
                # A failed COMMIT may end the transaction itself: a ROLLBACK then
                # fails with "no transaction is active", which must not hide why.
                _rollback(con)
                if is_storage_failure(error):
                    raise storage_error(
                        error, "the change was not saved (DuckDB commits all or nothing)"
                    ) from error
                raise
            self.generation += 1
            if tx.touched and self._deferred is not None and self._exact is not None:
                # A batch of writes (`deferred_indexes`): the vectors in memory
                # follow now (the next document's plan searches them), LanceDB
                # and Tantivy once, when the batch ends.
                self._follow_exact(tx.touched)
                self._deferred |= tx.touched
                if self._exact is None:  # the batch took the bank past the limit
                    pending, self._deferred = self._deferred, set()
                    self._sync_saved(pending)
            elif tx.touched:
                self._sync_saved(set(tx.touched))

    def _sync_saved(self, ids: set[str]) -> None:
        """The indexes follow a committed change; a storage failure says the change is saved."""
        try:
            self.sync_indexes(ids)
        except Exception as error:
            if not is_storage_failure(error):
                raise
            raise storage_error(
                error,
                "the change was saved, but the search indexes could not follow;"
                f" {NEXT_OPEN} (or run `engram repair BANK`)",
            ) from error

    @contextmanager
    def deferred_indexes(self) -> Iterator[None]:
        """Many small write transactions as one batch (a retain of many small
        documents): each commits on its own, but LanceDB and Tantivy catch up
        once, at the end (one fragment, one index commit: ~0.2 s a document
        otherwise), while a small bank's vectors in memory follow every commit.
        A large bank (no vectors in memory) syncs each commit as usual: its
        next plan searches LanceDB. The write lock is held throughout; a crash
        midway leaves the ids queued, and the next open indexes them."""
        with self._write_lock:
            if self._deferred is not None:  # nested: the outer batch syncs
                yield
                return
            self.exact_vectors()
            self._deferred = set()
            try:
                yield
            finally:
                pending, self._deferred = self._deferred, None
                if pending:
                    self._sync_saved(pending)

    def _follow_exact(self, ids: set[str]) -> None:
        rows = (
            self.reader()
            .sql(
                "SELECT id, vector, network, status, occurred_start, occurred_end"
                " FROM units WHERE id IN (SELECT unnest($ids))",
                params={"ids": sorted(ids)},
            )
            .to_arrow_table()
        )
        present = set(rows.column("id").to_pylist())
        self._update_exact(rows, [i for i in ids if i not in present])

    def _update_exact(self, rows, gone: list[str]) -> None:
        exact = self._exact
        if exact is None:
            return
        from core.store.exact import EXACT_MAX_UNITS

        if len(exact) + rows.num_rows > EXACT_MAX_UNITS:
            self._exact = None  # past the limit: searches go to LanceDB
        else:
            exact.update(rows, gone)

    def _write_access(self, pending: Pending) -> None:
        """Add a batch of recall counts (one statement: all or none), under the
        write lock (AccessCounts takes it). No generation bump: nothing derived
        from the tables reads access counts."""
        import pyarrow as pa

        ids = list(pending)
        table = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "n": pa.array([pending[i][0] for i in ids], pa.int32()),
                "last": pa.array([pending[i][1] for i in ids], pa.timestamp("us")),
            }
        )
        con = self._db.cursor()
        con.register("_access", table)
        try:
            con.execute(
                "UPDATE units SET access_count = access_count + a.n,"
                " last_accessed_at = CASE WHEN units.last_accessed_at > a.last"
                " THEN units.last_accessed_at ELSE a.last END"
                " FROM _access a WHERE units.id = a.id"
            )
        finally:
            con.unregister("_access")

    # -- meta ----------------------------------------------------------------

    def meta(self, key: str, default=None):
        row = self.reader().execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, con: duckdb.DuckDBPyConnection, key: str, value) -> None:
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, json.dumps(value)])

    def _check_embedding(self, model: str, dim: int, adopt: bool = False) -> tuple[str, int]:
        stored = self.meta("embedding")
        if stored is None:
            with self._db.cursor() as con:
                self.set_meta(con, "embedding", {"model": model, "dim": dim})
            return model, dim
        if (stored["model"] != model or int(stored["dim"]) != dim) and not adopt:
            recorded, current = f"{stored['model']} ({stored['dim']}-d)", f"{model} ({dim}-d)"
            raise EmbeddingMismatchError(
                f"bank {self.name!r} was embedded with {recorded}; this engine uses {current}."
                f" Open it with the same model, or re-embed it: engram repair {self.name!r} --re-embed",
                recorded,
                current,
            )
        return stored["model"], int(stored["dim"])

    def replace_embedding(self, model: str, dim: int, ids: list[str], vectors: np.ndarray) -> None:
        """Give every unit its vector from `model` in one transaction (all or nothing),
        record the model, and rebuild the vector index at the new dimension."""
        import pyarrow as pa

        fresh = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "vector": pa.array(list(vectors.astype(np.float32)), pa.list_(pa.float32())),
            }
        )
        with self.transaction() as tx:
            tx.con.register("fresh_vectors", fresh)
            tx.con.execute(
                "UPDATE units SET vector = f.vector, embedding_model = ? "
                "FROM fresh_vectors AS f WHERE units.id = f.id",
                [model],
            )
            tx.con.unregister("fresh_vectors")
            self.set_meta(tx.con, "embedding", {"model": model, "dim": dim})
        self.embedding_model, self.dim = model, dim
        self.rebuild_indexes()

    # -- indexes -------------------------------------------------------------

    def pending(self) -> int:
        return self.reader().execute("SELECT count(*) FROM index_queue").fetchone()[0]

    def sync_indexes(self, ids: Iterable[str] | None = None) -> int:
        """Bring LanceDB and Tantivy in line with DuckDB for queued ids.

        With `ids`, only those (if still queued); without, the whole queue.
        Returns how many ids were processed."""
        with self._write_lock:
            con = self.reader()
            if ids is None:
                queued = [r[0] for r in con.execute("SELECT unit_id FROM index_queue").fetchall()]
            else:
                queued = [
                    r[0]
                    for r in con.execute(
                        "SELECT unit_id FROM index_queue WHERE unit_id IN (SELECT unnest(?))",
                        [list(ids)],
                    ).fetchall()
                ]
            for start in range(0, len(queued), INDEX_CHUNK):
                self._index_chunk(con, queued[start : start + INDEX_CHUNK])
            if queued:
                self.vectors.maybe_compact()
                self.vectors.maybe_index()
            return len(queued)

    def _index_chunk(self, con: duckdb.DuckDBPyConnection, chunk: list[str]) -> None:
        rows = con.sql(
            "SELECT id, vector, network, status, occurred_start, occurred_end, text"
            " FROM units WHERE id IN (SELECT unnest($ids))",
            params={"ids": chunk},
        ).to_arrow_table()
        present = set(rows.column("id").to_pylist())
        gone = [i for i in chunk if i not in present]
        vector_rows = rows.select(
            ["id", "vector", "network", "status", "occurred_start", "occurred_end"]
        )
        self.vectors.delete(gone)
        self.vectors.upsert(vector_rows)
        self._update_exact(vector_rows, gone)
        self.lexical.delete(gone)
        self.lexical.upsert(
            zip(
                rows.column("id").to_pylist(),
                rows.column("network").to_pylist(),
                rows.column("text").to_pylist(),
                strict=True,
            )
        )
        con.execute("DELETE FROM index_queue WHERE unit_id IN (SELECT unnest(?))", [chunk])

    def recover(self) -> None:
        """On open: finish interrupted indexing, then a cheap agreement check;
        if the counts still disagree, the full repair runs."""
        self.sync_indexes()
        units = self.reader().execute("SELECT count(*) FROM units").fetchone()[0]
        if not (units == self.vectors.count() == self.lexical.count()):
            self.repair()
        # A large bank written before the vector index existed gets one now.
        self.vectors.maybe_index()

    # -- verify and repair ---------------------------------------------------

    def verify(self) -> VerifyReport:
        con = self.reader()
        unit_ids = {r[0] for r in con.execute("SELECT id FROM units").fetchall()}
        vector_ids = self.vectors.ids()
        lexical_ids = self.lexical.ids()
        dangling = {
            "mentions": con.execute(
                "SELECT count(*) FROM mentions m WHERE NOT EXISTS"
                " (SELECT 1 FROM units u WHERE u.id = m.unit_id)"
                " OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = m.entity_id)"
            ).fetchone()[0],
            "links": con.execute(
                "SELECT count(*) FROM links l WHERE NOT EXISTS"
                " (SELECT 1 FROM units u WHERE u.id = l.source)"
                " OR NOT EXISTS (SELECT 1 FROM units u WHERE u.id = l.target)"
            ).fetchone()[0],
            "opinion_events": con.execute(
                "SELECT count(*) FROM opinion_events o WHERE NOT EXISTS"
                " (SELECT 1 FROM units u WHERE u.id = o.opinion_id)"
            ).fetchone()[0],
        }
        return VerifyReport(
            units=len(unit_ids),
            vectors=len(vector_ids),
            lexical=len(lexical_ids),
            missing_vectors=tuple(sorted(unit_ids - vector_ids)),
            missing_lexical=tuple(sorted(unit_ids - lexical_ids)),
            extra_vectors=tuple(sorted(vector_ids - unit_ids)),
            extra_lexical=tuple(sorted(lexical_ids - unit_ids)),
            pending=self.pending(),
            dangling=dangling,
        )

    def repair(self) -> VerifyReport:
        """Re-derive index entries for every id the stores disagree on and
        drop rows that point at nothing. Returns the report after repair."""
        report = self.verify()
        disagree = set(
            report.missing_vectors
            + report.missing_lexical
            + report.extra_vectors
            + report.extra_lexical
        )
        with self.transaction() as tx:
            tx.touch(sorted(disagree))
            if any(report.dangling.values()):
                tx.con.execute(
                    "DELETE FROM mentions WHERE unit_id NOT IN (SELECT id FROM units)"
                    " OR entity_id NOT IN (SELECT id FROM entities)"
                )
                tx.con.execute(
                    "DELETE FROM links WHERE source NOT IN (SELECT id FROM units)"
                    " OR target NOT IN (SELECT id FROM units)"
                )
                tx.con.execute(
                    "DELETE FROM opinion_events WHERE opinion_id NOT IN (SELECT id FROM units)"
                )
        self.sync_indexes()
        return self.verify()

    def rebuild_indexes(self) -> None:
        """Re-derive LanceDB and Tantivy from DuckDB in fresh folders and swap
        them in: no older version, deleted row or stale segment survives."""
        from core.store import rebuild
        from core.store.vectors import VectorIndex

        with self._write_lock:
            # Not `sync_indexes` first: the fresh indexes are built from every unit
            # DuckDB holds, so what is queued is done by the build (the queue is
            # emptied once they are swapped in; a crash before leaves it, and the
            # next open indexes those ids again, which is harmless).
            self._forget_exact()
            vectors_dir, bm25_dir = self.folder / VECTORS_DIR, self.folder / BM25_DIR
            fresh_vectors, fresh_bm25 = rebuild.build_fresh(
                self.reader(), vectors_dir, bm25_dir, self.dim
            )
            # Closed if open; never opened for this (opening runs `recover`, which
            # would index the whole bank into the indexes about to be replaced).
            self._close_indexes()
            rebuild.swap(fresh_vectors, vectors_dir)
            rebuild.swap(fresh_bm25, bm25_dir)
            self._vectors = VectorIndex(vectors_dir, self.dim)
            self._lexical = LexicalIndex(bm25_dir)
            self.reader().execute("DELETE FROM index_queue")

    # -- lifecycle -----------------------------------------------------------

    def checkpoint(self) -> None:
        self._db.execute("CHECKPOINT")

    def rebuild_database(self) -> None:
        """Copy bank.duckdb into a fresh file and swap it in, then reopen.

        DuckDB reuses freed blocks but never wipes them, so deleted rows linger
        in the file; a purge must leave nothing readable. The bank lock is held
        throughout; a crash before the swap leaves the old file whole (the
        half-written copy is replaced by the next rebuild)."""
        import os

        from core.store.filters import sql_string

        with self._write_lock:
            path = self.folder / DB_NAME
            fresh = self.folder / (DB_NAME + ".rebuild")
            for stale in (fresh, fresh.with_name(fresh.name + ".wal")):
                stale.unlink(missing_ok=True)
            name = self._db.execute("SELECT current_database()").fetchone()[0]
            self._db.execute("CHECKPOINT")
            self._db.execute(f"ATTACH {sql_string(str(fresh))} AS engram_rebuild")
            try:
                self._db.execute(f'COPY FROM DATABASE "{name}" TO engram_rebuild')
            finally:
                self._db.execute("DETACH engram_rebuild")
            self._db.close()
            try:
                os.replace(fresh, path)
                path.with_name(path.name + ".wal").unlink(missing_ok=True)
            finally:
                self._db = duckdb.connect(str(path))

    def advertise(self, url: str | None, token_file=None, certificate=None) -> None:
        """Record in the lock file that this process serves the bank at `url` (None:
        no longer), so other processes' commands reach it over HTTP(S)."""
        self._lock.advertise(url, token_file, certificate)

    def close(self) -> None:
        # Under the write lock: an index still opening on another thread finishes first.
        with self._write_lock:
            try:
                if self._lock.held:
                    self.access.close()  # a clean close loses no access count
            finally:
                self._close_stores()

    def _close_stores(self) -> None:
        with self._write_lock:
            if not self._lock.held:
                return
            try:
                self._close_indexes()
                self._db.execute("CHECKPOINT")
            except Exception as error:
                if not is_storage_failure(error):
                    raise
                # Every commit is already in the write-ahead log; the checkpoint only
                # folds it into the main file, which the next open does.
                raise storage_error(
                    error,
                    f"closing bank {self.name!r} could not tidy its files; nothing committed"
                    f" is lost: {NEXT_OPEN}",
                ) from error
            finally:
                self._close_handles()

    def abandon(self) -> None:
        """Let go of every handle and the lock without writing anything (the
        open failed, or the disk is full): what was committed stays committed,
        and the next open replays whatever is still queued."""
        if getattr(self, "_lexical", None) is not None:
            with contextlib.suppress(Exception):
                self._close_indexes()
        with contextlib.suppress(Exception):
            self._close_handles()
        self._lock.release()

    def _close_handles(self) -> None:
        db = getattr(self, "_db", None)
        try:
            if db is not None:
                db.close()
        finally:
            self._lock.release()

    @property
    def closed(self) -> bool:
        return not self._lock.held
