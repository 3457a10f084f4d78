"""No client can stall the server (issue 27, items 1-3).

One bank's writes wait for its lock on the event loop, not in a worker thread:
with its lock held (a long retain, the studio's runner) and more writes queued
on it than AnyIO has threads, `/health`, the bank list, recall on another bank
and reads of the busy bank itself still answer; past the queue's bound a
write is refused at once with 503 and Retry-After.
"""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from core import Engine
from tests.server.conftest import TOKEN, serving

QUEUED = 48  # more than AnyIO's 40 worker threads


def wait_until(condition, timeout: float = 120.0, what=lambda: None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"the condition did not come true: {what()}")
        time.sleep(0.02)


@pytest.fixture(scope="module")
def queued_server(tmp_path_factory, embedder):
    with serving(
        tmp_path_factory.mktemp("stall"),
        embedder,
        mcp=False,
        queues={"writes_waiting": QUEUED},
    ) as server:
        with server.client() as http:
            for name in ("busy", "other"):
                http.put(f"/v1/default/banks/{name}", json={}).raise_for_status()
                http.post(
                    f"/v1/default/banks/{name}/memories",
                    json={"items": [{"content": f"{name} keeps bees.", "strategy": "verbatim"}]},
                ).raise_for_status()
        yield server


@pytest.mark.slow
def test_writes_queued_on_a_locked_bank_hold_no_worker(queued_server):
    served = queued_server
    lock = served.banks.lock("busy")
    answers: list[httpx.Response] = []

    def write(n: int) -> None:
        # A write that is cheap once admitted: deleting a document the bank lacks (404).
        with served.client() as http:
            answers.append(http.delete(f"/v1/default/banks/busy/documents/none-{n}"))

    lock.acquire()  # as a long retain, or the studio's runner, holds it
    writers = [threading.Thread(target=write, args=(n,)) for n in range(QUEUED + 3)]
    try:
        for t in writers:
            t.start()
        # QUEUED in line on the event loop (no thread: the lock is held elsewhere),
        # the rest refused at once.
        wait_until(
            lambda: lock.waiting == QUEUED and len(answers) == 3,
            what=lambda: (lock.waiting, [a.status_code for a in answers]),
        )
        refused = [a for a in answers if a.status_code == 503]
        assert len(refused) == 3, [a.status_code for a in answers]
        assert all(int(a.headers["retry-after"]) >= 1 for a in refused)
        assert "busy" in refused[0].json()["detail"]
        with served.client() as http:
            http.timeout = httpx.Timeout(60)
            assert http.get("/health").status_code == 200
            assert http.get("/v1/default/banks").status_code == 200
            other = http.post("/v1/default/banks/other/memories/recall", json={"query": "bees"})
            assert other.status_code == 200
            # Reads of the busy bank do not queue behind its writes, routed ones included.
            mine = http.post("/v1/default/banks/busy/memories/recall", json={"query": "bees"})
            assert mine.status_code == 200 and mine.json()["results"]
            routed = http.post("/engram/v1/banks/busy/call/count", json={"args": []})
            assert routed.status_code == 200 and routed.json()["value"] == 1
    finally:
        lock.release()
        for t in writers:
            t.join()
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [404] * QUEUED + [503] * 3
    # The last answer may reach its client just before its request lets go.
    wait_until(lambda: lock.waiting == 0 and not lock.locked)


@pytest.mark.slow
def test_a_write_whose_client_left_leaves_the_queue(queued_server):
    """A queued write whose client gave up does not run later, nor hold its place."""
    served = queued_server
    lock = served.banks.lock("other")
    lock.acquire()
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                served.url + "/v1/default/banks/other/memories",
                json={"items": [{"content": "Written after all?", "strategy": "verbatim"}]},
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=1.0,
            )
        wait_until(lambda: lock.waiting == 0)
    finally:
        lock.release()
    bank = served.banks.get("other")
    assert "Written after all?" not in {u.text for u in bank.units(limit=None)}


# -- item 3: every request's time is bounded, and work stops when its client leaves --


