"""The activity journal: every operation recorded with who asked and how it went;
a recall with its whole result; bounded; off when the bank says so; and a purge
leaves no trace of what it purged in it."""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import replace
from datetime import timedelta

import duckdb
import pytest

from core import Caller, EngramError, InvalidInputError, Kind, RecallResult, acting_as
from core.journal import JOURNAL_DB
from core.journal.store import Journal
from tests.support.curation import MARKER, folder_contains


def test_operations_are_journaled_with_their_caller_outcome_and_change(built):
    bank, b = built
    [built_by] = bank.activity()  # the template bank's own units, added by the test's builder
    assert (built_by.operation, built_by.summary) == ("add_units", "added 11 units")
    with acting_as(Caller("support-bot (desk)", "mcp")):
        result = bank.recall("Who plays the cello?", budget_tokens=200, count_access=False)
    change = bank.edit_unit(b.units["plain"], text="The weather in Porto was rainy all week.")
    with pytest.raises(InvalidInputError):
        bank.edit_unit(b.units["plain"], text="   ")
    edit_failed, edited, recalled = bank.activity(limit=3)

    assert (recalled.actor, recalled.transport, recalled.kind, recalled.operation) == (
        "support-bot (desk)",
        "mcp",
        "recall",
        "recall",
    )
    assert recalled.outcome == "ok" and recalled.duration_ms > 0
    assert recalled.unit_ids == tuple(result.unit_ids) and recalled.tokens == result.tokens_used
    assert recalled.summary.startswith("“Who plays the cello?” →")
    assert recalled.arguments["query"] == "Who plays the cello?"
    assert recalled.arguments["budget_tokens"] == 200
    # The whole result comes back as the caller got it, its typed trace too.
    again = RecallResult.from_dict(bank.activity_entry(recalled.id).detail)
    assert again.items == result.items and again.tokens_used == result.tokens_used
    assert again.trace.to_dict() == result.trace.to_dict()
    assert bank.recorded_recall(recalled.id).unit_ids == result.unit_ids

    assert (edited.actor, edited.transport, edited.kind) == ("user", "python", "curate")
    assert edited.change == change and b.units["plain"] in edited.change.updated[Kind.UNIT]
    assert edited.summary.startswith("edited “The weather in Lisbon")  # the audit's words
    assert edit_failed.outcome == "error" and "non-empty" in edit_failed.error
    assert edit_failed.change is None

    # Filters and pages.
    assert [e.id for e in bank.activity(kind="recall")] == [recalled.id]
    assert [e.id for e in bank.activity(actor="user")] == [edit_failed.id, edited.id, built_by.id]
    assert [e.id for e in bank.activity(before=edited.id, limit=1)] == [recalled.id]
    assert bank.activity(since=recalled.started_at + timedelta(days=1)) == []
    assert bank.activity_actors() == ["user", "support-bot (desk)"]
    with pytest.raises(InvalidInputError):
        bank.activity(kind="gossip")
    with pytest.raises(EngramError, match="not a recall"):
        bank.recorded_recall(edited.id)


def test_a_call_inside_another_is_part_of_it(built):
    bank, _b = built
    listened = []
    stop = bank.watch_activity(listened.append)
    document = bank.documents()[0]
    bank.reingest_document(document.id, mode="rules")
    stop()
    bank.recall("Alice", count_access=False)  # after stop: not heard
    entry = bank.activity(kind="retain", limit=1)[0]
    assert entry.operation == "reingest_document" and entry.arguments["document_id"] == "doc1"
    assert [e.id for e in listened] == [entry.id]
    assert not bank.activity(operation="ingest")  # the re-ingest's own ingest is part of it


def test_recording_can_be_turned_off_and_the_journal_is_bounded(built):
    bank, b = built
    bank.set_profile(config={"journal.record": False})
    bank.recall("Alice", count_access=False)
    bank.delete_units([b.units["plain"]])
    assert [e.operation for e in bank.activity()] == ["set_profile", "add_units"]
    # Back to the default, on (unrecorded: recording was off when it was asked).
    bank.set_profile(config={"journal.record": None})
    for _ in range(3):
        bank.recall("Who plays the cello?", count_access=False)
    count, size = bank.activity_usage()
    assert count == 5 and size > 0
    journal: Journal = bank.handle.journal
    # Past the age bound: the oldest go.
    with journal._db_lock:
        journal._open().execute(
            "UPDATE activity SET started_at = started_at - INTERVAL 40 DAY WHERE id <= 3"
        )
    assert journal.prune(keep_days=30, keep_mb=0) == 3
    # Past the size bound: the oldest go until it fits.
    recalls = [e for e in bank.activity() if e.kind == "recall"]
    assert len(recalls) == 2
    assert journal.prune(keep_days=0, keep_mb=(recalls[0].size * 1.5) / 2**20) == 1
    assert [e.id for e in bank.activity()] == [recalls[0].id]


def test_a_write_is_committed_before_it_returns(built):
    bank, b = built
    journal: Journal = bank.handle.journal
    bank.hide_units([b.units["plain"]])
    # No flush: the write waited for its entry (a read's is queued).
    assert journal._written == journal._next_id
    bank.close()
    with duckdb.connect(str(bank.folder / JOURNAL_DB), read_only=True) as con:
        assert con.execute("SELECT operation, actor FROM activity ORDER BY id").fetchall() == [
            ("add_units", "user"),
            ("hide_units", "user"),
        ]


