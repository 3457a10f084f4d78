"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.ollama_server import FakeOllama


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A started fake Ollama server on 127.0.0.1; script it with `.script(...)`."""
    with FakeOllama() as server:
        yield server
