"""Each curation action's effect on DuckDB, LanceDB and Tantivy."""

from __future__ import annotations

from datetime import datetime

import pytest

from core import EngramError, InvalidInputError, Kind, Network
from core.cli import main as cli
from tests.support.curation import (
    MARKER,
    add_entity,
    lexical_ids,
    table_rows,
    vector_ids,
)
from tests.support.terminal import at_a_terminal


def _links_of(bank, unit_id, kind=None):
    sql = "SELECT source, target, kind, entity_id FROM links WHERE (source = ? OR target = ?)"
    params = [unit_id, unit_id]
    if kind:
        sql += " AND kind = ?"
        params.append(kind)
    return table_rows(bank, sql, params)


def _queued(bank, entity_id) -> bool:
    return bool(
        table_rows(
            bank,
            "SELECT 1 FROM jobs WHERE kind = 'observation' AND target = ? AND status = 'queued'",
            [entity_id],
        )
    )


@pytest.mark.slow
def test_edit_text_reembeds_reindexes_and_relinks(built):
    bank, b = built
    unit_id = b.units["plain"]
    before_vector = table_rows(bank, "SELECT vector FROM units WHERE id = ?", [unit_id])[0][0]
    change = bank.edit_unit(unit_id, text="Alice hiked the volcano trails of Madeira.")
    assert unit_id in change.updated[Kind.UNIT]
    row = table_rows(bank, "SELECT text, vector FROM units WHERE id = ?", [unit_id])[0]
    assert row[0] == "Alice hiked the volcano trails of Madeira."
    assert row[1] != before_vector
    assert unit_id in lexical_ids(bank, "volcano Madeira")
    assert unit_id not in lexical_ids(bank, "Lisbon")
    assert vector_ids(bank, "hiking on a volcano island", k=1) == [unit_id]
    assert bank.verify().ok
    [entry] = bank.audit(limit=1)
    assert (entry.action, entry.actor, entry.target) == ("edit_unit", "user", unit_id)
    assert entry.before["text"].startswith("The weather in Lisbon")
    assert entry.after["text"].startswith("Alice hiked")


def test_edit_entities_time_and_network(built):
    bank, b = built
    unit_id, alice, google = b.units["bob_bike"], b.entities["alice"], b.entities["google"]
    assert not _links_of(bank, unit_id, "entity") or all(
        e == b.entities["bob"] for *_, e in _links_of(bank, unit_id, "entity")
    )
    change = bank.edit_unit(
        unit_id,
        network="experience",
        occurred_start=datetime(2024, 3, 1, 9, 30),
        occurred_end=datetime(2024, 3, 1, 10, 0),
        entity_ids=[alice, google],
    )
    assert change.touches(Kind.UNIT)
    unit = bank.unit(unit_id)
    assert unit.network == Network.EXPERIENCE
    assert set(unit.entity_ids) == {alice, google}
    assert unit.occurred_start == datetime(2024, 3, 1, 9, 30)
    entity_links = _links_of(bank, unit_id, "entity")
    # Re-linked through the new entities, both directions, nothing through Bob any more.
    assert {e for *_, e in entity_links} == {alice, google}
    assert (unit_id, b.units["a_google"], "entity", google) in entity_links
    assert (b.units["a_google"], unit_id, "entity", google) in entity_links
    temporal = {t for s, t, k, _ in _links_of(bank, unit_id, "temporal") if s == unit_id}
    assert b.units["a_google"] in temporal  # now 30 minutes apart
    for entity in (alice, google, b.entities["bob"]):
        assert _queued(bank, entity)
    assert bank.verify().ok


def test_edit_validation_leaves_bank_unchanged(built):
    bank, b = built
    unit_id = b.units["plain"]
    with pytest.raises(InvalidInputError):
        bank.edit_unit(unit_id, text="   ")
    with pytest.raises(InvalidInputError):
        bank.edit_unit(unit_id, confidence=1.5)
    with pytest.raises(InvalidInputError):
        bank.edit_unit(unit_id, network="dream")
    with pytest.raises(InvalidInputError):
        bank.edit_unit(
            unit_id, occurred_start=datetime(2025, 1, 2), occurred_end=datetime(2025, 1, 1)
        )
    with pytest.raises(EngramError):
        bank.edit_unit(unit_id, entity_ids=["no-such-entity"])
    assert bank.edit_unit(unit_id, text="The weather in Lisbon was sunny all week.").empty
    assert bank.audit() == []


def test_delete_units_takes_links_mentions_events_and_observation_rows(built):
    bank, b = built
    opinion, cello = b.units["o_music"], b.units["m_cello"]
    change = bank.delete_units([opinion, cello, "not-a-unit"])
    assert change.removed[Kind.UNIT] == {opinion, cello}
    for table, column in (
        ("units", "id"),
        ("mentions", "unit_id"),
        ("links", "source"),
        ("links", "target"),
        ("opinion_events", "opinion_id"),
        ("observation_sources", "unit_id"),
    ):
        assert not table_rows(
            bank, f"SELECT 1 FROM {table} WHERE {column} IN (?, ?)", [opinion, cello]
        ), table
    assert opinion not in vector_ids(bank, "gifted musician")
    assert cello not in lexical_ids(bank, "cello")
    assert bank.verify().ok
    assert _queued(bank, b.entities["marker"])
    assert bank.audit(limit=1)[0].before["count"] == 2


