"""A memory added by hand, a fact hidden and unhidden, a confidence set by hand,
and a split that takes its alias along (issue 13, items 3–5)."""

from __future__ import annotations

import pytest

from core import EngramError, InvalidInputError, Kind, Network, UnitStatus
from core.cli import main as cli
from tests.support.curation import dump, lexical_ids, table_rows, vector_ids


def _recalled(bank, query):
    return {item.unit_id for item in bank.recall(query, budget_tokens=4096).items}


@pytest.mark.slow
def test_hide_a_fact_hides_what_quotes_it_and_undo_brings_it_back(built):
    bank, b = built
    cello, obs = b.units["m_cello"], b.units["obs_marker"]
    assert cello in _recalled(bank, "who plays the cello every evening")
    change = bank.hide_units([cello])
    assert bank.unit(cello).status == UnitStatus.HIDDEN
    assert bank.unit(obs).status == UnitStatus.STALE  # it quotes the hidden fact
    assert {cello, obs} <= change.ids(Kind.UNIT)
    assert not {cello, obs} & _recalled(bank, "who plays the cello every evening")
    assert cello not in {u.id for u in bank.units(None, limit=None)}
    [entry] = bank.audit(limit=1)
    assert entry.action == "hide_units" and "cello" in entry.summary

    bank.undo()
    assert bank.unit(cello).status == UnitStatus.ACTIVE
    assert cello in _recalled(bank, "who plays the cello every evening")
    bank.process_jobs()  # the stale observation is rebuilt from the facts it has now
    assert bank.observation(b.entities["marker"]).status == UnitStatus.ACTIVE
    assert "cello" in bank.observation(b.entities["marker"]).text


def test_unhide_and_the_errors_that_leave_the_bank_as_it_was(built):
    bank, b = built
    cello = b.units["m_cello"]
    before = dump(bank)
    with pytest.raises(EngramError, match="only a hidden one"):
        bank.unhide_units([cello])
    with pytest.raises(EngramError, match="no unit"):
        bank.hide_units(["nope"])
    assert dump(bank) == before
    bank.hide_units([cello])
    bank.unhide_units([cello])
    assert bank.unit(cello).status == UnitStatus.ACTIVE
    assert [e.action for e in bank.audit(limit=2)] == ["unhide_units", "hide_units"]


def test_an_opinion_formed_from_a_hidden_fact_is_hidden_with_it(built):
    bank, b = built
    office, opinion = b.units["a_office"], b.units["o_alice"]
    with bank.store.transaction() as tx:
        tx.con.execute("UPDATE opinion_events SET evidence_id = ? WHERE id = 'ev9'", [office])
    bank.hide_units([office])
    assert bank.unit(opinion).status == UnitStatus.STALE
    assert opinion not in {u.id for u in bank.opinions()}
    bank.unhide_units([office])
    assert bank.unit(opinion).status == UnitStatus.ACTIVE


def test_add_a_memory_by_hand_indexed_linked_and_undoable(built):
    bank, b = built
    alice = b.entities["alice"]
    units_before = bank.count(None, status=None)
    with pytest.raises(InvalidInputError):
        bank.add_memory("   ")
    with pytest.raises(InvalidInputError, match="only an opinion"):
        bank.add_memory("Alice likes tea.", confidence=0.4)
    assert bank.count(None, status=None) == units_before

    change = bank.add_memory(
        "Alice keeps a bonsai named Quillfeather on her desk.", entity_ids=[alice]
    )
    [unit_id] = change.added[Kind.UNIT]
    unit = bank.unit(unit_id)
    assert unit.extraction_mode.value == "manual" and unit.entity_ids == (alice,)
    assert unit_id in lexical_ids(bank, "Quillfeather")
    assert unit_id in vector_ids(bank, "Alice keeps a bonsai named Quillfeather on her desk.")
    assert table_rows(bank, "SELECT count(*) FROM links WHERE source = ?", [unit_id])[0][0] > 0
    assert unit_id in _recalled(bank, "What does Alice keep on her desk?")
    assert bank.audit(limit=1)[0].action == "add_unit"

    bank.undo()
    assert bank.count(None, status=None) == units_before
    assert unit_id not in lexical_ids(bank, "Quillfeather")
    assert table_rows(bank, "SELECT count(*) FROM links WHERE source = ?", [unit_id])[0][0] == 0
    assert bank.verify().ok


def test_an_opinion_added_by_hand_has_a_formed_event(built):
    bank, _ = built
    change = bank.add_memory(
        "Bob would enjoy a cycling holiday.", network="opinion", confidence=0.4
    )
    [unit_id] = change.added[Kind.UNIT]
    [step] = bank.opinion_history(unit_id).steps
    assert (step.event.relation, step.event.confidence_after) == ("formed", 0.4)


def test_a_confidence_set_by_hand_is_an_opinion_event(built):
    bank, b = built
    opinion = b.units["o_alice"]
    text = bank.unit(opinion).text
    bank.edit_unit(opinion, confidence=0.3)
    # The audit line names the opinion by its text and says how far it moved.
    [entry] = bank.audit(limit=1)
    assert entry.summary == f"edited “{text}”: confidence 0.60 → 0.30", entry.summary
    steps = bank.opinion_history(opinion).steps
    last = steps[-1].event
    assert (last.relation, last.confidence_before, last.confidence_after) == ("edited", 0.6, 0.3)
    assert last.reason == "edited by user"
    assert bank.unit(opinion).confidence == 0.3
    # The timeline agrees with the table.
    assert bank.opinion_history(opinion).steps[-1].event.confidence_after == 0.3
    bank.undo()
    assert bank.unit(opinion).confidence == 0.6
    assert len(bank.opinion_history(opinion).steps) == len(steps) - 1


