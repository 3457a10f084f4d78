"""A full disk (issue 18, item 11): every failure says what was and was not saved,
the original error is kept, and the next open finishes what was committed.

Where we may mount one (root), a real 12 MB tmpfs fills up under DuckDB,
LanceDB and Tantivy; elsewhere those tests skip and the ones that inject
OSError(ENOSPC) at the file layer still run."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import duckdb
import pytest

from core import Engine, NewUnit, StorageError
from core.cli import main as cli_main
from core.curate import purge as purge_module
from core.store.bank_store import BankStore
from core.store.failures import NEXT_OPEN
from tests.support.curation import add_entity, folder_contains
from tests.support.embedders import HashEmbedder

ENOSPC = OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def small_disk(tmp_path):
    """A 12 MB tmpfs, or skip where mounting is not allowed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the injected-ENOSPC tests cover the rest")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def _leave_free(disk: Path, free: int) -> Path:
    """Take all but `free` bytes of the disk with a file outside any bank."""
    import shutil

    filler = disk / ".filler"
    filler.write_bytes(b"\0" * max(0, shutil.disk_usage(disk).free - free))
    return filler


def _fill(bank, limit: int = 400) -> int:
    """Add units until the disk refuses; returns how many were reported added."""
    added = 0
    with pytest.raises(StorageError) as full:
        for i in range(limit):
            bank.add_units([NewUnit(text=f"fact {i}-{j} " + "y" * 15_000) for j in range(10)])
            added += 10
    message = str(full.value)
    assert "the disk is full" in message and "\n" not in message
    assert "no transaction is active" not in message
    assert "was not saved" in message or "was saved" in message
    return added


@pytest.mark.slow
def test_on_a_full_disk_nothing_reported_is_lost_and_the_next_open_finishes(small_disk):
    home = small_disk / "home"
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (3 << 20))  # freed later: "space is back"
    engine = Engine(home, embedder=HashEmbedder())
    bank = engine.create_bank("b")
    added = _fill(bank)
    with pytest.raises(StorageError, match="nothing committed is lost"):
        engine.close()
    filler.unlink()
    with Engine(home, embedder=HashEmbedder()) as again:
        bank = again.open_bank("b")
        assert bank.count() >= added  # every batch reported added is there
        assert bank.verify().ok