def test_a_purge_leaves_nothing_of_the_entity_in_the_journal(built):
    bank, b = built
    marker = b.entities["marker"]
    bank.recall(f"What does {MARKER} play?", count_access=False)
    bank.hide_units([b.units["plain"]])
    bank.rename_entity(marker, f"{MARKER} Senior")
    journal: Journal = bank.handle.journal
    journal.flush()
    assert _journal_text(bank).count(MARKER) >= 2  # positive control
    kept = bank.activity(operation="hide_units")[0]

    bank.purge_entity(marker, confirm=True)

    assert MARKER not in _journal_text(bank)
    assert not any(u in _journal_text(bank) for u in (b.units["m_cello"], b.units["o_music"]))
    bank.close()
    assert folder_contains(bank.folder, MARKER.encode()) == []
    reopened = bank.engine.open_bank("test")
    entries = {e.id: e for e in reopened.activity()}
    assert entries[kept.id].summary == kept.summary  # untouched
    redacted = [e for e in entries.values() if e.redacted]
    # The template's add_units named it too.
    assert {e.operation for e in redacted} == {"recall", "rename_entity", "add_units"}
    assert all(not e.arguments and e.change is None for e in redacted)
    purge = entries[max(entries)]
    assert purge.operation == "purge_entity" and "purged an entity" in purge.summary


def test_a_recall_running_while_a_purge_runs_is_recorded_redacted(tmp_path):
    journal = Journal(tmp_path)
    with journal.operation():  # a recall starts...
        began = time.monotonic()
        with journal.purging(lambda text: "Zorblax" in text):
            pass  # ...a purge runs and ends meanwhile...
        late = journal.record(  # ...and the recall is recorded after it
            _entry("“Where is Zorblax?” → 1 fact"),
            {"items": [{"text": "Zorblax lives in Oslo."}]},
            began=began,
        )
    other = journal.record(_entry("“Where is Alice?” → 1 fact"))
    after = journal.record(_entry("“Where is Zorblax?” → 0 facts"))  # a new one: not purged
    journal.flush()
    assert journal.entry(late.id).redacted and journal.entry(late.id).detail is None
    assert not journal.entry(other.id).redacted
    assert not journal.entry(after.id).redacted
    assert journal._purges == []  # nothing still running began before it: forgotten
    journal.close()


def _entry(summary: str):
    from datetime import datetime

    from core.journal import ActivityEntry

    return ActivityEntry(
        0,
        datetime(2026, 1, 1),
        1.0,
        "bot",
        "http",
        "recall",
        "recall",
        "ok",
        summary,
        arguments={"query": summary},
    )


def _journal_text(bank) -> str:
    with bank.handle.journal._db_lock:
        rows = bank.handle.journal._open().execute("SELECT * FROM activity").fetchall()
    out = []
    for row in rows:
        for value in row:
            if isinstance(value, bytes):
                out.append(zlib.decompress(value).decode())
            elif value is not None:
                out.append(str(value))
    return "\n".join(out)


def test_entries_are_plain_values(built):
    bank, _b = built
    bank.recall("Alice", count_access=False)
    entry = bank.activity(limit=1)[0]
    assert replace(entry, summary="x").summary == "x"
    data = entry.to_dict()
    assert data["kind"] == "recall" and data["id"] == entry.id and "detail" not in data


def test_engram_activity_lists_shows_and_replays(built, capsys):
    from core.cli import main as cli

    bank, b = built
    bank.recall("Who plays the cello?", budget_tokens=60, count_access=False)
    bank.retract_entity(b.entities["marker"])
    bank.close()
    home = ["--home", str(bank.engine.home)]
    assert cli([*home, "--actor", "ops-script", "activity", "test"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "retracted entity 'Zyxquorblat'" in out[0] and " curate " in out[0]
    assert "“Who plays the cello?” →" in out[1] and " recall " in out[1]
    assert cli([*home, "activity", "test", "--kind", "recall", "--since", "1h", "--json"]) == 0
    [recall] = json.loads(capsys.readouterr().out)
    assert recall["operation"] == "recall" and recall["actor"] == "user"
    assert cli([*home, "activity", "test", "--actor", "nobody"]) == 0
    assert "no activity recorded that matches" in capsys.readouterr().out
    assert cli([*home, "activity", "test", "--show", str(recall["id"])]) == 0
    shown = capsys.readouterr().out
    assert "what the caller got" in shown and "-- trace:" in shown and "fused" in shown
    # Replayed after the retract: the retracted facts are gone from the answer.
    assert cli([*home, "activity", "test", "--replay", str(recall["id"]), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    retracted = {b.units[k] for k in ("m_cello", "m_bob", "i_concert", "o_music", "obs_marker")}
    assert b.units["m_cello"] in replayed["lost"]
    assert set(replayed["lost"]) <= retracted and not retracted & set(replayed["gained"])
    # The replay is a recall of its own, by whoever asked for it.
    assert cli([*home, "activity", "test", "--limit", "1", "--json"]) == 0
    [latest] = json.loads(capsys.readouterr().out)
    assert (latest["operation"], latest["actor"], latest["transport"]) == ("recall", "cli", "cli")
    assert cli([*home, "activity", "test", "--show", "999"]) == 1
    assert "no activity entry 999" in capsys.readouterr().err
