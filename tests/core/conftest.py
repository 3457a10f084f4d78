"""Fixtures for engine tests: real stores in temporary folders, one real embedder.

The embedding model is loaded once per test session (a few seconds) and
shared by every engine; banks live under pytest's tmp_path.
"""

from __future__ import annotations

import shutil

import pytest

from core import Engine
from core.providers.embedder import Embedder, shared_embedder
from tests.support.curation import build_bank


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


@pytest.fixture(scope="session")
def template(tmp_path_factory, embedder):
    """`build_bank` once per session (embedding and indexing take a second or two,
    and eight modules use it); each test gets a copy of the folder (`built`)."""
    home = tmp_path_factory.mktemp("template")
    with Engine(home, embedder=embedder) as engine:
        bank = engine.create_bank("test")
        b = build_bank(bank)
        folder = bank.folder
    return folder, b


@pytest.fixture
def built(engine, template):
    """(bank, Built): a fresh copy of the template bank, named 'test'."""
    folder, b = template
    shutil.copytree(folder, engine.banks_dir / folder.name)
    return engine.open_bank("test"), b
