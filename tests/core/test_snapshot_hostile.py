"""Hostile and broken snapshots are refused with a clear error, and no bank changes."""

from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import Engine, EngramError, NewUnit
from core.snapshot import archive
from tests.support.curation import add_entity, dump
from tests.support.embedders import HashEmbedder


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    """A small, valid snapshot made without a model (hash vectors)."""
    home = tmp_path_factory.mktemp("valid")
    with Engine(home, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("victim")
        alice = add_entity(bank, "Alice")
        bank.add_units([NewUnit(text=f"Alice fact {i}", entity_ids=(alice,)) for i in range(20)])
        path = home / "valid.engram"
        bank.export_snapshot(path)
    return path


# One engine and victim per module: every test here is a refused import that
# checks the victim did not move (a test that moved it fails itself).
@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with Engine(tmp_path_factory.mktemp("home"), embedder=HashEmbedder()) as engine:
        yield engine


@pytest.fixture(scope="module")
def victim(engine, valid):
    """The bank a hostile import tries to replace; its state must not move."""
    bank = engine.import_snapshot(valid)
    bank.add_units([NewUnit(text="something only the victim has")])
    return bank


def _members(path: Path) -> tuple[dict, dict[str, bytes]]:
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    return json.loads(files.pop("manifest.json")), files


def _write(
    path: Path,
    manifest: dict,
    files: dict[str, bytes],
    *,
    fix: bool = True,
    infos: Callable[[str], zipfile.ZipInfo] | None = None,
) -> Path:
    """A snapshot from parts; `fix` makes the manifest's sizes and checksums match."""
    if fix:
        for name, data in files.items():
            if name in manifest["members"]:
                manifest["members"][name]["sha256"] = hashlib.sha256(data).hexdigest()
                manifest["members"][name]["bytes"] = len(data)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for name, data in files.items():
            info = infos(name) if infos else zipfile.ZipInfo(name)
            z.writestr(info, data)
    return path


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _short_vectors(data: bytes) -> bytes:
    table = pq.read_table(io.BytesIO(data))
    short = pa.array([v[:8] for v in table.column("vector").to_pylist()], pa.list_(pa.float32()))
    return _parquet(table.set_column(table.schema.get_field_index("vector"), "vector", short))


def _variant(valid: Path, tmp_path: Path, change) -> Path:
    manifest, files = _members(valid)
    fix = change(manifest, files)
    return _write(tmp_path / "hostile.engram", manifest, files, fix=fix is not False)


def _refused(engine, victim, path, match: str) -> None:
    before = dump(victim)
    names = [b.name for b in engine.banks()]
    with pytest.raises(EngramError, match=match):
        engine.import_snapshot(path, replace=True)
    with pytest.raises(EngramError, match=match):
        engine.import_snapshot(path, name="fresh")
    assert [b.name for b in engine.banks()] == names
    assert dump(engine.open_bank("victim")) == before
    assert sorted(p.name for p in engine.banks_dir.iterdir()) == ["victim"]


def _renamed(old: str, new: str):
    def change(manifest, files):
        files[new] = files.pop(old)
        manifest["members"][new] = manifest["members"].pop(old)

    return change


CASES = {
    "parent path": (_renamed("links.parquet", "../links.parquet"), "escapes"),
    "nested parent": (_renamed("links.parquet", "a/../../links.parquet"), "escapes"),
    "absolute path": (_renamed("links.parquet", "/tmp/links.parquet"), "escapes"),
    "windows path": (_renamed("links.parquet", "..\\links.parquet"), "escapes"),
    "drive letter": (_renamed("links.parquet", "C:links.parquet"), "escapes"),
    "missing member": (lambda m, f: f.pop("links.parquet"), "missing member 'links.parquet'"),
    "unlisted member": (
        lambda m, f: f.update({"notes.txt": b"hello"}),
        "unexpected member 'notes.txt'",
    ),
    "unknown table": (
        lambda m, f: (
            f.update({"secrets.parquet": f["links.parquet"]}),
            m["members"].update(
                {"secrets.parquet": {**m["members"]["links.parquet"], "table": "secrets"}}
            ),
            m["counts"].update({"secrets": m["counts"]["links"]}),
        ),
        "no table 'secrets'",
    ),
    "required table absent": (
        lambda m, f: (
            f.pop("turns.parquet"),
            m["members"].pop("turns.parquet"),
            m["counts"].pop("turns"),
        ),
        "missing member 'turns.parquet'",
    ),
    "checksum mismatch": (
        lambda m, f: (
            f.update({"units.parquet": f["units.parquet"][:-9] + b"X" + f["units.parquet"][-8:]}),
            False,
        )[1],
        "checksum mismatch",
    ),
    "future format": (lambda m, f: m.update({"format_version": 99}), "format version 99"),
    "not a snapshot manifest": (lambda m, f: m.pop("format"), "not an Engram snapshot"),
    "malformed parquet": (
        lambda m, f: f.update({"entities.parquet": b"PAR1 definitely not parquet PAR1"}),
        "not a valid Parquet",
    ),
    "counts lie": (
        lambda m, f: (
            m["counts"].update({"units": 21}),
            m["members"]["units.parquet"].update({"rows": 21}),
        ),
        "units has 21 rows",
    ),
    "counts disagree": (lambda m, f: m["counts"].update({"units": 5}), "counts disagree"),
    "extra column": (
        lambda m, f: f.update(
            {
                "entities.parquet": _parquet(
                    pq.read_table(io.BytesIO(f["entities.parquet"])).append_column(
                        "evil", pa.array(["x"], pa.string())
                    )
                )
            }
        ),
        "unexpected column",
    ),
    "dangling mention": (
        lambda m, f: f.update(
            {
                "mentions.parquet": _parquet(
                    pa.concat_tables(
                        [
                            pq.read_table(io.BytesIO(f["mentions.parquet"])).slice(0, 19),
                            pa.table(
                                {"unit_id": ["ghost"], "entity_id": ["ghost"], "surface": [None]},
                                schema=pq.read_table(io.BytesIO(f["mentions.parquet"])).schema,
                            ),
                        ]
                    )
                )
            }
        ),
        "points at no row of units|inconsistent",
    ),
    "vectors shorter than the manifest says": (
        lambda m, f: f.update({"units.parquet": _short_vectors(f["units.parquet"])}),
        "do not have the manifest's 384 dimensions",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.slow
def test_hostile_member_contents(engine, victim, valid, tmp_path, case):
    change, match = CASES[case]
    _refused(engine, victim, _variant(valid, tmp_path, change), match)


def test_symlink_member(engine, victim, valid, tmp_path):
    manifest, files = _members(valid)

    def infos(name):
        info = zipfile.ZipInfo(name)
        if name == "links.parquet":
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
        return info

    path = _write(tmp_path / "s.engram", manifest, files, infos=infos)
    _refused(engine, victim, path, "symbolic link")


def test_directory_and_encrypted_members(engine, victim, valid, tmp_path):
    manifest, files = _members(valid)
    files["dir/"] = b""
    _refused(engine, victim, _write(tmp_path / "d.engram", manifest, files), "not a regular file")
    # zipfile never writes an encrypted member: set the flag in the central directory.
    data = bytearray(valid.read_bytes())
    at = data.index(b"PK\x01\x02")
    while data[at + 46 : at + 46 + int.from_bytes(data[at + 28 : at + 30], "little")] != (
        b"units.parquet"
    ):
        at = data.index(b"PK\x01\x02", at + 4)
    data[at + 8] |= 0x1
    encrypted = tmp_path / "e.engram"
    encrypted.write_bytes(bytes(data))
    _refused(engine, victim, encrypted, "encrypted")


def test_duplicate_members(engine, victim, valid, tmp_path):
    manifest, files = _members(valid)
    path = _write(tmp_path / "dup.engram", manifest, files)
    with pytest.warns(UserWarning), zipfile.ZipFile(path, "a") as z:
        z.writestr("units.parquet", files["units.parquet"])
    _refused(engine, victim, path, "two members of the same name")


def test_zip_bomb_ratio_and_total_size(engine, victim, valid, tmp_path, monkeypatch):
    manifest, files = _members(valid)
    files["units.parquet"] = b"\0" * (20 << 20)  # 20 MiB of zeros deflate ~1000x
    path = tmp_path / "bomb.engram"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        for name, data in files.items():
            z.writestr(name, data)
    _refused(engine, victim, path, "zip bomb")
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 10_000)
    _refused(engine, victim, valid, "limit is 10,000")


def test_not_a_zip_and_no_manifest(engine, victim, valid, tmp_path):
    junk = tmp_path / "junk.engram"
    junk.write_bytes(b"this is not a zip file at all")
    _refused(engine, victim, junk, "not an Engram snapshot")
    _, files = _members(valid)
    bare = tmp_path / "bare.engram"
    with zipfile.ZipFile(bare, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    _refused(engine, victim, bare, "no manifest.json")
    _refused(engine, victim, tmp_path / "absent.engram", "no snapshot file")
