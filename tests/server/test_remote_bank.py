"""`RemoteBank` and `RemoteEngine` over a real server on 127.0.0.1: the same
answers as the bank itself, writes announced and followed, long operations with
their progress and cancel crossing the wire, snapshots streamed both ways, and
reads that never wait for the bank's write lock."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from core import CancelledError, CancelToken, Kind, RemoteEngine
from tests.server.conftest import TOKEN

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def remote(served):
    served.engine.create_bank("remote").ingest(DEMO / "01-march-kickoff.txt", mode="rules")
    with RemoteEngine(served.url, TOKEN, timeout=60) as engine:
        yield engine


@pytest.fixture
def bank(remote):
    return remote.open_bank("remote")


@pytest.fixture
def local(served):
    return served.banks.get("remote")


def test_reads_answer_what_the_bank_itself_answers(bank, local):
    assert bank.units(limit=20) == local.units(limit=20)
    assert bank.count() == local.count() and bank.stats() == local.stats()
    assert bank.documents() == local.documents() and bank.entities() == local.entities()
    assert bank.config == local.config and bank.profile() == local.profile()
    unit = local.units(limit=1)[0]
    assert bank.provenance(unit.id) == local.provenance(unit.id)
    assert bank.links(unit.id) == local.links(unit.id)
    # The studio's coarse reads: a fact's conversation, a graph neighbourhood.
    context = bank.unit_context(unit.id)
    assert context == local.unit_context(unit.id) and context.turns
    around = bank.subgraph([unit.id], hops=2, context=5)
    assert around == local.subgraph([unit.id], hops=2, context=5) and around.links
    result = bank.recall("Where did Maya move?", count_access=False)
    assert result.items == local.recall("Where did Maya move?", count_access=False).items


def test_a_write_returns_its_change_and_reaches_the_owner_and_its_followers(bank, served):
    follower = bank.changes()
    start = next(follower)  # where the stream starts: nothing changed yet
    assert start.change.empty and not start.reset
    change = bank.add_memory("Maya keeps a lemon tree on her balcony.")
    [unit_id] = change.added[Kind.UNIT]
    event = next(follower)
    assert event.change == change and event.seq == start.seq + 1
    assert ("remote", change) in served.changes
    assert bank.unit(unit_id).text == "Maya keeps a lemon tree on her balcony."
    # A follower that reconnects after the last event it saw misses nothing.
    bank.hide_units([unit_id])
    resumed = bank.changes(after=event.seq, epoch=event.epoch)
    next(resumed)
    assert next(resumed).change.updated.get(Kind.UNIT) == frozenset({unit_id})
    # One from another run of the server (another epoch) is told to reload.
    stale = next(bank.changes(after=event.seq, epoch="another-run"))
    assert stale.reset
    assert bank.undo().touches(Kind.UNIT)


def test_an_ingest_streams_its_progress_and_a_cancel_rolls_it_back(bank, local):
    before = (local.count(status=None), [d.id for d in local.documents()])
    token = CancelToken()
    seen: list[tuple] = []

    def progress(done, total, message):
        seen.append((done, total, message))
        token.cancel()  # at the first report: the owner stops at its next check

    with pytest.raises(CancelledError):
        bank.ingest(DEMO / "04-may-rotterdam.txt", mode="rules", progress=progress, cancel=token)
    assert seen, "no progress crossed the wire"
    assert (local.count(status=None), [d.id for d in local.documents()]) == before
    reports: list[tuple] = []
    report = bank.ingest(
        DEMO / "04-may-rotterdam.txt", mode="rules", progress=lambda *a: reports.append(a)
    )
    assert report.documents_ingested == 1 and report.facts_total > 0
    assert reports and reports[-1][0] == reports[-1][1]  # the last report is the end
    assert len(local.documents()) == len(before[1]) + 1


def test_snapshots_stream_down_and_up(bank, remote, tmp_path, served):
    target = tmp_path / "copy.engram"
    steps: list[tuple] = []
    manifest = bank.export_snapshot(target, progress=lambda *a: steps.append(a))
    assert target.is_file() and manifest.counts["units"] == bank.count(status=None)
    assert any(message == "downloading" for *_, message in steps)
    # The export is recorded where this client has it, not in the owner's temp folder.
    assert any(e.path == str(target.resolve()) and e.exists for e in bank.exports())
    uploaded = remote.import_snapshot(target, "remote copy", progress=lambda *a: None)
    assert (
        uploaded.name == "remote copy" and uploaded.count(status=None) == manifest.counts["units"]
    )
    assert "remote copy" in [b.name for b in remote.banks()]
    assert remote.delete_bank("remote copy").touches(Kind.BANK)


def test_reads_never_wait_for_the_write_lock(bank, served):
    """The write lock serialises writes; a read runs beside one holding it."""
    done = threading.Event()
    with served.banks.lock("remote"):
        assert bank.count() > 0  # would wait for the lock (and time out) if it took it
        writer = threading.Thread(
            target=lambda: (bank.add_memory("Written once the lock is free."), done.set())
        )
        writer.start()
        assert bank.units(limit=1)
        assert not done.is_set()  # the write waits for the lock the test holds
    writer.join(60)
    assert done.is_set()


def test_engine_errors_come_back_as_themselves(bank, remote):
    from core import BankNotFoundError, EngramError

    with pytest.raises(BankNotFoundError):
        remote.open_bank("no such bank")
    with pytest.raises(EngramError, match="no unit 'nope'"):
        bank.unit("nope")
    with pytest.raises(EngramError, match="no unit 'nope'"):
        bank.unit_context("nope")


def test_the_activity_journal_reads_and_follows_over_the_wire(bank, local, served):
    """What a remote studio's Activity pane reads: the journal's pages, one entry with
    its recorded trace, a replay, and the live stream — each entry once, in order."""
    import queue

    heard: queue.Queue = queue.Queue()
    stop = bank.watch_activity(heard.put)
    try:
        with served.client() as http:  # an agent, on the owner's HTTP
            body = {"query": "Who is Tomás's buddy?", "max_tokens": 300}
            http.post("/v1/default/banks/remote/memories/recall", json=body).raise_for_status()
        # The stream may open after the recall was recorded: wait for an entry of it.
        entry = heard.get(timeout=30)
        while entry.operation != "recall":
            entry = heard.get(timeout=30)
        assert entry.summary.startswith("“Who is Tomás's buddy?”") and entry.unit_ids
        change = local.add_memory("Tomás's buddy is Leo.")
        added = heard.get(timeout=30)
        assert added.id > entry.id and added.change == change
    finally:
        stop()
    assert [e.id for e in bank.activity(limit=5)] == [e.id for e in local.activity(limit=5)]
    recorded = bank.recorded_recall(entry.id)
    assert recorded.unit_ids == list(entry.unit_ids)
    assert recorded.trace.query == "Who is Tomás's buddy?"
    replayed = bank.replay_recall(entry.id)
    assert replayed.entry_id == entry.id and replayed.tokens_before == entry.tokens
    # Stopped: nothing more is heard.
    local.add_memory("Leo starts on Monday.")
    local.activity(limit=1)  # (written: a listener would have been told by now)
    assert heard.empty()
