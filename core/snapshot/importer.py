"""Importing a `.engram` file as a new bank, or in place of one, atomically.

The new bank is built in a hidden temporary folder under the banks folder
(`.import-<pid>-<token>`), which has no `bank.json` label until the very end, so no
listing ever shows a half bank. Only when it is complete — every table
loaded and counted, indexes built, the three stores agreeing — is it moved
into place:

- new bank: rename the temporary folder to a free slug, then write the label;
- replace: rename the old bank's folder aside (`.replaced-<token>-<slug>`),
  rename the new one into its place, write the label, then delete the old.

A crash (SIGKILL included) at any point leaves either the old state or the
new one: on the next `Engine` start `cleanup_stale_imports` deletes unlabeled
import folders nobody holds, and puts a set-aside bank back if its
replacement never got its label (or deletes it if the replacement did).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from filelock import Timeout

from core.home import LABEL, bank_id, labelled_folders, read_label, validate_bank_name, write_label
from core.progress import CancelToken, Progress, check, report
from core.snapshot.archive import (
    Manifest,
    SnapshotError,
    SnapshotReader,
    disk_space_ok,
    needed_bytes,
)
from core.snapshot.export import LOCAL_META, NOT_EXPORTED, memory_for_bytes
from core.snapshot.validate import validate_tables
from core.store import purged as purged_names
from core.store.bank_store import BankStore, utcnow
from core.store.failures import is_storage_failure, storage_error
from core.store.filters import sql_string
from core.store.lock import BankLock, exclusive_lock, is_free
from core.types import BankExistsError, EngramError, PurgedInSnapshotError, new_id

if TYPE_CHECKING:
    from core.providers.embedder import Embedder

IMPORT_PREFIX = ".import-"
REPLACED_PREFIX = ".replaced-"
IMPORT_LOCK = "import.lock"
STAGING = ".snapshot"
BATCH_ROWS = 8192
IMPORT_NOT_DONE = "the import stopped; no bank was created or replaced"
# Tables with more data than this load a batch (about BATCH_BYTES) per commit,
# with a checkpoint every CHECKPOINT_BYTES: one INSERT of 90 MB of turns failed
# its commit under the import's memory limit.
BULK_BYTES = 16 << 20
BATCH_BYTES = 4 << 20
CHECKPOINT_BYTES = 32 << 20
log = logging.getLogger(__name__)
# Each step an import passes (extracted, built, moved, set-aside, committed) is
# reported here: the crash tests (tests/support/children.py) stop it there.
on_step: Callable[[str], None] | None = None


def _step(point: str) -> None:
    if on_step is not None:
        on_step(point)


class Banks(Protocol):
    """What an import needs of the banks folder and the engine's providers
    (`Engine` is one): the import builds a folder, the engine opens it."""

    banks_dir: Path

    @property
    def embedder(self) -> Embedder: ...

    @property
    def embedding_spec(self) -> tuple[str, int]: ...

    def reserving_names(self) -> AbstractContextManager[None]: ...

    def free_folder(self, name: str) -> Path: ...

    def check_name_free(self, name: str) -> None: ...

    def is_open(self, folder: Path) -> bool: ...

    def close_folder(self, folder: Path) -> None: ...

    def purged_names(self, folder: Path) -> list: ...


@functools.lru_cache(maxsize=1)
def schema_columns() -> dict[str, dict[str, bool]]:
    """table -> {column: nullable} of a freshly migrated bank."""
    from core.store.schema import migrate

    con = duckdb.connect()
    try:
        migrate(con)
        out: dict[str, dict[str, bool]] = {}
        for table, column, nullable in con.execute(
            "SELECT c.table_name, c.column_name, c.is_nullable FROM duckdb_columns() c"
            " JOIN duckdb_tables() t ON t.database_name = c.database_name"
            " AND t.schema_name = c.schema_name AND t.table_name = c.table_name"
            " WHERE c.database_name = current_database() AND c.schema_name = 'main'"
            " ORDER BY c.table_name, c.column_index"
        ).fetchall():
            out.setdefault(table, {})[column] = bool(nullable)
        return out
    finally:
        con.close()


class _FileLock:
    """An exclusive lock held while an import folder is being built."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = exclusive_lock(path)
        try:
            self._lock.acquire()
        except Timeout:
            raise BlockingIOError(f"{path} is held by another process") from None

    def release(self) -> None:
        self._lock.release()