def _slow_llm_server(tmp_path, embedder, fake_ollama, **options):
    """A headless server whose model takes a second per chunk (the fake Ollama)."""
    from core import EngineSettings
    from tests.core.test_retain_llm import Script, kind_of
    from tests.fakes.ollama_server import Reply

    script = Script()

    def slow(body):
        reply = script(body)
        return Reply.json(reply, delay=1.0) if isinstance(reply, dict) else reply

    fake_ollama.responder = slow
    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.set_settings(
            EngineSettings(ollama_host=fake_ollama.url, ollama_model=fake_ollama.models[0])
        )
        engine.create_bank("slow")

    def extractions() -> int:
        return sum(kind_of(b) == "extract" for b in fake_ollama.chat_requests)

    return serving(home, embedder, headless=True, mcp=False, **options), extractions


def _three_days() -> dict:
    """One document, three sessions (three chunks), each asked of the model."""
    return {
        "items": [
            {
                "content": text,
                "document_id": "three-days",
                "timestamp": f"2024-03-0{day}T10:00:00Z",
                "metadata": {"speaker": "Alice"},
                "strategy": "llm",
            }
            for day, text in (
                (1, "I love hiking in Yosemite every spring."),
                (2, "My sister Priya moved to Lisbon for Northwind."),
                (3, "Priya got promoted at Northwind yesterday."),
            )
        ]
    }


@pytest.mark.slow
def test_a_request_past_its_time_bound_stops_between_chunks(tmp_path, embedder, fake_ollama):
    server, extractions = _slow_llm_server(tmp_path, embedder, fake_ollama, request_timeout=1.5)
    with server as served, served.client() as http:
        r = http.post("/v1/default/banks/slow/memories", json=_three_days())
        assert r.status_code == 504, r.text
        assert "time bound of 1.5 s" in r.json()["detail"]
        assert extractions() < 3  # it stopped: the third session was never asked
        bank = served.banks.get("slow")
        assert bank.documents() == [] and bank.count(status=None) == 0


@pytest.mark.slow
def test_work_whose_client_left_stops_between_chunks(tmp_path, embedder, fake_ollama):
    server, extractions = _slow_llm_server(tmp_path, embedder, fake_ollama)
    with server as served:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                served.url + "/v1/default/banks/slow/memories",
                json=_three_days(),
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=0.5,
            )
        lock = served.banks.lock("slow")
        # Started (it asked the model server something), then done with the bank.
        wait_until(
            lambda: fake_ollama.requests and not lock.locked,
            what=lambda: (len(fake_ollama.requests), lock.locked, lock.waiting),
        )
        assert extractions() < 3, "the retain went on for a client that had left"
        bank = served.banks.get("slow")
        assert bank.documents() == [] and bank.count(status=None) == 0


# -- item 2: a request that stops arriving holds nothing for long --------------------


def _stalled(url: str, head: bytes) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=60)
    s.sendall(head)
    return s


def _reply(s: socket.socket) -> bytes:
    """What the server sent before it closed the connection."""
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    return data


@pytest.mark.slow
def test_a_body_that_stops_arriving_is_408_and_holds_no_lock(tmp_path, embedder):
    options = {"mcp": False, "read_timeout": 1.0, "head_timeout": 1.0}
    with serving(tmp_path, embedder, **options) as served, served.client() as http:
        http.put("/v1/default/banks/b", json={}).raise_for_status()
        body = b'{"items": [{"content": "Never finished.", "strategy": "verbatim"}]}'
        stalled = _stalled(
            served.url,
            b"POST /v1/default/banks/b/memories HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:20],
        )
        half_head = _stalled(served.url, b"POST /v1/default/banks/b/memories HTTP/1.1\r\n")
        # The bank is not held by the stalled request: a write goes through meanwhile.
        done = {"items": [{"content": "Written meanwhile.", "strategy": "verbatim"}]}
        assert http.post("/v1/default/banks/b/memories", json=done).status_code == 200
        answer = _reply(stalled)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"stopped arriving for 1 s" in answer
        # And a head that never ends is closed by the server (recv times out otherwise).
        assert not _reply(half_head).startswith(b"HTTP/1.1 2")
        half_head.close()
        stalled.close()
        texts = {u.text for u in served.banks.get("b").units(limit=None)}
        assert texts == {"Written meanwhile."}
