"""`engram serve` (no studio) runs the observation rebuilds a request's change
queued, in the background, without `engram jobs run`."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from tests.server.conftest import Served, serving

DEADLINE = 60.0  # seconds; a loaded 2-core machine, polled, never slept out


@pytest.fixture(scope="module")
def headless(tmp_path_factory, embedder) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("headless"), embedder, headless=True, mcp=False) as server:
        yield server


@pytest.fixture
def client(headless) -> Iterator[httpx.Client]:
    with headless.client() as client:
        yield client


def retain(client: httpx.Client, bank_id: str, text: str, document_id: str) -> None:
    client.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()
    item = {
        "content": text,
        "timestamp": "2025-07-31T09:00:00",
        "metadata": {"speaker": "Maya"},
        "strategy": "rules",
        "document_id": document_id,
    }
    r = client.post(f"/v1/default/banks/{bank_id}/memories", json={"items": [item]})
    assert r.status_code == 200, r.text


def pending(client: httpx.Client, bank_id: str) -> int:
    r = client.get(f"/v1/default/banks/{bank_id}/stats")
    assert r.status_code == 200, r.text
    return r.json()["pending_consolidation"]


def wait_rebuilt(client: httpx.Client, bank_id: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while (left := pending(client, bank_id)) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling interval, not a wait for an outcome
    assert left == 0, f"{left} observation job(s) still pending after {DEADLINE:.0f} s"


def observations_of(client: httpx.Client, bank_id: str, name: str) -> list[str]:
    entities = client.get(f"/v1/default/banks/{bank_id}/entities").json()["items"]
    entity = next(e["id"] for e in entities if e["canonical_name"] == name)
    detail = client.get(f"/v1/default/banks/{bank_id}/entities/{entity}").json()
    return [o["text"] for o in detail["observations"]]


def test_an_agents_retain_is_rebuilt_without_jobs_run(client, bank_id):
    retain(client, bank_id, "Dana Whitfield signed the renewal this morning.", "chat-1")
    wait_rebuilt(client, bank_id)
    (observation,) = observations_of(client, bank_id, "Dana Whitfield")
    assert "renewal" in observation


@pytest.mark.slow
def test_a_deleted_document_and_an_edit_leave_the_entity_rebuilt(client, bank_id):
    retain(client, bank_id, "Dana Whitfield signed the renewal this morning.", "chat-1")
    retain(client, bank_id, "Dana Whitfield moved the kickoff to Lisbon.", "chat-2")
    wait_rebuilt(client, bank_id)
    assert "renewal" in observations_of(client, bank_id, "Dana Whitfield")[0]
    r = client.delete(f"/v1/default/banks/{bank_id}/documents/chat-1")
    assert r.status_code == 200, r.text
    wait_rebuilt(client, bank_id)
    (observation,) = observations_of(client, bank_id, "Dana Whitfield")
    assert "Lisbon" in observation and "renewal" not in observation
    # A curation call through Engram's own API.
    found = client.get(f"/v1/default/banks/{bank_id}/memories/list", params={"q": "Lisbon"})
    (unit,) = [u["id"] for u in found.json()["items"] if u["fact_type"] == "world"]
    r = client.patch(
        f"/engram/v1/banks/{bank_id}/units/{unit}",
        json={"text": "Dana Whitfield moved the kickoff to Porto."},
    )
    assert r.status_code == 200, r.text
    wait_rebuilt(client, bank_id)
    (observation,) = observations_of(client, bank_id, "Dana Whitfield")
    assert "Porto" in observation and "Lisbon" not in observation


LOGGER = "core.server.rebuilds"


def logged(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def test_a_model_that_does_not_answer_is_logged_not_silent(headless, client, bank_id, caplog):
    """The rebuild falls back to rules and says why in the server's log."""
    before = headless.engine.settings
    headless.engine.set_settings(
        replace(before, ollama_host="http://127.0.0.1:9", ollama_model="llama3.2")
    )
    try:
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            retain(client, bank_id, "Dana Whitfield signed the renewal.", "chat-1")
            deadline = time.monotonic() + DEADLINE
            while not logged(caplog) and time.monotonic() < deadline:
                time.sleep(0.05)  # polling interval
    finally:
        headless.engine.set_settings(before)
    assert pending(client, bank_id) == 0
    (record,) = logged(caplog)
    assert bank_id in record.getMessage() and "by rules" in record.getMessage()


def test_stopping_waits_for_the_rebuild_and_keeps_what_is_queued(tmp_path, embedder):
    """Stopped right after a retain: the worker ends before the banks close, and
    every job is either done or still queued for the next run."""
    with serving(tmp_path, embedder, headless=True, mcp=False) as server:
        with server.client() as client:
            retain(client, "stopped", "Dana Whitfield signed the renewal.", "chat-1")
        server.handle.stop()
        server.banks.close()
        rebuilds = server.banks.rebuilds
        assert rebuilds is not None and not rebuilds.trigger("stopped")
        bank = server.engine.open_bank("stopped")
        statuses = bank.store.reader().execute("SELECT DISTINCT status FROM jobs").fetchall()
        assert {s for (s,) in statuses} <= {"queued", "done"}
        bank.rebuild_observations()
        assert bank.pending_jobs() == 0
        bank.close()
