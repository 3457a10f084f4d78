"""A real server on 127.0.0.1 (port 0) over real banks, one per test module.

Tests use their own bank names, so they share the module's server; the
embedding model is loaded once per session.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from core import Change, Engine
from core.providers.embedder import Embedder, shared_embedder
from core.server import ServedBanks, ServerHandle, TokenRing, start_server

TOKEN = "test-token-" + "x" * 20


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return shared_embedder()


@dataclass
class Served:
    engine: Engine
    banks: ServedBanks
    handle: ServerHandle
    changes: list[tuple[str, Change]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.handle.url

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


@contextmanager
def serving(
    home: Path,
    embedder: Embedder,
    *,
    headless: bool = False,
    tokens: str | TokenRing = TOKEN,
    **options,
) -> Iterator[Served]:
    """A server over the banks in `home`; `headless` as `engram serve` builds it
    (no owner hears the changes), else the changes are recorded as the studio hears
    them. `tokens`: the one token it accepts, or a ring (named tokens too)."""
    engine = Engine(home, embedder=embedder)
    changes: list[tuple[str, Change]] = []
    on_change = None if headless else lambda n, c: changes.append((n, c))
    banks = ServedBanks(engine, open_on_demand=True, on_change=on_change)
    handle = start_server(banks, "127.0.0.1", 0, tokens, **options)
    try:
        yield Served(engine, banks, handle, changes)
    finally:
        handle.stop()
        banks.close()
        engine.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("home"), embedder) as server:
        yield server


@pytest.fixture
def http(served) -> Iterator[httpx.Client]:
    with served.client() as client:
        yield client


@pytest.fixture
def bank_id() -> str:
    return f"bank-{uuid.uuid4().hex[:8]}"