def test_rename_keeps_old_name_as_alias(built):
    bank, b = built
    bob = b.entities["bob"]
    bank.rename_entity(bob, "Robert")
    entity = bank.entity(bob)
    assert entity.name == "Robert"
    assert set(entity.aliases) == {"Bobby", "Bob"}
    assert bank.units(entity="Bob", limit=None)  # the alias still finds his units
    bank.rename_entity(bob, "Rob", keep_alias=False)
    assert "Robert" not in bank.entity(bob).aliases
    with pytest.raises(EngramError, match="merge"):
        bank.rename_entity(bob, "alice")
    with pytest.raises(InvalidInputError):
        bank.rename_entity(bob, "  ")
    assert _queued(bank, bob)


def test_merge_moves_mentions_links_opinions_and_observations(built):
    bank, b = built
    marker, bob = b.entities["marker"], b.entities["bob"]
    marker_units = set(
        b.units[k] for k in ("m_cello", "m_bob", "i_concert", "o_music", "obs_marker")
    )
    change = bank.merge_entities(marker, bob)
    assert change.removed[Kind.ENTITY] == {marker}
    assert not table_rows(bank, "SELECT 1 FROM entities WHERE id = ?", [marker])
    assert not table_rows(bank, "SELECT 1 FROM mentions WHERE entity_id = ?", [marker])
    assert not table_rows(bank, "SELECT 1 FROM links WHERE entity_id = ?", [marker])
    bob_units = {
        r[0] for r in table_rows(bank, "SELECT unit_id FROM mentions WHERE entity_id = ?", [bob])
    }
    assert marker_units <= bob_units
    # m_bob mentioned both: one mention of Bob left, not two.
    assert table_rows(
        bank,
        "SELECT count(*) FROM mentions WHERE unit_id = ? AND entity_id = ?",
        [b.units["m_bob"], bob],
    ) == [(1,)]
    # The opinion follows (found through Bob now) and so does the observation row.
    assert b.units["o_music"] in {u.id for u in bank.units(entity=bob, network="opinion")}
    assert table_rows(bank, "SELECT unit_id FROM observations WHERE entity_id = ?", [bob]) == [
        (b.units["obs_marker"],)
    ]
    # New entity links join the former marker facts to Bob's own facts.
    assert (b.units["m_cello"], b.units["bob_bike"], "entity", bob) in _links_of(
        bank, b.units["m_cello"], "entity"
    )
    dupes = table_rows(
        bank,
        "SELECT source, target, kind, entity_id, count(*) FROM links GROUP BY ALL HAVING count(*) > 1",
    )
    assert dupes == []
    entity = bank.entity(bob)
    assert MARKER in entity.aliases and f"{MARKER} Jr" in entity.aliases
    assert _queued(bank, bob)
    assert bank.verify().ok


def test_merge_when_both_have_observations_keeps_one(built):
    bank, b = built
    marker, bob = b.entities["marker"], b.entities["bob"]
    with bank.store.transaction() as tx:
        tx.con.execute(
            "INSERT INTO observations VALUES (?, ?, 'rules', '', now())", [bob, b.units["bob_bike"]]
        )
    bank.merge_entities(marker, bob)
    assert not table_rows(bank, "SELECT 1 FROM units WHERE id = ?", [b.units["obs_marker"]])
    assert b.units["obs_marker"] not in vector_ids(bank, "cellist friend of Bob")
    assert table_rows(bank, "SELECT entity_id FROM observations") == [(bob,)]
    assert bank.verify().ok


def test_merge_refusals(built):
    bank, b = built
    with pytest.raises(InvalidInputError):
        bank.merge_entities(b.entities["bob"], b.entities["bob"])
    with pytest.raises(EngramError):
        bank.merge_entities("nope", b.entities["bob"])
    bank.retract_entity(b.entities["alice"])
    with pytest.raises(EngramError, match="restore"):
        bank.merge_entities(b.entities["alice"], b.entities["bob"])


@pytest.mark.slow
def test_split_moves_chosen_mentions_to_a_new_entity(built):
    bank, b = built
    marker = b.entities["marker"]
    moved = [b.units["m_cello"], b.units["o_music"]]
    change = bank.split_entity(marker, moved, "Marcel", type="person")
    [fresh] = change.added[Kind.ENTITY]
    assert bank.entity(fresh).name == "Marcel"
    assert {u.id for u in bank.units(entity=fresh, status=None, limit=None)} == set(moved)
    assert set(moved).isdisjoint(u.id for u in bank.units(entity=marker, status=None, limit=None))
    # No entity link through the old entity joins a moved unit any more.
    for unit_id in moved:
        assert all(e != marker for *_, e in _links_of(bank, unit_id, "entity"))
    assert _queued(bank, marker) and _queued(bank, fresh)
    with pytest.raises(InvalidInputError, match="does not mention"):
        bank.split_entity(marker, [b.units["plain"]], "X")
    with pytest.raises(InvalidInputError):
        bank.split_entity(marker, [], "X")
    assert bank.verify().ok


