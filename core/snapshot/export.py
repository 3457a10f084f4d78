"""Exporting a bank to one `.engram` file, streamed.

Each table goes from DuckDB to a Parquet file in record batches (never the
whole table in memory), all read inside one transaction so the snapshot is
one consistent moment of the bank. The Parquet files are stored (not
deflated: they are already zstd-compressed) in a zip with `manifest.json`.
The zip is written beside the target and renamed into place at the end, so
an interrupted export never leaves a half file under the target name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow.parquet as pq

from core.progress import CancelToken, Progress, check, report
from core.snapshot.archive import FORMAT_VERSION, MANIFEST, Manifest, Member
from core.store.bank_store import utcnow
from core.store.failures import is_storage_failure, storage_error
from core.store.schema import SCHEMA_VERSION
from core.store.transfers import leftovers
from core.types import EngramError

if TYPE_CHECKING:
    from core.handle import BankHandle

log = logging.getLogger(__name__)
BATCH_ROWS = 2048
MEMORY_LIMIT_BYTES = 64 << 20
VECTOR_ROWS = 2048  # DuckDB's vector size
# A batch is sized by bytes, not rows: 2,048 turns of 45,000 characters are
# 90 MB, more than MEMORY_LIMIT (DuckDB's OutOfMemoryException).
BATCH_BYTES = 4 << 20
# Work queues and history stay with the bank they belong to; the rest is memory.
NOT_EXPORTED = frozenset({"jobs", "index_queue", "audit"})
# Meta keys that describe this copy of the bank, not its memory.
LOCAL_META = ("schema_version", "embedding", "purge_pending", "exports")
# Where this bank has been exported to (a purge cannot reach those files).
EXPORTS_KEY = "exports"
MAX_EXPORTS_KEPT = 1000


def exporting_version() -> str:
    try:
        from importlib.metadata import version

        return version("engram-studio")
    except Exception:  # noqa: BLE001 - running from a checkout without metadata
        return "0+unknown"


def exported_tables(con) -> list[str]:
    names = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            " AND schema_name = 'main' ORDER BY table_name"
        ).fetchall()
    ]
    return [n for n in names if n not in NOT_EXPORTED]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def export_snapshot(
    bank: BankHandle,
    path: str | Path,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
    record_as: str | None = None,
    record_host: str = "",
) -> Manifest:
    """Write the bank to `path` (a `.engram` zip); returns its manifest. A disk that
    refuses the writes ends in a StorageError: no file is left under `path`.

    The export is recorded in the bank (`known_exports`) under `path`, or under
    `record_as` on `record_host` (where a client had the file sent: the owner
    wrote it to a temporary file); `record_as=""` records nothing (a diff's
    passing copy)."""
    try:
        manifest = _export(bank, Path(path), progress, cancel)
    except EngramError:
        raise
    except Exception as error:
        if not is_storage_failure(error):
            raise
        raise storage_error(
            error, f"no snapshot was written to {path}; the bank is unchanged"
        ) from error
    if record_as != "":
        _record_export(bank, record_as or str(Path(path).resolve()), manifest, record_host)
    return manifest


def _export(
    bank: BankHandle, target: Path, progress: Progress | None, cancel: CancelToken | None
) -> Manifest:
    """See export_snapshot."""
    target.parent.mkdir(parents=True, exist_ok=True)
    con = bank.store.counted_reader()  # the access counts recalled so far go with it
    with tempfile.TemporaryDirectory(prefix=".engram-export-", dir=target.parent) as tmp:
        folder = Path(tmp)
        members: dict[str, Member] = {}
        counts: dict[str, int] = {}
        con.execute("BEGIN TRANSACTION")
        previous_limit = None
        try:
            tables = exported_tables(con)
            largest = {t: largest_row(con, t) for t in tables}
            previous_limit = _limit_memory(con, max(largest.values(), default=0))
            for n, table in enumerate(tables):
                check(cancel)
                file = folder / f"{table}.parquet"
                rows = _write_table(con, table, file, largest[table], cancel)
                members[file.name] = Member(
                    table=table,
                    name=file.name,
                    rows=rows,
                    bytes=file.stat().st_size,
                    sha256=_sha256(file),
                )
                counts[table] = rows
                report(progress, n + 1, len(tables) + 1, f"exported {table}")
        finally:
            con.execute("ROLLBACK")
            if previous_limit:
                con.execute(f"SET memory_limit = '{previous_limit}'")
        manifest = Manifest(
            format_version=FORMAT_VERSION,
            created_at=utcnow().isoformat() + "Z",
            exported_by={"app": "engram-studio", "version": exporting_version()},
            bank_name=bank.name,
            schema_version=SCHEMA_VERSION,
            embedding_model=bank.store.embedding_model,
            embedding_dim=bank.store.dim,
            counts=counts,
            members=members,
        )
        partial = folder / "snapshot.partial"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            archive.writestr(
                MANIFEST,
                json.dumps(manifest.to_json(), indent=2, sort_keys=True),
                compress_type=zipfile.ZIP_DEFLATED,
            )
            for member in members.values():
                check(cancel)
                archive.write(folder / member.name, member.name)
        os.chmod(partial, 0o600)  # a full copy of the bank: its owner's alone
        os.replace(partial, target)
        report(progress, len(members) + 1, len(members) + 1, f"wrote {target.name}")
    return manifest


@dataclass(frozen=True)
class ExportRecord:
    """One export of this bank: where the file went and when."""

    path: str
    exported_at: str
    units: int
    host: str = ""  # the machine the file went to, when not the bank's own

    @property
    def exists(self) -> bool:
        """Whether the file is still there (False when it went to another machine:
        it cannot be seen from here)."""
        if self.host and self.host != socket.gethostname():
            return False
        return Path(self.path).is_file()


def _record_export(bank: BankHandle, path: str, manifest: Manifest, host: str = "") -> None:
    """Remember the export in the bank, so a purge can say which files still hold
    what it removes (they are outside the bank, beyond its reach)."""
    entry = {
        "path": path,
        "exported_at": manifest.created_at,
        "units": manifest.counts.get("units", 0),
    }
    if host and host != socket.gethostname():
        entry["host"] = host
    try:
        with bank.store.transaction() as tx:
            kept = [
                e
                for e in bank.store.meta(EXPORTS_KEY, [])
                if (e.get("path"), e.get("host")) != (entry["path"], entry.get("host"))
            ]
            bank.store.set_meta(tx.con, EXPORTS_KEY, [*kept, entry][-MAX_EXPORTS_KEPT:])
    except EngramError as error:
        # The snapshot is complete; only the note of where it went is missing.
        log.warning("exported to %s, but the bank could not note it: %s", path, error)


def known_exports(bank: BankHandle) -> list[ExportRecord]:
    """Every export this bank recorded, oldest first (the file may be gone since)."""
    out = []
    for entry in bank.store.meta(EXPORTS_KEY, []):
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            out.append(
                ExportRecord(
                    entry["path"],
                    str(entry.get("exported_at", "")),
                    int(entry.get("units") or 0),
                    str(entry.get("host") or ""),
                )
            )
    # A copy a killed server was sending (core/store/transfers.py) is one too, until
    # the next start removes it.
    for path in leftovers(bank.folder.parent.parent, bank.folder.name):
        with contextlib.suppress(OSError):
            when = datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None)
            out.append(ExportRecord(str(path), when.isoformat() + "Z", 0))
    return out


def memory_for_rows(largest_row: int) -> str:
    """A DuckDB memory limit that caps its block cache (it would otherwise keep every
    block it read, the whole bank) yet fits one vector of the largest rows: DuckDB
    scans 2,048 rows at a time whatever their size."""
    return memory_for_bytes(VECTOR_ROWS * max(largest_row, 0))


def memory_for_bytes(vector_bytes: int) -> str:
    """A DuckDB memory limit for scans whose largest vector holds `vector_bytes`."""
    needed = 3 * max(vector_bytes, 0) + (32 << 20)
    return f"{max(MEMORY_LIMIT_BYTES, needed) >> 20}MB"


def _limit_memory(con, largest_row: int) -> str | None:
    """Cap DuckDB's memory while the tables stream out; returns the limit to restore."""
    try:
        previous = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        con.execute(f"SET memory_limit = '{memory_for_rows(largest_row)}'")
        return previous
    except duckdb.Error:
        return None


