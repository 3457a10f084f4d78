"""An entity is "seen" when a conversation mentions it, not when the event happens."""

from __future__ import annotations

from datetime import datetime


def test_first_and_last_seen_follow_mention_time(bank, tmp_path):
    chat = tmp_path / "plans.txt"
    chat.write_text(
        "## 2025-03-04 09:30\n"
        "Maya: Tomás will move to Berlin next year.\n"
        "Juniper: Noted, I will tell Priya about Berlin.\n"
        "## 2025-04-10 10:00\n"
        "Maya: Berlin is still the plan for Tomás.\n",
        "utf-8",
    )
    bank.ingest(chat, mode="rules")
    [berlin] = [e for e in bank.entities() if e.name == "Berlin"]
    assert berlin.first_seen.date() == datetime(2025, 3, 4).date()
    assert berlin.last_seen.date() == datetime(2025, 4, 10).date()
    # Retracted, it still says when it was seen (the studio showed "seen ? → ?"
    # beside its mention count).
    bank.retract_entity(berlin.id)
    retracted = bank.entity(berlin.id)
    assert (retracted.first_seen, retracted.last_seen) == (berlin.first_seen, berlin.last_seen)
    assert retracted.mention_count == berlin.mention_count
