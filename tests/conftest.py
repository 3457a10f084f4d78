"""Shared pytest fixtures."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.ollama_server import FakeOllama

# Banks are real stores on disk, and every write commits (DuckDB, LanceDB and a
# Tantivy commit of ~20 ms each on a disk, ~10 ms in memory): on a RAM disk the
# suite runs about a fifth faster. It needs room for every test's banks at once.
RAM_DISK = Path("/dev/shm")

# The real-model check (tests/model) runs only under `make test-model`, which
# builds its venv and says where it is; `make test` never collects it.
collect_ignore = [] if os.environ.get("ENGRAM_LLAMA_PYTHON") else ["model"]
RAM_DISK_ROOM = 4 << 30


def pytest_configure(config: pytest.Config) -> None:
    """Test folders on the RAM disk when there is one with room (not when a
    --basetemp is given; xdist's workers get theirs from the controller)."""
    if config.option.basetemp or hasattr(config, "workerinput"):
        return
    try:
        room = shutil.disk_usage(RAM_DISK).free
    except OSError:
        return
    if room >= RAM_DISK_ROOM and os.access(RAM_DISK, os.W_OK):
        # A folder of this run's own: pytest empties a --basetemp when it starts,
        # and another run (a second worktree) may be using the RAM disk too.
        config._engram_ram_root = tempfile.mkdtemp(prefix="engram-tests-", dir=RAM_DISK)
        config.option.basetemp = os.path.join(config._engram_ram_root, "t")


def pytest_unconfigure(config: pytest.Config) -> None:
    root = getattr(config, "_engram_ram_root", None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests first, so xdist's workers never end on one of them alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A started fake Ollama server on 127.0.0.1; script it with `.script(...)`."""
    with FakeOllama() as server:
        yield server
