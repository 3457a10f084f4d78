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
from core.snapshot.importer import FAULT_ENV
from tests.core.test_curate_support import HashEmbedder, add_entity, dump

REPO = Path(__file__).resolve().parents[2]
IMPORT = """
import sys
sys.path.insert(0, {repo!r})
from core import Engine
from tests.core.test_curate_support import HashEmbedder
with Engine({home!r}, embedder=HashEmbedder()) as engine:
    engine.import_snapshot({path!r}, name={name!r}, replace={replace!r})
print("done")
"""


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


def _run(home: Path, snapshot: Path, name: str, replace: bool, fault: str | None = None):
    code = IMPORT.format(
        repo=str(REPO), home=str(home), path=str(snapshot), name=name, replace=replace
    )
    env = {**os.environ, FAULT_ENV: fault or ""}
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.mark.parametrize("fault", ["extracted", "built", "set-aside", "moved"])
def test_kill_before_commit_leaves_the_replaced_bank_untouched(home, snapshot, fault):
    names, before, _ = _state(home)
    process = _run(home, snapshot, "victim", True, fault)
    process.wait(timeout=120)
    assert process.returncode == -signal.SIGKILL, process.stderr.read().decode()
    after_names, after, leftovers = _state(home)
    assert after_names == names == ["victim"]
    assert after == before
    assert leftovers == []


def test_kill_after_commit_keeps_the_new_bank(home, snapshot):
    _, before, _ = _state(home)
    process = _run(home, snapshot, "victim", True, "committed")
    process.wait(timeout=120)
    assert process.returncode == -signal.SIGKILL
    names, after, leftovers = _state(home)
    assert names == ["victim"] and leftovers == []
    assert after != before and len(after["units"]) == 1500


def test_kill_while_importing_a_new_bank(home, snapshot):
    _, before, _ = _state(home)
    for fault in ("built", "moved"):
        process = _run(home, snapshot, "newcomer", False, fault)
        process.wait(timeout=120)
        assert process.returncode == -signal.SIGKILL
        names, after, leftovers = _state(home)
        assert names == ["victim"] and after == before and leftovers == []


def test_kill_from_outside_at_an_arbitrary_moment(home, snapshot):
    names, before, _ = _state(home)
    banks_dir = home / "banks"
    process = _run(home, snapshot, "victim", True)
    deadline = time.monotonic() + 120
    # Wait until the import is under way (its hidden folder exists), then kill it.
    while not any(p.name.startswith(".import-") for p in banks_dir.iterdir()):
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    after_names, after, leftovers = _state(home)
    assert after_names == names and leftovers == []
    assert after == before  # the kill came long before the commit
    # And the same import, left alone, completes.
    process = _run(home, snapshot, "victim", True)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    _, replaced, leftovers = _state(home)
    assert len(replaced["units"]) == 1500 and leftovers == []
