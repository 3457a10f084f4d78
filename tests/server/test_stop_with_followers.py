"""A server stops promptly while clients follow a bank's changes: their streams
end (they follow again from where they were), instead of holding the shutdown
up until uvicorn's join gives up."""

from __future__ import annotations

import threading

import pytest

from core import Engine, RemoteEngine
from core.server import ServedBanks, start_server
from tests.server.conftest import TOKEN
from tests.support.embedders import HashEmbedder


@pytest.mark.slow
def test_stopping_ends_the_change_streams_followed(tmp_path):
    engine = Engine(tmp_path, embedder=HashEmbedder())
    served = ServedBanks(engine, open_on_demand=True)
    engine.create_bank("Followed").close()
    handle = start_server(served, "127.0.0.1", 0, TOKEN)
    remote = RemoteEngine(handle.url, TOKEN, timeout=60)
    started, ended = threading.Event(), threading.Event()
    seen = []

    def follow() -> None:
        for event in remote.open_bank("Followed").changes():
            seen.append(event)
            started.set()
        ended.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    try:
        assert started.wait(30)
        handle.stop()
        assert ended.wait(10), "the follower's stream outlived the server"
        assert len(seen) == 1 and not seen[0].reset  # the start line, then the end
    finally:
        handle.stop()
        remote.close()
        served.close()
        engine.close()