@pytest.mark.slow
def test_cli_confidence_edit_records_the_event(built, capsys):
    bank, b = built
    opinion = b.units["o_alice"]
    home = str(bank.engine.home)
    bank.close()
    assert cli(["--home", home, "edit", "test", opinion, "--confidence", "0.25"]) == 0
    bank = bank.engine.open_bank("test")
    # The reason names who edited: the CLI's actor, not the engine's direct caller.
    assert bank.opinion_history(opinion).steps[-1].event.reason == "edited by cli"


def test_split_takes_the_alias_it_splits_out(built):
    bank, b = built
    bob = b.entities["bob"]
    assert "Bobby" in bank.entity(bob).aliases
    change = bank.split_entity(bob, [b.units["bob_bike"]], "Bobby")
    [new] = change.added[Kind.ENTITY]
    assert "Bobby" not in bank.entity(bob).aliases
    assert bank.entity(new).name == "Bobby"
    assert b.units["bob_bike"] in {u.id for u in bank.units(Network.WORLD, entity="Bobby")}
    assert b.units["bob_bike"] not in {u.id for u in bank.units(Network.WORLD, entity=bob)}
    bank.undo()
    assert "Bobby" in bank.entity(bob).aliases


@pytest.mark.slow
def test_cli_add_hide_unhide_and_the_rebuilds_a_retract_queues(built, capsys):
    bank, b = built
    engine, home = bank.engine, str(bank.engine.home)
    cello = b.units["m_cello"]
    bank.close()
    args = ["--home", home]
    assert (
        cli([*args, "memories", "add", "test", "Alice bought a tandem.", "--entity", "Alice"]) == 0
    )
    assert "added" in capsys.readouterr().out
    assert cli([*args, "hide", "test", cello]) == 0
    assert "jobs: 1 run" in capsys.readouterr().out  # the marker's observation, rebuilt
    reopened = engine.open_bank("test")
    assert reopened.unit(cello).status == UnitStatus.HIDDEN
    reopened.close()
    assert cli([*args, "unhide", "test", cello, "--no-jobs"]) == 0
    assert cli([*args, "retract", "test", "Bob", "--no-jobs"]) == 0
    out = capsys.readouterr().out
    assert "pending job(s): run `engram jobs run test`" in out
    assert cli([*args, "jobs", "run", "test", "--quiet"]) == 0
    assert "observation(s) rebuilt" in capsys.readouterr().out
    bank = engine.open_bank("test")
    assert bank.pending_jobs() == 0
    assert [u.text for u in bank.units(Network.WORLD, text="tandem")] == ["Alice bought a tandem."]


def test_cli_listing_marks_what_is_not_active_and_the_jobs_hint_pastes_into_a_shell(built, capsys):
    """`memories list --status any` printed a hidden fact like a live one, and the
    pending-jobs hint named 'Demo: Juniper' unquoted (a shell reads two words)."""
    bank, b = built
    engine, home = bank.engine, str(bank.engine.home)
    cello = b.units["m_cello"]
    bank.close()
    engine.rename_bank("test", "Team notes: 2025")
    args = ["--home", home]
    assert cli([*args, "hide", "Team notes: 2025", cello, "--no-jobs"]) == 0
    out = capsys.readouterr().out
    assert "pending job(s): run `engram jobs run 'Team notes: 2025'`" in out
    assert cli([*args, "jobs", "list", "Team notes: 2025"]) == 0
    assert "run `engram jobs run 'Team notes: 2025'`" in capsys.readouterr().out
    assert cli([*args, "memories", "list", "Team notes: 2025", "--status", "any"]) == 0
    lines = capsys.readouterr().out.splitlines()
    [hidden] = [line for line in lines if line.startswith(cello)]
    assert "[hidden] " in hidden
    assert not any("[hidden]" in line for line in lines if not line.startswith(cello))


def test_cli_jobs_whose_model_died_say_they_were_written_by_rules(built, fake_ollama, capsys):
    from tests.fakes.ollama_server import Reply
    from tests.support.reflection import use_fake

    bank, b = built
    engine, home = bank.engine, str(bank.engine.home)
    bank.close()
    use_fake(engine, fake_ollama)
    args = ["--home", home]
    assert cli([*args, "retract", "test", "Bob", "--no-jobs"]) == 0
    capsys.readouterr()
    fake_ollama.script(Reply.dies(shutdown_server=True))
    assert cli([*args, "jobs", "run", "test", "--quiet"]) == 0
    out = capsys.readouterr().out
    # The line said "(llm)" though every profile was written by the rules.
    assert "by rules, the model failed" in out and "not reachable" in out, out


def test_cli_jobs_with_the_model_down_say_why_the_rules_wrote_them(built, capsys):
    from core import EngineSettings
    from tests.fakes.ollama_server import FakeOllama

    with FakeOllama() as server:
        dead = server.url  # nothing listens there once it stopped
    bank, b = built
    engine, home = bank.engine, str(bank.engine.home)
    bank.close()
    engine.set_settings(EngineSettings(ollama_host=dead, ollama_model="llama3.2"))
    args = ["--home", home]
    assert cli([*args, "retract", "test", "Bob", "--no-jobs"]) == 0
    capsys.readouterr()
    assert cli([*args, "jobs", "run", "test", "--quiet"]) == 0
    out = capsys.readouterr().out
    # "(rules)" alone before: the person chose a model and was not told why it was not used.
    assert "(rules); by rules: Ollama not reachable at" in out, out