def test_retract_preview_counts(built):
    bank, b = built
    preview = bank.retract_preview(b.entities["marker"])
    assert (preview.units, preview.opinions, preview.observations) == (3, 1, 1)
    assert preview.source_turns == 2  # t2 and t3
    assert preview.opinion_events == 2
    units = list(preview.unit_ids)
    expected_links = table_rows(
        bank,
        "SELECT count(*) FROM links WHERE source IN (SELECT unnest(?)) OR target IN"
        " (SELECT unnest(?)) OR entity_id = ?",
        [units, units, b.entities["marker"]],
    )[0][0]
    assert preview.links == expected_links
    assert preview.links > 0
    assert preview.turns_to_redact == 2 and preview.units_to_redact == 1
    assert bank.audit() == []  # a preview changes nothing


def test_soft_retract_hides_everything_derived_and_restore_brings_it_back(built):
    bank, b = built
    marker = b.entities["marker"]
    derived = {b.units[k] for k in ("m_cello", "m_bob", "i_concert", "o_music", "obs_marker")}
    before = table_rows(bank, "SELECT id, status FROM units ORDER BY id")
    hits_before = vector_ids(bank, "cello musician", k=20)
    assert derived & set(hits_before)
    change = bank.retract_entity(marker)
    assert change.updated[Kind.UNIT] == derived
    assert bank.entity(marker).status == "retracted"
    statuses = dict(table_rows(bank, "SELECT id, status FROM units"))
    assert {u for u, s in statuses.items() if s == "retracted"} == derived
    # LanceDB's status column followed: the recall filter drops them before ranking.
    active = vector_ids(bank, "cello musician", k=20, where="status = 'active'")
    assert derived.isdisjoint(active) and active
    assert derived.isdisjoint(i.unit_id for i in bank.recall("Who plays the cello?").items)
    assert derived.isdisjoint(u.id for u in bank.units(limit=None))  # default views
    # Bob's observation should be regenerated without the hidden facts.
    assert _queued(bank, b.entities["bob"])
    with pytest.raises(EngramError, match="already"):
        bank.retract_entity(marker)
    bank.restore_entity(marker)
    assert table_rows(bank, "SELECT id, status FROM units ORDER BY id") == before
    assert set(
        vector_ids(bank, "cello musician", k=20, where="status = 'active'")
    ) >= derived & set(hits_before)
    assert bank.verify().ok


def test_restore_keeps_units_another_retraction_hides(built):
    bank, b = built
    bank.retract_entity(b.entities["marker"])
    bank.retract_entity(b.entities["bob"])
    bank.restore_entity(b.entities["marker"])
    status = dict(table_rows(bank, "SELECT id, status FROM units"))
    assert status[b.units["m_cello"]] == "active"
    assert status[b.units["m_bob"]] == "retracted"  # Bob is still retracted
    with pytest.raises(EngramError, match="not retracted"):
        bank.restore_entity(b.entities["marker"])


@pytest.mark.slow
def test_cli_curation_commands(built, engine, capsys, monkeypatch):
    bank, b = built
    home = ["--home", str(engine.home)]
    bank.close()
    assert cli([*home, "rename-entity", "test", "Bob", "Robert"]) == 0
    assert cli([*home, "retract", "test", MARKER, "--preview"]) == 0
    assert "3 fact(s), 1 opinion(s)" in capsys.readouterr().out
    assert (
        cli(
            [
                *home,
                "edit",
                "test",
                b.units["plain"],
                "--confidence",
                "none",
                "--text",
                "Rainy Porto.",
            ]
        )
        == 0
    )
    assert cli([*home, "merge", "test", "Alice", "Robert", "--actor", "nightly-tidy"]) == 0
    assert cli([*home, "undo", "test"]) == 0
    assert cli([*home, "audit", "test"]) == 0
    out = capsys.readouterr().out
    assert "merged entity 'Alice' into 'Robert' (undone)" in out
    # Who did each: the script that named itself, else the CLI.
    merged = next(line for line in out.splitlines() if "merged entity" in line)
    assert "nightly-tidy" in merged
    assert any(" cli " in line and "renamed entity" in line for line in out.splitlines())
    assert "renamed entity 'Bob' to 'Robert'" in out
    at_a_terminal(monkeypatch, "google")  # not the exact name
    assert cli([*home, "purge", "test", "Google"]) == 1
    assert "cannot be undone" in capsys.readouterr().out.lower()
    at_a_terminal(monkeypatch, "Google")
    assert cli([*home, "purge", "test", "Google"]) == 0
    assert cli([*home, "retract", "test", "Google"]) == 1
    assert cli([*home, "rename-entity", "test", "Nobody", "X"]) == 1
    assert "no entity 'Nobody'" in capsys.readouterr().err


def test_new_entity_helper(bank):
    entity_id = add_entity(bank, "Carol")
    assert bank.entity(entity_id).name == "Carol"