def _creator_alive(import_folder: str) -> bool:
    """Whether the process named in `.import-<pid>-<token>` still runs."""
    pid = import_folder[len(IMPORT_PREFIX) :].split("-", 1)[0]
    if not pid.isdigit():
        return False  # no pid in the name: nobody can be about to lock it
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, someone else's
    return True


def _free(path: Path) -> bool:
    """True if nobody holds the lock on `path` (a missing file is free)."""
    try:
        lock = _FileLock(path)
    except BlockingIOError:
        return False
    except OSError:
        return True
    lock.release()
    return True


def cleanup_stale_imports(banks_dir: Path) -> list[Path]:
    """Finish what crashed imports left: returns the folders removed or restored."""
    touched: list[Path] = []
    if not banks_dir.is_dir():
        return touched
    for folder in sorted(banks_dir.iterdir()):
        lock = folder / IMPORT_LOCK
        if not folder.is_dir():
            continue
        if not lock.exists():
            # Killed between making its folder and taking the folder's lock: the
            # creator's pid in the name tells a dead one from one about to lock.
            if folder.name.startswith(IMPORT_PREFIX) and not _creator_alive(folder.name):
                shutil.rmtree(folder, ignore_errors=True)
                touched.append(folder)
            continue
        if not _free(lock):
            continue
        if (folder / LABEL).exists():
            lock.unlink(missing_ok=True)  # committed; only the lock file was left
        else:
            shutil.rmtree(folder, ignore_errors=True)
            touched.append(folder)
    for folder in sorted(banks_dir.glob(REPLACED_PREFIX + "*")):
        if not folder.is_dir() or not is_free(folder):
            continue
        slug = folder.name[len(REPLACED_PREFIX) :].split("-", 1)[-1]
        home = banks_dir / slug
        if (home / LABEL).exists():
            shutil.rmtree(folder, ignore_errors=True)  # the replacement was committed
        else:
            if home.exists():
                shutil.rmtree(home, ignore_errors=True)
            os.rename(folder, home)  # the replacement never completed: roll back
        touched.append(folder)
    return touched


def import_snapshot(
    engine: Banks,
    path: str | Path,
    name: str | None = None,
    replace: bool = False,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
    restore_purged: bool = False,
) -> tuple[Path, str]:
    """Import a snapshot as bank `name` (default: the name it was exported with);
    returns the new bank's folder and name, for the engine to open.

    With `replace`, an existing bank of that name is replaced atomically; without,
    an existing name is refused. A snapshot embedded with another model is
    re-embedded with this engine's. Any problem raises `SnapshotError` (an
    `EngramError`) and leaves every bank as it was.

    A snapshot that would bring back an entity the replaced bank purged (one of
    the names it remembers, core/store/purged.py) raises PurgedInSnapshotError
    unless `restore_purged`; the new bank remembers what the old one purged."""
    try:
        return _import(engine, path, name, replace, progress, cancel, restore_purged)
    except EngramError:
        raise
    except Exception as error:
        if not is_storage_failure(error):
            raise
        raise storage_error(error, IMPORT_NOT_DONE) from error


def _import(
    engine: Banks,
    path: str | Path,
    name: str | None,
    replace: bool,
    progress: Progress | None,
    cancel: CancelToken | None,
    restore_purged: bool = False,
) -> tuple[Path, str]:
    columns = schema_columns()
    known = set(columns) - NOT_EXPORTED
    with SnapshotReader(path, known_tables=known) as snapshot:
        manifest = snapshot.manifest
        name = validate_bank_name(manifest.bank_name if name is None else name)
        existing = _folder_named(engine.banks_dir, name)
        if existing is not None and not replace:
            raise BankExistsError(
                f"a bank named {name!r} already exists: import with another name, or replace it"
            )
        if existing is None:
            engine.check_name_free(name)  # nor is it another bank's id
        if existing is not None and not engine.is_open(existing):
            # Fail now, not after the work, if another process has it open.
            probe = BankLock(existing, name)
            probe.acquire()
            probe.release()
        purged = engine.purged_names(existing) if existing is not None else []
        disk_space_ok(engine.banks_dir, needed_bytes(snapshot))
        token = new_id()
        # The pid names who made it: a kill before its lock is taken is still cleaned up.
        temp = engine.banks_dir / f"{IMPORT_PREFIX}{os.getpid()}-{token}"
        temp.mkdir(mode=0o700)  # owner-only, as every bank folder (core/store/private.py)
        guard = _FileLock(temp / IMPORT_LOCK)
        try:
            files = snapshot.extract(temp / STAGING, progress, cancel)
            _step("extracted")
            _build(engine, temp, name, manifest, files, progress, cancel, (purged, restore_purged))
            shutil.rmtree(temp / STAGING)
            _step("built")
            folder = _commit(engine, temp, token, name, existing)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
        finally:
            guard.release()
    (folder / IMPORT_LOCK).unlink(missing_ok=True)
    return folder, name


