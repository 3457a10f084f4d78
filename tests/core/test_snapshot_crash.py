"""A SIGKILL anywhere in an import leaves no half bank and the replaced bank as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from core import Engine, NewUnit
from tests.support.children import Child, snapshot_importer
from tests.support.curation import add_entity, dump
from tests.support.embedders import HashEmbedder

pytestmark = pytest.mark.slow


def _bank_with(engine: Engine, name: str, n: int, seed: int):
    bank = engine.create_bank(name)
    entity = add_entity(bank, f"Entity {seed}")
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    bank.add_units(
        [
            NewUnit(text=f"{name} fact {i}", vector=tuple(vectors[i]), entity_ids=(entity,))
            for i in range(n)
        ]
    )
    return bank


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("source")
    with Engine(home, embedder=HashEmbedder()) as engine:
        bank = _bank_with(engine, "incoming", 1500, seed=1)
        path = home / "incoming.engram"
        bank.export_snapshot(path)
    return path


@pytest.fixture
def home(tmp_path):
    """A data folder holding bank 'victim', closed."""
    with Engine(tmp_path / "home", embedder=HashEmbedder()) as engine:
        _bank_with(engine, "victim", 50, seed=2)
    return tmp_path / "home"


def _state(home: Path) -> tuple[list[str], dict | None, list[str]]:
    """(bank names, the victim's rows, leftover folders) as a fresh Engine sees them."""
    with Engine(home, embedder=HashEmbedder()) as engine:
        names = [b.name for b in engine.banks()]
        rows = dump(engine.open_bank("victim")) if "victim" in names else None
        if rows is not None:
            assert engine.open_bank("victim").verify().ok
        hidden = sorted(p.name for p in engine.banks_dir.iterdir() if p.name.startswith("."))
        unlabeled = [p.name for p in engine.banks_dir.iterdir() if not (p / "bank.json").exists()]
    return names, rows, hidden + unlabeled


def _run(home: Path, snapshot: Path, name: str, replace: bool, fault: str | None = None) -> Child:
    return Child(snapshot_importer, str(home), str(snapshot), name, replace, fault)


@pytest.mark.parametrize("fault", ["extracted", "built", "set-aside", "moved"])
def test_kill_before_commit_leaves_the_replaced_bank_untouched(home, snapshot, fault):
    names, before, _ = _state(home)
    assert _run(home, snapshot, "victim", True, fault).join() == -signal.SIGKILL
    after_names, after, leftovers = _state(home)
    assert after_names == names == ["victim"]
    assert after == before
    assert leftovers == []


def test_kill_after_commit_keeps_the_new_bank(home, snapshot):
    _, before, _ = _state(home)
    assert _run(home, snapshot, "victim", True, "committed").join() == -signal.SIGKILL
    names, after, leftovers = _state(home)
    assert names == ["victim"] and leftovers == []
    assert after != before and len(after["units"]) == 1500


def test_kill_while_importing_a_new_bank(home, snapshot):
    _, before, _ = _state(home)
    for fault in ("built", "moved"):
        assert _run(home, snapshot, "newcomer", False, fault).join() == -signal.SIGKILL
        names, after, leftovers = _state(home)
        assert names == ["victim"] and after == before and leftovers == []


def test_kill_from_outside_at_an_arbitrary_moment(home, snapshot):
    names, before, _ = _state(home)
    banks_dir = home / "banks"
    child = _run(home, snapshot, "victim", True)
    deadline = time.monotonic() + 120
    # Wait until the import is under way (its hidden folder exists), then kill it.
    while not any(p.name.startswith(".import-") for p in banks_dir.iterdir()):
        assert child.process.is_alive(), f"the import ended early ({child.process.exitcode})"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child.kill()
    after_names, after, leftovers = _state(home)
    assert after_names == names and leftovers == []
    assert after == before  # the kill came long before the commit
    # And the same import, left alone, completes.
    child = _run(home, snapshot, "victim", True)
    assert child.receive_one(timeout=120) == "done"
    assert child.join() == 0
    _, replaced, leftovers = _state(home)
    assert len(replaced["units"]) == 1500 and leftovers == []


def test_a_kill_between_making_the_folder_and_locking_it_is_cleaned_up(tmp_path):
    """The import folder exists a moment before its lock file does (CI killed one
    there): its creator's pid tells a dead import from one about to lock."""
    dead_pid = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_pid.wait()  # reaped: its pid names no process
    with Engine(tmp_path / "home", embedder=HashEmbedder()) as engine:
        banks = engine.banks_dir
    dead = banks / f".import-{dead_pid.pid}-0123abcd"
    alive = banks / f".import-{os.getpid()}-4567ef01"
    for folder in (dead, alive):
        (folder / ".snapshot").mkdir(parents=True)
    with Engine(tmp_path / "home", embedder=HashEmbedder()) as engine:
        assert engine.banks() == []
    assert not dead.exists()
    assert alive.exists(), "a live creator is about to take its lock"
