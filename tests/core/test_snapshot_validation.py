"""Any valid bank exports; only valid snapshots import (issue 18, items 4-7).

Each hostile case takes a real snapshot apart, breaks one value or one byte and
puts it back together (sizes and checksums fixed, so only the value is wrong):
the import is refused with one line naming the table, row and field, and no
bank changes."""

from __future__ import annotations

import io
import json
import shutil
import struct
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import Engine, EngramError, NewUnit
from core.retain.importers import parse_documents
from core.snapshot import archive
from tests.core.test_snapshot_hostile import _members, _parquet, _write
from tests.support.curation import dump
from tests.support.embedders import HashEmbedder

CHAT = b"""Ann: I adopted a dog named Rex in Lisbon last spring.
Bob: Rex is lovely. I think Lisbon suits you.
Ann: My sister Carla visits Lisbon every May.
"""


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    """A small, valid snapshot with documents, turns, entities, mentions, links,
    observations and a profile (rules mode, hash vectors: no model)."""
    home = tmp_path_factory.mktemp("valid")
    with Engine(home, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("victim")
        bank.set_profile(background="A test bank.", config={"recall.rrf_k": 50})
        bank.ingest(parse_documents(CHAT, "txt", "chat.txt"), mode="rules")
        bank.process_jobs()
        path = home / "valid.engram"
        bank.export_snapshot(path)
    return path


@pytest.fixture
def engine(tmp_path):
    with Engine(tmp_path / "home", embedder=HashEmbedder()) as engine:
        yield engine


@pytest.fixture(scope="module")
def victim_engine(tmp_path_factory):
    """One engine for the refused imports: each checks the victim did not move
    (a test that moved it fails itself), so they need not import it afresh."""
    with Engine(tmp_path_factory.mktemp("victim-home"), embedder=HashEmbedder()) as engine:
        yield engine


@pytest.fixture(scope="module")
def victim(victim_engine, valid):
    return victim_engine.import_snapshot(valid)


def _table(files, name: str) -> pa.Table:
    return pq.read_table(io.BytesIO(files[f"{name}.parquet"]))


def _put(files, name: str, table: pa.Table) -> None:
    files[f"{name}.parquet"] = _parquet(table)


def _set(name: str, column: str, value, row: int = 0):
    """A change: `column` of row `row` of table `name` becomes `value`."""

    def change(manifest, files):
        table = _table(files, name)
        values = table.column(column).to_pylist()
        values[row] = value
        index = table.schema.get_field_index(column)
        _put(
            files,
            name,
            table.set_column(index, column, pa.array(values, table.schema.field(column).type)),
        )

    return change


def _vector_element(value):
    def change(manifest, files):
        table = _table(files, "units")
        vectors = table.column("vector").to_pylist()
        vectors[0] = [value, *vectors[0][1:]]
        index = table.schema.get_field_index("vector")
        _put(
            files,
            "units",
            table.set_column(index, "vector", pa.array(vectors, pa.list_(pa.float32()))),
        )

    return change


def _duplicate(name: str):
    def change(manifest, files):
        table = _table(files, name)
        _put(files, name, pa.concat_tables([table, table.slice(0, 1)]))
        manifest["counts"][name] += 1
        manifest["members"][f"{name}.parquet"]["rows"] += 1

    return change


def _meta(key: str, value):
    def change(manifest, files):
        table = _table(files, "meta")
        keys = table.column("key").to_pylist()
        values = table.column("value").to_pylist()
        values[keys.index(key)] = json.dumps(value)
        _put(files, "meta", pa.table({"key": keys, "value": values}, schema=table.schema))

    return change


def _manifest(update):
    return lambda manifest, files: update(manifest)


VALUE_CASES = {
    "profile is a JSON list": (
        _meta("profile", ["a", "b"]),
        "meta row key='profile': value must be a JSON object",
    ),
    "profile config not an object": (
        _meta("profile", {"config": [1]}),
        "config must be a JSON object",
    ),
    "unknown network": (
        _set("units", "network", "bogus"),
        "units row id=.*: network must be one of",
    ),
    "unknown unit status": (_set("units", "status", "zombie"), "units row id=.*: status"),
    "NaN vector element": (_vector_element(float("nan")), "units row id=.*: vector holds NaN"),
    "infinite vector element": (_vector_element(float("inf")), "vector holds NaN, infinite"),
    "null vector element": (_vector_element(None), "vector holds NaN, infinite or missing"),
    "NaN link weight": (
        _set("links", "weight", float("nan")),
        "links row .*: weight must be a finite",
    ),
    "huge link weight": (_set("links", "weight", 1e308), "links row .*: weight"),
    "NaN confidence": (_set("units", "confidence", float("nan")), "units row id=.*: confidence"),
    "confidence 1e308": (
        _set("units", "confidence", 1e308),
        "confidence must be a number from 0 to 1",
    ),
    "confidence -5": (_set("units", "confidence", -5.0), "confidence must be"),
    "confidence 2": (_set("units", "confidence", 2.0), "confidence must be"),
    "negative access count": (_set("units", "access_count", -3), "access_count cannot be negative"),
    "duplicate turn": (_duplicate("turns"), "turns: the row with document_id=.* appears 2 times"),
    "duplicate mention": (_duplicate("mentions"), "mentions: the row with unit_id="),
    "duplicate link": (_duplicate("links"), "links: the row with source="),
    "dangling observation unit": (
        _set("observations", "unit_id", "ghost"),
        "observations: unit_id='ghost' points at no row of units",
    ),
    "dangling observation source": (
        _set("observation_sources", "observation_id", "ghost"),
        "observation_sources: observation_id='ghost' points at no row",
    ),
    "turn of no document": (_set("turns", "document_id", "ghost"), "turns: document_id='ghost'"),
    "schema version 99": (
        _manifest(lambda m: m["bank"].update({"schema_version": 99})),
        "schema version 99; this Engram Studio reads up to",
    ),
    "schema version 0": (
        _manifest(lambda m: m["bank"].update({"schema_version": 0})),
        "schema version 0 is not valid",
    ),
    "exported_by a list": (
        _manifest(lambda m: m.update({"exported_by": ["x"]})),
        "'exported_by' is malformed",
    ),
}


def _refused(engine, victim, path: Path, match: str) -> None:
    before = dump(victim)
    for kwargs in ({"replace": True}, {"name": "fresh"}):
        with pytest.raises(EngramError, match=match) as refusal:
            engine.import_snapshot(path, **kwargs)
        assert "\n" not in str(refusal.value) and "Traceback" not in str(refusal.value)
    assert [b.name for b in engine.banks()] == ["victim"]
    assert dump(engine.open_bank("victim")) == before
    assert sorted(p.name for p in engine.banks_dir.iterdir()) == ["victim"]


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
@pytest.mark.slow
def test_hostile_values_are_refused_naming_table_row_and_field(
    victim_engine, victim, valid, tmp_path, case
):
    change, match = VALUE_CASES[case]
    manifest, files = _members(valid)
    change(manifest, files)
    path = _write(tmp_path / "hostile.engram", manifest, files)
    _refused(victim_engine, victim, path, match)


def test_every_case_breaks_a_value_the_valid_snapshot_holds(valid):
    """The cases above bite: the tables they change are not empty."""
    _, files = _members(valid)
    for name in (
        "units",
        "links",
        "turns",
        "mentions",
        "observations",
        "observation_sources",
        "documents",
    ):
        assert _table(files, name).num_rows > 0, name


# -- malformed archives (item 6) ------------------------------------------------------


def _raw_zip(
    path: Path, manifest_bytes: bytes, files: dict[str, bytes], method=zipfile.ZIP_STORED
) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", manifest_bytes)
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return path


def _patch_member(path: Path, name: str, edit) -> None:
    """Edit the bytes of member `name` in place (its local header untouched)."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    data = bytearray(path.read_bytes())
    offset = info.header_offset
    name_len, extra_len = struct.unpack("<HH", data[offset + 26 : offset + 30])
    start = offset + 30 + name_len + extra_len
    edit(data, start, info.compress_size, offset)
    path.write_bytes(bytes(data))


def _flip(data, start, size, header):
    data[start + size // 2] ^= 0xFF


def _method_93(data, start, size, header):
    data[header + 8 : header + 10] = struct.pack("<H", 93)


def _central_method_93(path: Path) -> None:
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        data[at + 10 : at + 12] = struct.pack("<H", 93)
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))


def test_deeply_nested_manifest(victim_engine, victim, valid, tmp_path):
    _, files = _members(valid)
    path = _raw_zip(tmp_path / "nested.engram", b"[" * 100_000 + b"]" * 100_000, files)
    _refused(victim_engine, victim, path, "manifest.json is nested too deeply")


def test_bad_crc(victim_engine, victim, valid, tmp_path):
    path = tmp_path / "crc.engram"
    shutil.copy(valid, path)
    _patch_member(path, "entities.parquet", _flip)
    _refused(victim_engine, victim, path, "damaged|checksum")


def test_bad_crc_in_the_manifest(victim_engine, victim, valid, tmp_path):
    path = tmp_path / "crc.engram"
    shutil.copy(valid, path)
    _patch_member(path, "manifest.json", _flip)
    _refused(victim_engine, victim, path, "damaged or not a valid Engram snapshot")


def test_corrupt_deflate_stream(victim_engine, victim, valid, tmp_path):
    manifest, files = _members(valid)
    path = _raw_zip(
        tmp_path / "deflate.engram", json.dumps(manifest).encode(), files, zipfile.ZIP_DEFLATED
    )
    _patch_member(path, "units.parquet", _flip)
    _refused(victim_engine, victim, path, "damaged or not a valid Engram snapshot")


def test_unknown_compression_method(victim_engine, victim, valid, tmp_path):
    path = tmp_path / "method.engram"
    shutil.copy(valid, path)
    _central_method_93(path)
    _refused(victim_engine, victim, path, "compression method")


def test_truncated_archive(victim_engine, victim, valid, tmp_path):
    path = tmp_path / "cut.engram"
    path.write_bytes(valid.read_bytes()[: valid.stat().st_size // 2])
    _refused(victim_engine, victim, path, "not an Engram snapshot|damaged")


# -- unknown settings: a warning, and the profile stays readable and fixable (item 5) --


def test_an_unknown_config_key_is_a_warning_not_a_broken_bank(engine, valid, tmp_path, caplog):
    manifest, files = _members(valid)
    _meta("profile", {"background": "b", "config": {"recall.rrf_k": 50, "future.knob": 3}})(
        manifest, files
    )
    path = _write(tmp_path / "future.engram", manifest, files)
    with caplog.at_level("WARNING"):
        bank = engine.import_snapshot(path, name="future")
    assert "unknown setting 'future.knob'" in caplog.text
    assert bank.profile().config["recall.rrf_k"] == 50
    assert bank.profile_warnings() == [
        "unknown setting 'future.knob' ignored (saving the profile drops it)"
    ]
    bank.recall("Rex")
    bank.ingest(parse_documents(b"Ann: Rex barked.\n", "txt", "more.txt"), mode="rules")
    bank.set_profile(config={"recall.rrf_k": 40})
    assert bank.profile_warnings() == []
    assert bank.profile().config["recall.rrf_k"] == 40


def test_a_damaged_stored_profile_can_still_be_read_and_fixed(engine):
    bank = engine.create_bank("p")
    for stored in (["a list"], {"config": {"nope": 1, "recall.rrf_k": "x"}, "background": 5}):
        with bank.store.transaction() as tx:
            bank.store.set_meta(tx.con, "profile", stored)
        profile = bank.profile()  # used to raise KeyError/AttributeError
        assert profile.config["recall.rrf_k"] == 60 and bank.profile_warnings()
        bank.set_profile(background="fixed", config={"recall.rrf_k": 61})
        assert bank.profile_warnings() == [] and bank.profile().background == "fixed"


# -- large rows (item 4) and the disk estimate (item 7) -----------------------------


def _big_bank(engine, rows: int, chars: int):
    bank = engine.create_bank("big")
    with bank.store.transaction() as tx:
        tx.con.execute(
            "INSERT INTO documents (id, title, content_hash, created_at) VALUES ('d', 'big', 'h', now())"
        )
        tx.con.execute(
            "INSERT INTO turns (document_id, id, idx, speaker, text)"
            " SELECT 'd', 't' || i, i, 'Ann', repeat(md5(i::VARCHAR), ?) FROM range(?) t(i)",
            [chars // 32, rows],
        )
    bank.add_units([NewUnit(text="x" * 19_000 + str(i)) for i in range(50)])
    return bank


@pytest.mark.slow
def test_a_bank_of_large_turns_exports_and_imports(engine, tmp_path):
    """2,100 turns of 45,000 characters (within the ingest limits) failed with DuckDB's
    OutOfMemoryException: 2,048-row batches against a 64 MB memory cap."""
    bank = _big_bank(engine, rows=2100, chars=45_000)
    assert bank.verify().ok
    manifest = bank.export_snapshot(tmp_path / "big.engram")
    assert manifest.counts["turns"] == 2100
    copy = engine.import_snapshot(tmp_path / "big.engram", name="copy")
    con = copy.store.reader()
    assert con.execute("SELECT count(*), sum(strlen(text)) FROM turns").fetchall() == [
        (2100, 2100 * (45_000 // 32) * 32)
    ]
    assert copy.verify().ok and copy.count() == 50


@pytest.mark.slow
def test_the_disk_estimate_counts_what_the_import_will_write(engine, tmp_path, monkeypatch):
    """3x the archive passed with 6 MB free and the import then died: estimate from
    the tables' uncompressed sizes. A highly compressible bank shows the gap."""
    bank = _big_bank(engine, rows=300, chars=45_000)
    path = tmp_path / "big.engram"
    bank.export_snapshot(path)
    archive_bytes = path.stat().st_size
    with archive.SnapshotReader(path) as reader:
        needed = archive.needed_bytes(reader)
    copy = engine.import_snapshot(path, name="measured")
    used = sum(p.stat().st_size for p in copy.folder.rglob("*") if p.is_file())
    assert needed >= used > 3 * archive_bytes  # the old estimate was too small
    real = shutil.disk_usage

    def nearly_full(folder):
        return real(folder)._replace(free=used)

    monkeypatch.setattr(archive.shutil, "disk_usage", nearly_full)
    with pytest.raises(EngramError, match="not enough free disk space.*nothing was changed"):
        engine.import_snapshot(path, name="third")
    assert "third" not in [b.name for b in engine.banks()]
