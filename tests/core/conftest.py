"""Fixtures for engine tests: real stores in temporary folders, one real embedder.

The embedding model is loaded once per test session (a few seconds) and
shared by every engine; banks live under pytest's tmp_path.
"""

from __future__ import annotations

import pytest

from core import Engine
from core.providers.embedder import Embedder, shared_embedder


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return shared_embedder()


@pytest.fixture
def engine(tmp_path, embedder) -> Engine:
    with Engine(tmp_path / "home", embedder=embedder) as engine:
        yield engine


@pytest.fixture
def bank(engine):
    return engine.create_bank("test")
