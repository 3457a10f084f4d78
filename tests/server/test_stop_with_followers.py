"""Following a bank's changes: a followed `RemoteBank` knows its name without
asking (the studio reads it on its UI thread), a rename anywhere reaches it, and
a server stops promptly while clients follow: their streams end (they follow
again from where they were) instead of holding the shutdown up."""

from __future__ import annotations

import threading

import pytest

from core import Engine, Kind, RemoteEngine
from core.server import ServedBanks, start_server
from tests.server.conftest import TOKEN
from tests.support.embedders import HashEmbedder


@pytest.fixture
def server(tmp_path):
    """A server over a data folder with the bank "Followed", and a client of it."""
    engine = Engine(tmp_path, embedder=HashEmbedder())
    served = ServedBanks(engine, open_on_demand=True)
    engine.create_bank("Followed").close()
    handle = start_server(served, "127.0.0.1", 0, TOKEN)
    remote = RemoteEngine(handle.url, TOKEN, timeout=60)
    try:
        yield handle, remote
    finally:
        handle.stop()
        remote.close()
        served.close()
        engine.close()


@pytest.mark.slow
def test_stopping_ends_the_change_streams_followed(server):
    handle, remote = server
    started, ended = threading.Event(), threading.Event()
    seen = []

    def follow() -> None:
        for event in remote.open_bank("Followed").changes():
            seen.append(event)
            started.set()
        ended.set()

    threading.Thread(target=follow, daemon=True).start()
    assert started.wait(30)
    handle.stop()
    assert ended.wait(10), "the follower's stream outlived the server"
    assert len(seen) == 1 and not seen[0].reset  # the start line, then the end


@pytest.mark.slow
def test_a_followed_bank_keeps_its_name_without_asking_and_hears_a_rename(server):
    _, remote = server
    bank = remote.open_bank("Followed")
    events = bank.changes()
    next(events)  # following
    asked = []
    post = bank._client.post
    bank._client.post = lambda path, body: asked.append(path) or post(path, body)
    assert bank.name == "Followed" and asked == []  # no round trip
    remote.rename_bank("Followed", "Renamed")  # through the server (another client)
    event = next(events)
    assert event.change.touches(Kind.BANK)
    assert bank.name == "Renamed"
    assert [p for p in asked if p.endswith("/call/name")]  # asked once, by the follower
    bank.stop_following()
    assert list(events) == []  # ended at once