def _folder_named(banks_dir: Path, name: str) -> Path | None:
    return next((f for f, label in labelled_folders(banks_dir) if label["name"] == name), None)


def _build(
    engine: Banks,
    temp: Path,
    name: str,
    manifest: Manifest,
    files: dict[str, Path],
    progress: Progress | None,
    cancel: CancelToken | None,
    purged: tuple[list, bool] = ([], False),
) -> None:
    """`purged`: what the bank replaced purged, and whether to bring it back."""
    model, dim = engine.embedding_spec
    reembed = (manifest.embedding_model, manifest.embedding_dim) != (model, dim)
    store = BankStore(temp, name, model, dim)
    try:
        store.open_indexes()  # empty, before the rows arrive: `_index` fills them once
        con = store.reader()
        # Nothing else uses this database yet: keep DuckDB's cache small so a big
        # snapshot streams through instead of piling up in memory, but large
        # enough for one scan vector of its largest rows.
        con.execute(f"SET memory_limit = '{memory_for_bytes(_largest_row_group(files))}'")
        for table in sorted(files, key=lambda t: (t != "meta", t)):
            _load_table(engine, con, table, files[table], manifest, reembed, progress, cancel)
        if not reembed:
            wrong = con.execute(
                "SELECT count(*) FROM units WHERE len(vector) <> ?", [manifest.embedding_dim]
            ).fetchall()[0][0]
            if wrong:
                raise SnapshotError(
                    f"{wrong} unit vector(s) do not have the manifest's"
                    f" {manifest.embedding_dim} dimensions"
                )
        for warning in validate_tables(con, None if reembed else manifest.embedding_dim):
            log.warning("importing %s: %s", name, warning)
        _check_purged(store, con, name, *purged)
        _index(store, progress, cancel)
        _check_consistent(store)
    except BaseException:
        store.abandon()  # a failed build must not hide its reason behind a close error
        raise
    store.close()


def _check_purged(store, con, name: str, records: list, restore: bool) -> None:
    """Refuse (unless `restore`) a snapshot holding an entity the bank it replaces
    purged; the new bank keeps the old one's records."""
    if not purged_names.valid(records):
        return
    back = purged_names.purged_among(records, purged_names.entity_names(con))
    if back and not restore:
        raise PurgedInSnapshotError(
            f"this snapshot holds {len(back)} name(s) of entities that bank {name!r} purged"
            " since: importing it in place of the bank brings back what the purge removed"
            " for good. Import it under another name to look at it first, or confirm to"
            " bring them back; nothing was imported"
        )
    with store.transaction() as tx:
        store.set_meta(
            tx.con, purged_names.KEY, purged_names.merged(store.meta(purged_names.KEY), records)
        )


def _largest_row_group(files: dict[str, Path]) -> int:
    """Bytes of the largest Parquet row group (uncompressed) among `files`."""
    largest = 0
    for file in files.values():
        try:
            meta = pq.ParquetFile(file).metadata
        except Exception:  # noqa: BLE001 - refused by name when the table is loaded
            continue
        for i in range(meta.num_row_groups):
            largest = max(largest, meta.row_group(i).total_byte_size)
    return largest


