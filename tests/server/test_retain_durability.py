"""Nothing acknowledged is lost (issue 27, items 6 and 7); the SIGKILL loops
are in test_server_crash.py.

- Re-retaining a `document_id` with other content replaces it in the one
  transaction that writes the new content: a failure while writing leaves the
  old content (it used to delete first, in a transaction of its own).
- An `"async": true` retain is acknowledged once it is committed to the bank's
  queue; a server stopped before running it leaves it queued, and the next one
  to serve the bank runs it; its status answers across the restart.
"""

from __future__ import annotations

import threading
import time

import pytest

from core import Engine
from tests.server.conftest import serving


def wait_until(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not come true")
        time.sleep(0.05)


def items(document_id: str, *texts: str) -> dict:
    return {
        "items": [
            {"content": t, "document_id": document_id, "strategy": "verbatim"} for t in texts
        ]
    }


def test_a_replace_that_fails_leaves_the_old_content(served, http, bank_id, monkeypatch):
    url = f"/v1/default/banks/{bank_id}/memories"
    http.post(url, json=items("chat", "Zorblax keeps bees.", "Mira bakes bread.")).raise_for_status()
    bank = served.banks.get(bank_id)
    before = sorted(u.text for u in bank.units(limit=None))

    import core.retain.write as write

    def broken(*_args, **_kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(write, "write_links", broken)
    r = http.post(url, json=items("chat", "Zorblax keeps bees.", "Mira bakes bread.", "More."))
    assert r.status_code == 507 and "the rest was not" in r.text, r.text
    monkeypatch.undo()
    assert sorted(u.text for u in bank.units(limit=None)) == before  # the old content stayed
    assert [d.id for d in bank.documents()] == ["chat"]

    # Replaced for real: one document, the new content only, what only the old
    # content named gone with it, and nothing for an undo to bring back.
    r = http.post(url, json=items("chat", "Mira bakes bread.", "Mira sells it on Fridays."))
    r.raise_for_status()
    assert sorted(u.text for u in bank.units(limit=None)) == [
        "Mira bakes bread.",
        "Mira sells it on Fridays.",
    ]
    assert "Zorblax" not in {e.name for e in bank.entities()}
    assert not [a for a in bank.audit() if a.action == "delete_document"]
    assert bank.verify().ok


@pytest.mark.slow
def test_an_acknowledged_async_retain_outlives_its_server(tmp_path, embedder):
    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank("queue")
    ids: list[str] = []
    with serving(home, embedder, headless=True, mcp=False) as served:
        lock = served.banks.lock(served.banks.key_of("queue"))
        lock.acquire()  # a long write: the queue cannot move
        try:
            with served.client() as http:
                for n in range(3):
                    body = {**items(f"note-{n}", f"Queued note {n}."), "async": True}
                    r = http.post("/v1/default/banks/queue/memories", json=body)
                    r.raise_for_status()
                    ids.append(r.json()["operation_id"])
                status = http.get(f"/v1/default/banks/queue/operations/{ids[2]}").json()
                assert status["status"] == "pending"
            # Stop the server while the first waits for the lock: it finishes that
            # one, and the other two stay queued in the bank.
            stopper = threading.Thread(target=served.handle.stop)
            stopper.start()
            operations = served.handle._server.config.app.state.operations
            wait_until(lambda: operations._closed)  # stopping before the queue may move
        finally:
            lock.release()
        stopper.join()
    with Engine(home, embedder=embedder) as engine:
        queued = engine.open_bank("queue").operation_queue.listing()
        assert [q.id for q in queued] == ids
        assert [q.status for q in queued][1:] == ["pending", "pending"]
    # The next server to serve the bank runs them; their ids answer all along.
    with serving(home, embedder, headless=True, mcp=False) as served, served.client() as http:

        def statuses() -> list[str]:
            return [
                http.get(f"/v1/default/banks/queue/operations/{i}").json()["status"] for i in ids
            ]

        wait_until(lambda: statuses() == ["completed"] * 3)
        texts = {u.text for u in served.banks.get("queue").units(limit=None)}
        assert texts == {f"Queued note {n}." for n in range(3)}
        assert not (home / "queued").exists() or not list((home / "queued").iterdir())
