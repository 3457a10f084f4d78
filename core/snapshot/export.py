"""Exporting a bank to one `.engram` file, streamed.

Each table goes from DuckDB to a Parquet file in record batches (never the
whole table in memory), all read inside one transaction so the snapshot is
one consistent moment of the bank. The Parquet files are stored (not
deflated: they are already zstd-compressed) in a zip with `manifest.json`.
The zip is written beside the target and renamed into place at the end, so
an interrupted export never leaves a half file under the target name.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow.parquet as pq

from core.progress import CancelToken, Progress, check, report
from core.snapshot.archive import FORMAT_VERSION, MANIFEST, Manifest, Member
from core.store.bank_store import utcnow
from core.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from core.bank import Bank

BATCH_ROWS = 2048
MEMORY_LIMIT = "64MB"
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
    bank: Bank,
    path: str | Path,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
) -> Manifest:
    """Write the bank to `path` (a `.engram` zip); returns its manifest."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    con = bank.store.reader()
    with tempfile.TemporaryDirectory(prefix=".engram-export-", dir=target.parent) as tmp:
        folder = Path(tmp)
        members: dict[str, Member] = {}
        counts: dict[str, int] = {}
        previous_limit = _limit_memory(con)
        con.execute("BEGIN TRANSACTION")
        try:
            tables = exported_tables(con)
            for n, table in enumerate(tables):
                check(cancel)
                file = folder / f"{table}.parquet"
                rows = _write_table(con, table, file, cancel)
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
        os.replace(partial, target)
        report(progress, len(members) + 1, len(members) + 1, f"wrote {target.name}")
    _record_export(bank, target, manifest)
    return manifest


@dataclass(frozen=True)
class ExportRecord:
    """One export of this bank: where the file went and when."""

    path: str
    exported_at: str
    units: int

    @property
    def exists(self) -> bool:
        return Path(self.path).is_file()


def _record_export(bank: Bank, target: Path, manifest: Manifest) -> None:
    """Remember the export in the bank, so a purge can say which files still hold
    what it removes (they are outside the bank, beyond its reach)."""
    entry = {
        "path": str(target.resolve()),
        "exported_at": manifest.created_at,
        "units": manifest.counts.get("units", 0),
    }
    with bank.store.transaction() as tx:
        kept = [e for e in bank.store.meta(EXPORTS_KEY, []) if e.get("path") != entry["path"]]
        bank.store.set_meta(tx.con, EXPORTS_KEY, [*kept, entry][-MAX_EXPORTS_KEPT:])


def known_exports(bank: Bank) -> list[ExportRecord]:
    """Every export this bank recorded, oldest first (the file may be gone since)."""
    out = []
    for entry in bank.store.meta(EXPORTS_KEY, []):
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            out.append(
                ExportRecord(
                    entry["path"], str(entry.get("exported_at", "")), int(entry.get("units") or 0)
                )
            )
    return out


def _limit_memory(con) -> str | None:
    """Cap DuckDB's block cache while the tables stream out (it would otherwise keep
    every block it read, the whole bank); returns the limit to restore."""
    try:
        previous = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        return previous
    except duckdb.Error:
        return None


def _write_table(con, table: str, file: Path, cancel: CancelToken | None) -> int:
    where = ""
    if table == "meta":
        where = " WHERE key NOT IN (" + ", ".join(f"'{k}'" for k in LOCAL_META) + ")"
    reader = con.sql(f"SELECT * FROM {table}{where}").to_arrow_reader(BATCH_ROWS)
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