def largest_row(con, table: str) -> int:
    """About how many bytes the table's largest row holds."""
    sizes = []
    for column, kind in con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name ="
        " current_database() AND schema_name = 'main' AND table_name = ?",
        [table],
    ).fetchall():
        if kind in ("VARCHAR", "JSON"):
            sizes.append(f"coalesce(strlen({column}::VARCHAR), 0)")
        elif kind.endswith("[]"):
            # A list's elements, 8 bytes at most each, plus each string's bytes.
            text = "strlen(array_to_string({c}, ''))" if kind == "VARCHAR[]" else "0"
            sizes.append(f"coalesce(8 * len({column}) + {text.format(c=column)}, 0)")
        else:
            sizes.append("8")
    largest = con.execute(f"SELECT max({' + '.join(sizes) or '8'}) FROM {table}").fetchall()
    return int(largest[0][0] or 0)


def _write_table(con, table: str, file: Path, largest: int, cancel: CancelToken | None) -> int:
    where = ""
    if table == "meta":
        where = " WHERE key NOT IN (" + ", ".join(f"'{k}'" for k in LOCAL_META) + ")"
    rows_per_batch = max(1, min(BATCH_ROWS, BATCH_BYTES // max(largest, 1)))
    reader = con.sql(f"SELECT * FROM {table}{where}").to_arrow_reader(rows_per_batch)
    rows = 0
    try:
        with pq.ParquetWriter(file, reader.schema, compression="zstd") as writer:
            for batch in reader:
                check(cancel)
                if batch.num_rows:
                    writer.write_batch(batch)
                    rows += batch.num_rows
    finally:
        reader.close()
    return rows
