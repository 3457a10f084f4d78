"""Reading a `.engram` file without trusting it.

A snapshot is a zip of Parquet tables plus `manifest.json`. Everything in it
is checked before a single row reaches a bank: member paths (no `../`, no
absolute paths, no symlinks, no directories, no duplicates, no encryption),
sizes (compression ratio and total), the manifest (format, version, members,
counts, embedding), and every member's sha256 while it is extracted. Any
failure is a `SnapshotError` naming what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import stat
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from core.progress import CancelToken, Progress, check, report
from core.store.failures import is_storage_failure, storage_error
from core.store.schema import SCHEMA_VERSION
from core.types import EngramError

FORMAT = "engram-snapshot"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1 << 20
# A Parquet table compresses a little, never a hundredfold: more is a zip bomb.
MAX_RATIO = 100
# Members smaller than this are not ratio-checked (tiny members compress oddly).
RATIO_FLOOR = 64 * 1024
MAX_TOTAL_BYTES = 64 * (1 << 30)
COPY_CHUNK = 1 << 20
# Tables every snapshot carries; others (observations, reflections, ...) are
# imported when the importing bank has them.
REQUIRED_TABLES = (
    "meta",
    "units",
    "entities",
    "mentions",
    "links",
    "opinion_events",
    "documents",
    "turns",
)
_MEMBER = re.compile(r"^[a-z][a-z0-9_]{0,62}\.parquet$")


class SnapshotError(EngramError):
    """A snapshot that cannot be imported or read, and why."""


# What a damaged zip raises while it is read: a bad CRC (BadZipFile), a corrupt
# deflate stream (zlib.error), a compression method this Python lacks
# (NotImplementedError), a cut-off file (EOFError), and the rest.
ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,
    EOFError,
    OSError,
    ValueError,
    RuntimeError,
    struct.error,
)


def damaged(what: str, error: BaseException) -> SnapshotError:
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, NotImplementedError):
        detail = f"it uses a compression method this Engram Studio cannot read: {detail}"
    return SnapshotError(f"{what} is damaged or not a valid Engram snapshot ({detail})")


@dataclass(frozen=True)
class Member:
    table: str
    name: str
    rows: int
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    format_version: int
    created_at: str
    exported_by: Mapping[str, str]
    bank_name: str
    schema_version: int
    embedding_model: str
    embedding_dim: int
    counts: Mapping[str, int]
    members: Mapping[str, Member] = field(default_factory=dict)  # by member name

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": self.format_version,
            "created_at": self.created_at,
            "exported_by": dict(self.exported_by),
            "bank": {"name": self.bank_name, "schema_version": self.schema_version},
            "embedding": {"model": self.embedding_model, "dim": self.embedding_dim},
            "counts": dict(self.counts),
            "members": {
                m.name: {"table": m.table, "rows": m.rows, "bytes": m.bytes, "sha256": m.sha256}
                for m in self.members.values()
            },
        }

    @property
    def tables(self) -> dict[str, Member]:
        return {m.table: m for m in self.members.values()}


def _need(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise SnapshotError(f"the manifest's {where}{key!r} is missing or malformed")
    return value


def parse_manifest(raw: bytes) -> Manifest:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SnapshotError(f"manifest.json is not valid JSON ({error})") from None
    except RecursionError:
        raise SnapshotError("manifest.json is nested too deeply to be a manifest") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SnapshotError("this file is not an Engram snapshot (manifest format is missing)")
    version = _need(data, "format_version", int, "")
    if version > FORMAT_VERSION:
        raise SnapshotError(
            f"this snapshot has format version {version}; this Engram Studio reads up to"
            f" {FORMAT_VERSION}: upgrade Engram Studio to import it"
        )
    if version < 1:
        raise SnapshotError(f"snapshot format version {version} is not valid")
    bank = _need(data, "bank", dict, "")
    embedding = _need(data, "embedding", dict, "")
    counts = _need(data, "counts", dict, "")
    members_raw = _need(data, "members", dict, "")
    members: dict[str, Member] = {}
    for name, info in members_raw.items():
        if not isinstance(info, dict):
            raise SnapshotError(f"the manifest's entry for {name!r} is malformed")
        sha = _need(info, "sha256", str, f"member {name!r} ")
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise SnapshotError(f"the manifest's sha256 of {name!r} is malformed")
        members[name] = Member(
            table=_need(info, "table", str, f"member {name!r} "),
            name=name,
            rows=_need(info, "rows", int, f"member {name!r} "),
            bytes=_need(info, "bytes", int, f"member {name!r} "),
            sha256=sha,
        )
    for name, count in counts.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise SnapshotError(f"the manifest's count of {name!r} is malformed")
    dim = _need(embedding, "dim", int, "embedding ")
    if dim <= 0:
        raise SnapshotError("the manifest's embedding dimension is not positive")
    exported_by = data.get("exported_by") or {}
    if not isinstance(exported_by, dict):
        raise SnapshotError("the manifest's 'exported_by' is malformed (not an object)")
    schema_version = _need(bank, "schema_version", int, "bank ")
    if schema_version > SCHEMA_VERSION:
        raise SnapshotError(
            f"this snapshot's bank has schema version {schema_version}; this Engram Studio"
            f" reads up to {SCHEMA_VERSION}: upgrade Engram Studio to import it"
        )
    if schema_version < 1:
        raise SnapshotError(f"the manifest's schema version {schema_version} is not valid")
    return Manifest(
        format_version=version,
        created_at=str(data.get("created_at", "")),
        exported_by={str(k): str(v) for k, v in exported_by.items()},
        bank_name=_need(bank, "name", str, "bank "),
        schema_version=schema_version,
        embedding_model=_need(embedding, "model", str, "embedding "),
        embedding_dim=dim,
        counts={str(k): int(v) for k, v in counts.items()},
        members=members,
    )


def _check_path(name: str) -> None:
    """Refuse member names that could land outside the extraction folder."""
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or name.startswith("/")
        or re.match(r"^[A-Za-z]:", name)
        or any(part in ("..", "") for part in name.removesuffix("/").split("/"))
        or path.is_absolute()
    ):
        raise SnapshotError(f"refusing member {name!r}: its path escapes the snapshot folder")


def _check_info(info: zipfile.ZipInfo) -> None:
    _check_path(info.filename)
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise SnapshotError(f"refusing member {info.filename!r}: it is a symbolic link")
    if info.is_dir() or stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        raise SnapshotError(f"refusing member {info.filename!r}: it is not a regular file")
    if info.flag_bits & 0x1:
        raise SnapshotError(f"refusing member {info.filename!r}: it is encrypted")
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise SnapshotError(
            f"refusing member {info.filename!r}: it would expand {info.file_size:,} bytes from"
            f" {info.compress_size:,} (more than {MAX_RATIO}x: a zip bomb?)"
        )


class SnapshotReader:
    """An opened, checked snapshot: `manifest`, and `extract(folder)` to get
    checksummed member files. Use as a context manager."""

    def __init__(self, path: str | Path, known_tables: set[str] | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise SnapshotError(f"no snapshot file at {self.path}")
        try:
            self._zip = zipfile.ZipFile(self.path)
        except ARCHIVE_ERRORS as error:
            raise SnapshotError(f"{self.path.name} is not an Engram snapshot ({error})") from None
        try:
            self.manifest = self._check(known_tables)
        except ARCHIVE_ERRORS as error:
            self._zip.close()
            raise damaged(self.path.name, error) from None
        except BaseException:
            self._zip.close()
            raise

    def _check(self, known_tables: set[str] | None) -> Manifest:
        infos = self._zip.infolist()
        names = [i.filename for i in infos]
        for info in infos:
            _check_info(info)
        if len(set(names)) != len(names):
            raise SnapshotError("refusing a snapshot with two members of the same name")
        total = sum(i.file_size for i in infos)
        if total > MAX_TOTAL_BYTES:
            raise SnapshotError(
                f"refusing a snapshot that expands to {total:,} bytes"
                f" (the limit is {MAX_TOTAL_BYTES:,})"
            )
        self.total_bytes = total
        if MANIFEST not in names:
            raise SnapshotError(f"{self.path.name} has no manifest.json: not an Engram snapshot")
        manifest_info = self._zip.getinfo(MANIFEST)
        if manifest_info.file_size > MAX_MANIFEST_BYTES:
            raise SnapshotError("manifest.json is implausibly large")
        with self._zip.open(manifest_info) as handle:
            manifest = parse_manifest(handle.read(MAX_MANIFEST_BYTES + 1))
        present = set(names) - {MANIFEST}
        listed = set(manifest.members)
        missing = sorted(listed - present)
        if missing:
            raise SnapshotError(f"the snapshot is missing member {missing[0]!r}")
        unexpected = sorted(present - listed)
        if unexpected:
            raise SnapshotError(f"unexpected member {unexpected[0]!r} in the snapshot")
        tables: set[str] = set()
        for member in manifest.members.values():
            if not _MEMBER.match(member.name) or member.name != f"{member.table}.parquet":
                raise SnapshotError(f"unexpected member {member.name!r} in the snapshot")
            if known_tables is not None and member.table not in known_tables:
                raise SnapshotError(
                    f"unexpected member {member.name!r}: this Engram Studio has no table"
                    f" {member.table!r}"
                )
            if member.table in tables:
                raise SnapshotError(f"the snapshot lists table {member.table!r} twice")
            tables.add(member.table)
            size = self._zip.getinfo(member.name).file_size
            if size != member.bytes:
                raise SnapshotError(
                    f"the manifest says {member.name} has {member.bytes:,} bytes;"
                    f" the archive holds {size:,}"
                )
            if manifest.counts.get(member.table) != member.rows:
                raise SnapshotError(
                    f"the manifest's counts disagree about {member.table!r}"
                    f" ({manifest.counts.get(member.table)} vs {member.rows})"
                )
        for table in REQUIRED_TABLES:
            if table not in tables:
                raise SnapshotError(f"the snapshot is missing member '{table}.parquet'")
        for table in manifest.counts:
            if table not in tables:
                raise SnapshotError(f"the manifest counts table {table!r} but has no member for it")
        return manifest

    def extract(
        self,
        folder: Path,
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
    ) -> dict[str, Path]:
        """Copy every member into `folder`, checking its size and sha256 on the way;
        returns table -> file. Nothing is trusted before this returns."""
        folder.mkdir(parents=True, exist_ok=True)
        out: dict[str, Path] = {}
        done = 0
        for member in sorted(self.manifest.members.values(), key=lambda m: m.name):
            target = folder / member.name
            digest = hashlib.sha256()
            written = 0
            try:
                with self._zip.open(member.name) as source, open(target, "wb") as sink:
                    while chunk := source.read(COPY_CHUNK):
                        written += len(chunk)
                        if written > member.bytes:
                            raise SnapshotError(f"{member.name} is larger than its manifest says")
                        digest.update(chunk)
                        sink.write(chunk)
                        check(cancel)
            except ARCHIVE_ERRORS as error:
                if isinstance(error, OSError) and is_storage_failure(error):
                    raise storage_error(
                        error, "the snapshot could not be unpacked; no bank was changed"
                    ) from error
                raise damaged(member.name, error) from None
            if digest.hexdigest() != member.sha256:
                raise SnapshotError(
                    f"checksum mismatch for {member.name}: the snapshot is damaged or was altered"
                )
            out[member.table] = target
            done += written
            report(progress, done, self.total_bytes, f"checked {member.name}")
        return out

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> SnapshotReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# What a bank holds beyond its tables' data: DuckDB's own overhead, the LanceDB
# copy of every vector, the Tantivy index; measured on LoCoMo banks about 1.5x
# the Parquet data uncompressed, rounded up.
BANK_OVERHEAD = 2
SPARE_BYTES = 32 << 20


def needed_bytes(reader: SnapshotReader) -> int:
    """Disk an import takes at its peak: the members unpacked, plus the bank built
    from them, estimated from the tables' uncompressed sizes (each Parquet
    file's own footer, read inside the zip), plus the vectors' second copy in
    LanceDB. A compressed archive can be a fraction of that: 3x its size passed at
    6 MB free and then died."""
    import pyarrow.parquet as pq

    manifest = reader.manifest
    data = 0
    for member in manifest.members.values():
        try:
            with reader._zip.open(member.name) as handle:
                meta = pq.ParquetFile(handle).metadata
                data += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        except Exception:  # noqa: BLE001 - unreadable here: refused later, by name
            data += member.bytes
    vectors = manifest.counts.get("units", 0) * manifest.embedding_dim * 4
    return reader.total_bytes + BANK_OVERHEAD * data + 2 * vectors + SPARE_BYTES


def disk_space_ok(folder: Path, needed: int) -> None:
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise SnapshotError(
            f"not enough free disk space in {folder}: this import needs about"
            f" {needed / 1_048_576:,.0f} MB, {free / 1_048_576:,.0f} MB are free; nothing was"
            " changed"
        )


def read_snapshot_manifest(path: str | Path) -> Manifest:
    """A `.engram` file's manifest (its bank's name, counts, versions), checked as an
    import checks it first; SnapshotError for a file that is no snapshot."""
    with SnapshotReader(path) as snapshot:
        return snapshot.manifest
