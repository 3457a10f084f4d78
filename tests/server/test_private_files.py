"""No other local user reads a bank (issue 27, items 10 and 11).

Under the usual umask (022) the data folder, its banks and their files came
out 0755/0644: anyone on the machine read every memory, and could take a read
lock on `bank.guard` to lock the owner out. And a streamed snapshot export went
through a 0644 file in the shared temp folder that outlived a kill: a full copy
of the bank, beyond purge's reach.

The reproductions run as another user (`nobody`, in a forked child) when the
tests run as root, so "cannot read" is what the kernel says, not what the mode
bits suggest.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from core import Engine
from core.types import Document, Turn
from tests.server.conftest import serving
from tests.support.embedders import HashEmbedder

NOBODY = 65534


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def gone_soon(path: Path, within: float = 10.0) -> bool:
    """Whether `path` is removed within `within` seconds (polled, not slept on)."""
    deadline = time.monotonic() + within
    while path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def others_can_read(*paths: Path) -> bool:
    """Whether user `nobody` can open any of `paths` for reading (forked, setuid),
    or, when these tests are not root, whether the bits along a path would let
    anyone."""
    if os.getuid() != 0:
        return any(_readable_by_all(p) for p in paths)
    pid = os.fork()
    if pid == 0:  # the child: become nobody and try each
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        for path in paths:
            try:
                with open(path, "rb") as f:
                    f.read(1)
                os._exit(0)
            except OSError:
                pass
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _readable_by_all(path: Path) -> bool:
    above = [p for p in path.parents if p != Path(p.anchor)]
    return bool(mode(path) & stat.S_IROTH) and all(mode(p) & stat.S_IXOTH for p in above)


@pytest.fixture
def home(umask_022):
    """A data folder's place every user can reach (the tests' own temp folders are
    private, which would hide what the data folder itself lets through)."""
    place = Path(tempfile.mkdtemp(prefix="engram-private-"))
    os.chmod(place, 0o755)
    yield place / "home"
    shutil.rmtree(place, ignore_errors=True)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def retain_a_note(bank) -> None:
    bank.ingest([Document("n", "note", (Turn("t0", "Ann", "Ann keeps bees in Lisbon."),))])


def test_a_new_data_folder_and_its_banks_are_the_owners_alone(home):
    with Engine(home, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("private")
        retain_a_note(bank)
        folder = bank.folder
        assert mode(home) == mode(home / "banks") == mode(folder) == 0o700
        for name in ("bank.duckdb", "bank.guard", "bank.json"):
            assert mode(folder / name) == 0o600, name
        # What the stores make later passes their umask, but behind the bank's
        # folder: no file under it can be read by another user.
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert len(files) > 5 and not others_can_read(*files)


def test_a_folder_left_readable_is_repaired_on_open_and_said_once(home, caplog):
    with Engine(home, embedder=HashEmbedder()) as engine:
        retain_a_note(engine.create_bank("old"))
        folder = engine.open_bank("old").folder
    # As an older version left it: everything readable by everyone.
    for path in [home, *home.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    assert others_can_read(folder / "bank.duckdb")

    with caplog.at_level(logging.WARNING), Engine(home, embedder=HashEmbedder()) as engine:
        engine.open_bank("old")
    said = [r.getMessage() for r in caplog.records if "owner-only" in r.getMessage()]
    assert len(said) == 2, said  # the data folder once, the bank once
    assert str(folder) in said[1] and "readable by other users" in said[1]
    assert not [p for p in [home, *home.rglob("*")] if mode(p) & 0o077]
    assert not others_can_read(*[p for p in home.rglob("*") if p.is_file()])

    caplog.clear()
    with caplog.at_level(logging.WARNING), Engine(home, embedder=HashEmbedder()) as engine:
        engine.open_bank("old")
    assert not [r for r in caplog.records if "owner-only" in r.getMessage()]


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.slow
def test_a_streamed_export_stays_in_the_data_folder_and_a_leftover_is_known_then_cleaned(
    home, embedder, tmp_path, monkeypatch
):
    with Engine(home, embedder=embedder) as engine:
        retain_a_note(engine.create_bank("exported"))
    # The shared temp folder, as the (in-process) server sees it: this test's own,
    # so what other tests running meanwhile put in the real one does not count.
    shared = tmp_path / "shared-temp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    with serving(home, embedder, headless=True, mcp=False) as served, served.client() as http:
        # The copy the server streams from, seen as it is made: a small bank's copy
        # may be sent and removed before the client reads the response's head.
        made: list[tuple[Path, int, bool]] = []
        make = served.banks.transfer_path

        def recording(*args: object) -> Path:
            path = make(*args)
            made.append((path, mode(path), others_can_read(path)))
            return path

        served.banks.transfer_path = recording
        with http.stream("GET", "/engram/v1/banks/exported/snapshot") as r:
            assert r.status_code == 200
            data = b"".join(r.iter_bytes())
        served.banks.transfer_path = make
        assert data[:2] == b"PK"
        [(copy, copy_mode, readable)] = made  # in the data folder, owner-only
        assert copy.parent == home / "transfers" and copy_mode == 0o600 and not readable
        assert mode(home / "transfers") == 0o700
        assert gone_soon(copy)  # sent: removed (after the response, by the server)
        assert not list(shared.iterdir())

        # A server killed while sending leaves its copy: the bank's purge lists it.
        bank = served.banks.get("exported")
        copy = served.banks.transfer_path("exported")
        left = copy.with_name(f"{dead_pid()}-{copy.name.split('-', 1)[1]}")
        copy.rename(left)
        left.write_bytes(data)
        assert str(left) in [e.path for e in bank.exports() if e.exists]
        # Another live process's transfer is no leftover: only the dead one's goes.
        live = served.banks.transfer_path("exported")
    with Engine(home, embedder=embedder) as engine:  # the next start cleans it
        assert not left.exists() and live.exists()
        assert str(left) not in [e.path for e in engine.open_bank("exported").exports()]
