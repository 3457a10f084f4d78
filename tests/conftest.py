"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.ollama_server import FakeOllama


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long tests first, so xdist's workers never end on one of them alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    """A started fake Ollama server on 127.0.0.1; script it with `.script(...)`."""
    with FakeOllama() as server:
        yield server