def _load_table(
    engine: Banks,
    con: duckdb.DuckDBPyConnection,
    table: str,
    file: Path,
    manifest: Manifest,
    reembed: bool,
    progress: Progress | None,
    cancel: CancelToken | None,
) -> None:
    expected = manifest.counts[table]
    columns = schema_columns()[table]
    try:
        parquet = pq.ParquetFile(file)
        names = parquet.schema_arrow.names
    except Exception as error:  # noqa: BLE001 - pyarrow raises several kinds on bad input
        raise SnapshotError(f"{file.name} is not a valid Parquet file ({error})") from None
    if parquet.metadata.num_rows != expected:
        raise SnapshotError(
            f"the manifest says {table} has {expected} rows; {file.name} holds"
            f" {parquet.metadata.num_rows}"
        )
    unknown = [c for c in names if c not in columns]
    if unknown or len(set(names)) != len(names):
        raise SnapshotError(f"{file.name} has unexpected column(s): {unknown or names}")
    missing = [c for c, nullable in columns.items() if not nullable and c not in names]
    if missing:
        raise SnapshotError(f"{file.name} lacks required column(s): {missing}")
    if reembed and table == "units" and "text" not in names:
        raise SnapshotError("units.parquet has no text to re-embed")
    loaded = 0
    try:
        if table == "meta" or (table == "units" and reembed) or _bulky(parquet):
            loaded = _load_batches(engine, con, table, parquet, reembed, expected, progress, cancel)
        else:
            # DuckDB reads the file itself: streamed, written straight to its blocks.
            check(cancel)
            con.execute(
                f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet({sql_string(str(file))})"
            )
            loaded = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
            if table == "units":
                con.execute("CHECKPOINT")
                report(progress, loaded, expected, "loading units")
    except SnapshotError:
        raise
    except (duckdb.Error, pa.ArrowException, OSError, ValueError, TypeError) as error:
        if is_storage_failure(error) and not isinstance(error, duckdb.OutOfMemoryException):
            raise storage_error(error, IMPORT_NOT_DONE) from error
        raise SnapshotError(f"{file.name} cannot be loaded ({error})") from None
    if loaded != expected:
        raise SnapshotError(
            f"the manifest says {table} has {expected} rows; {file.name} yielded {loaded}"
        )
    if table != "meta":
        stored = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        if stored != expected:
            raise SnapshotError(f"{table}: {expected} rows in the snapshot, {stored} stored")


def _load_batches(
    engine: Banks,
    con: duckdb.DuckDBPyConnection,
    table: str,
    parquet: pq.ParquetFile,
    reembed: bool,
    expected: int,
    progress: Progress | None,
    cancel: CancelToken | None,
) -> int:
    """Rows through Python, a batch at a time: meta (local keys dropped) and units
    that must be re-embedded."""
    loaded = since_checkpoint = 0
    verb = "INSERT OR REPLACE" if table == "meta" else "INSERT"
    for batch in parquet.iter_batches(_rows_per_batch(parquet)):
        check(cancel)
        data = pa.Table.from_batches([batch])
        if table == "meta":
            keep = [k not in LOCAL_META for k in data.column("key").to_pylist()]
            data = data.filter(pa.array(keep, pa.bool_()))
        elif reembed:
            data = _reembedded(engine, data)
        con.register("_snapshot_batch", data)
        try:
            con.execute(f"{verb} INTO {table} BY NAME SELECT * FROM _snapshot_batch")
        finally:
            con.unregister("_snapshot_batch")
        loaded += batch.num_rows
        since_checkpoint += batch.nbytes
        if since_checkpoint > CHECKPOINT_BYTES:
            con.execute("CHECKPOINT")  # inserted rows leave memory for the file
            since_checkpoint = 0
        report(progress, loaded, expected, "re-embedding units" if reembed else f"loading {table}")
    return loaded


def _bulky(parquet: pq.ParquetFile) -> bool:
    """Too much data for one INSERT under the memory limit (a commit holds it all)."""
    meta = parquet.metadata
    return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) > BULK_BYTES