def test_export_to_a_full_disk_leaves_no_file_and_says_so(tmp_path, small_disk):
    with Engine(tmp_path / "home", embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("b")
        bank.add_units([NewUnit(text=f"{i} " + os.urandom(6000).hex()) for i in range(300)])
        target = small_disk / "b.engram"
        filler = _leave_free(small_disk, 1 << 20)
        with pytest.raises(
            StorageError, match="no snapshot was written to .*the bank is unchanged"
        ):
            bank.export_snapshot(target)
        assert list(small_disk.iterdir()) == [filler]  # no partial file, no temp folder
        assert bank.verify().ok


@pytest.mark.slow
def test_import_onto_a_full_disk_changes_no_bank(tmp_path, small_disk, monkeypatch):
    with Engine(tmp_path / "src", embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("src")
        bank.add_units([NewUnit(text=f"{i} " + os.urandom(6000).hex()) for i in range(300)])
        bank.export_snapshot(tmp_path / "src.engram")
    from core.snapshot import importer

    with Engine(small_disk / "home", embedder=HashEmbedder()) as engine:
        engine.create_bank("kept")
        _leave_free(small_disk, 2 << 20)
        # The pre-flight estimate would refuse it: skip it to fail mid-way instead.
        monkeypatch.setattr(importer, "disk_space_ok", lambda folder, needed: None)
        with pytest.raises(
            StorageError, match="the disk is full: .*no bank was (changed|created or replaced)"
        ):
            engine.import_snapshot(tmp_path / "src.engram")
        assert [b.name for b in engine.banks()] == ["kept"]
        assert not [p for p in engine.banks_dir.iterdir() if p.name.startswith(".import-")]


# -- injected at the file layer: these run everywhere ---------------------------------


class _CommitFails:
    """A DuckDB connection whose COMMIT fails the way a full disk makes it: the
    transaction is gone, so a ROLLBACK after it fails too."""

    def __init__(self, db):
        self._db = db

    def cursor(self):
        return _Cursor(self._db.cursor())

    def __getattr__(self, name):
        return getattr(self._db, name)


class _Cursor:
    def __init__(self, con):
        self._con = con

    def execute(self, sql, *args):
        if sql == "COMMIT":
            self._con.execute("ROLLBACK")
            raise duckdb.IOException(
                'Could not write file "bank.duckdb.wal": No space left on device'
            )
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_a_failed_commit_keeps_its_own_error(tmp_path):
    """It was masked by 'cannot rollback - no transaction is active'."""
    with Engine(tmp_path, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("b")
        real = bank.store._db
        bank.store._db = _CommitFails(real)
        try:
            with pytest.raises(StorageError) as failure:
                bank.add_units([NewUnit(text="never saved")])
        finally:
            bank.store._db = real
        assert "No space left on device" in str(failure.value)
        assert "the change was not saved" in str(failure.value)
        assert "no transaction is active" not in str(failure.value)
        assert bank.count() == 0
        bank.add_units([NewUnit(text="saved once space is back")])
        assert bank.count() == 1


def test_indexes_that_cannot_follow_say_the_change_was_saved(tmp_path, monkeypatch):
    with Engine(tmp_path, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("b")

        def full(self, rows):
            raise ENOSPC

        from core.store.vectors import VectorIndex

        monkeypatch.setattr(VectorIndex, "upsert", full)
        with pytest.raises(StorageError, match=f"the change was saved.*{NEXT_OPEN}"):
            bank.add_units([NewUnit(text="in DuckDB, not yet indexed")])
        monkeypatch.undo()
        bank.close()
        bank = engine.open_bank("b")  # the queue is replayed
        assert bank.count() == 1 and bank.verify().ok


def test_a_purge_whose_rebuild_fails_says_it_committed_and_the_next_open_finishes(
    tmp_path, monkeypatch
):
    with Engine(tmp_path, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("b")
        quux = add_entity(bank, "Quuxtrax")
        bank.add_units([NewUnit(text="Quuxtrax plays chess.", entity_ids=(quux,))])
        bank.add_units([NewUnit(text="Unrelated fact.")])

        def full(self):
            raise ENOSPC

        monkeypatch.setattr(BankStore, "rebuild_indexes", full)
        with pytest.raises(StorageError) as failure:
            bank.purge_entity(quux, confirm=True)
        message = str(failure.value)
        assert "the purge was committed" in message and "completes the purge" in message
        assert bank.store.meta(purge_module.PENDING_KEY) is True
        monkeypatch.undo()
        bank.close()
        bank = engine.open_bank("b")
        assert bank.store.meta(purge_module.PENDING_KEY) is None
        assert folder_contains(bank.folder, b"Quuxtrax") == []
        assert [u.text for u in bank.units()] == ["Unrelated fact."]


def test_the_cli_reports_a_close_the_disk_refuses_in_one_line(tmp_path, monkeypatch, capsys):
    """`engram ingest` printed its success, then died in close() with a traceback."""
    chat = tmp_path / "chat.txt"
    chat.write_text("Ann: I keep bees.\nBob: Since when?\n")
    home = tmp_path / "home"
    with Engine(home, embedder=HashEmbedder()) as engine:
        engine.create_bank("b")
    real_close = BankStore.close

    def refused(self):
        real_close(self)
        raise StorageError(
            f"the disk is full: closing bank 'b' could not tidy its files; {NEXT_OPEN}"
        )

    monkeypatch.setattr(BankStore, "close", refused)
    monkeypatch.setattr("core.engine.Engine.embedder", HashEmbedder())
    code = cli_main(
        ["--home", str(home), "ingest", "b", str(chat), "--mode", "verbatim", "--quiet"]
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert "== " in out  # the ingest itself was reported
    assert err.strip().startswith("engram: the disk is full") and len(err.strip().splitlines()) == 1


def test_the_cli_turns_a_bare_disk_error_into_one_line(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    with Engine(home, embedder=HashEmbedder()) as engine:
        engine.create_bank("b")

    def full(self, *args, **kwargs):
        raise ENOSPC

    monkeypatch.setattr("core.bank.Bank.verify", full)
    code = cli_main(["--home", str(home), "verify", "b"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("engram: the disk is full") and NEXT_OPEN in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert Path(home).exists()