def _rows_per_batch(parquet: pq.ParquetFile) -> int:
    """Rows per batch so a batch holds about BATCH_BYTES (by the row groups' average)."""
    meta = parquet.metadata
    widest = (
        max(
            (meta.row_group(i).total_byte_size / max(meta.row_group(i).num_rows, 1))
            for i in range(meta.num_row_groups)
        )
        if meta.num_row_groups
        else 1
    )
    return max(1, min(BATCH_ROWS, int(BATCH_BYTES // max(widest, 1))))


def _check_consistent(store: BankStore) -> None:
    """The three stores agree and no row points at nothing (without loading every
    vector, as a full verify would)."""
    con = store.reader()
    units = con.execute("SELECT count(*) FROM units").fetchall()[0][0]
    if not units == store.vectors.count() == store.lexical.count() or store.pending():
        raise SnapshotError("the imported bank's indexes do not agree with its units")
    dangling = {
        "mentions": "SELECT count(*) FROM mentions m WHERE m.unit_id NOT IN (SELECT id FROM units)"
        " OR m.entity_id NOT IN (SELECT id FROM entities)",
        "links": "SELECT count(*) FROM links l WHERE l.source NOT IN (SELECT id FROM units)"
        " OR l.target NOT IN (SELECT id FROM units)",
        "opinion_events": "SELECT count(*) FROM opinion_events o"
        " WHERE o.opinion_id NOT IN (SELECT id FROM units)",
    }
    found = {t: con.execute(sql).fetchall()[0][0] for t, sql in dangling.items()}
    if any(found.values()):
        raise SnapshotError(
            "the snapshot is inconsistent (rows pointing at units or entities it does"
            f" not hold: {found})"
        )


def _reembedded(engine: Banks, data: pa.Table) -> pa.Table:
    texts = data.column("text").to_pylist()
    if any(not isinstance(t, str) for t in texts):
        raise SnapshotError("units.parquet has a unit without text")
    vectors = np.asarray(engine.embedder.embed(texts), dtype=np.float32)
    model = engine.embedding_spec[0]
    column = pa.array(list(vectors), pa.list_(pa.float32()))
    data = data.set_column(data.schema.get_field_index("vector"), "vector", column)
    if "embedding_model" in data.schema.names:
        data = data.set_column(
            data.schema.get_field_index("embedding_model"),
            "embedding_model",
            pa.array([model] * data.num_rows, pa.string()),
        )
    return data


def _index(store: BankStore, progress: Progress | None, cancel: CancelToken | None) -> None:
    """Build the new bank's (empty) indexes from its units, in chunks."""
    from core.store.rebuild import fill_indexes

    fill_indexes(store.reader(), store.vectors, store.lexical, progress, cancel)


def _commit(engine: Banks, temp: Path, token: str, name: str, existing: Path | None) -> Path:
    """Move the complete bank into place; the label written last is the commit."""
    with engine.reserving_names():
        # Checked again under the names lock: another process may have taken the
        # name (or replaced the bank) while this import was being built.
        now = _folder_named(engine.banks_dir, name)
        if now != existing:
            raise BankExistsError(
                f"a bank named {name!r} was created while this import ran: import with"
                " another name, or replace it"
                if existing is None
                else f"bank {name!r} was renamed or deleted while this import ran; nothing"
                " was replaced"
            )
        return _move_into_place(engine, temp, token, name, existing)


def _move_into_place(
    engine: Banks, temp: Path, token: str, name: str, existing: Path | None
) -> Path:
    label = {"name": name, "created_at": utcnow().isoformat()}
    if existing is None:
        folder = engine.free_folder(name)
        label["id"] = folder.name  # a new bank here: its own id, whatever it had where exported
        os.rename(temp, folder)
        _step("moved")
        try:
            write_label(folder, label)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return folder
    # The bank replaced keeps its identity: its id and the names it had.
    before = read_label(existing) or {}
    label = {"id": bank_id(existing, before), **label}
    if before.get("former_names"):
        label["former_names"] = before["former_names"]
    engine.close_folder(existing)
    lock = BankLock(existing, name)
    lock.acquire()
    aside = engine.banks_dir / f"{REPLACED_PREFIX}{token}-{existing.name}"
    try:
        os.rename(existing, aside)
        _step("set-aside")
        try:
            os.rename(temp, existing)
            _step("moved")
            write_label(existing, label)
        except BaseException:
            # The label was not written: the old bank goes back where it was.
            if existing.exists():
                shutil.rmtree(existing, ignore_errors=True)
            os.rename(aside, existing)
            raise
        _step("committed")
        # Still holding its lock, so nobody opens the old bank as it goes.
        shutil.rmtree(aside, ignore_errors=True)
    finally:
        lock.release()
    return existing
