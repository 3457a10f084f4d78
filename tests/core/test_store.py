"""The bank store: three stores behind one unit of work, on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime

import numpy as np
import pytest

from core import (
    BankExistsError,
    BankLockedError,
    BankNotFoundError,
    Disposition,
    EmbeddingMismatchError,
    Engine,
    InvalidInputError,
    Kind,
    Network,
    NewUnit,
)
from core.store.schema import SCHEMA_VERSION

HOSTILE = [
    "'; DROP TABLE units; --",
    'he said "hello',
    "AND OR NOT",
    "( ) : * ~ ^ [ ] { } !",
    "title:alice",
    "alice~2 bob^3",
    "\\ % _ %_%",
    "\x00 nul",
    "",
    "   ",
    "ünïcødé ☃ 日本語",
]


def test_add_read_edit_delete_keep_three_stores_in_step(bank, embedder):
    change = bank.add_units(
        [
            NewUnit("Alice works at Google", Network.WORLD, occurred_start=datetime(2023, 5, 1)),
            NewUnit("I recommended Yosemite to Alice", Network.EXPERIENCE),
            NewUnit("Alice probably prefers hiking", Network.OPINION, confidence=0.6),
        ]
    )
    ids = sorted(change.added[Kind.UNIT])
    assert len(ids) == 3
    assert bank.count() == 3 and bank.count(Network.OPINION) == 1
    assert bank.verify().ok

    google = bank.units(text="google")[0]
    assert bank.store.lexical.search("google", 5)[0].id == google.id
    hits = bank.store.vectors.search(embedder.embed_one("where does Alice work"), 1)
    assert hits[0].id == google.id

    edit = bank.edit_unit(google.id, text="Alice works at DeepMind")
    assert edit.updated[Kind.UNIT] == {google.id}
    assert bank.unit(google.id).text == "Alice works at DeepMind"
    assert bank.store.lexical.search("google", 5) == []
    assert bank.store.lexical.search("deepmind", 5)[0].id == google.id

    removed = bank.delete_units([google.id, "no-such-unit"])
    assert removed.removed[Kind.UNIT] == {google.id}
    assert bank.count() == 2
    assert bank.store.lexical.search("deepmind", 5) == []
    assert google.id not in {h.id for h in bank.store.vectors.search(embedder.embed_one("x"), 10)}
    assert bank.verify().ok


def test_precomputed_vectors_are_stored_as_given(bank):
    vector = np.zeros(384, dtype=np.float32)
    vector[7] = 1.0
    bank.add_units([NewUnit("a unit with its own vector", vector=tuple(vector))])
    hit = bank.store.vectors.search(vector, 1)[0]
    assert hit.similarity == pytest.approx(1.0, abs=1e-5)


def test_invalid_units_are_refused_and_nothing_is_written(bank):
    for bad in (NewUnit("   "), NewUnit("x" * 20_001), NewUnit("ok", confidence=1.5)):
        with pytest.raises(InvalidInputError):
            bank.add_units([NewUnit("fine"), bad])
    with pytest.raises(InvalidInputError):
        bank.add_units([NewUnit("short vector", vector=(1.0, 0.0))])
    assert bank.count() == 0 and bank.verify().ok


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_text_in_every_filter_and_search(bank, embedder, hostile):
    bank.add_units([NewUnit(f"note: {hostile} end", Network.WORLD), NewUnit("plain fact")])
    # Filters and searches take the text literally and never raise.
    matches = bank.units(text=hostile)
    assert all(hostile.lower() in u.text.lower() for u in matches)
    if hostile.strip() and "\x00" not in hostile:
        assert len(matches) == 1
    assert bank.units(entity=hostile) == []
    assert bank.count(network=[hostile]) == 0
    bank.store.lexical.search(hostile, 10)
    bank.store.lexical.search(hostile, 10, networks=[hostile])
    assert bank.count() == 2  # DROP TABLE did nothing


def test_bm25_treats_query_syntax_as_words(bank):
    bank.add_units([NewUnit("Alice and Bob went hiking"), NewUnit("the title of the book")])
    hits = bank.store.lexical.search('title:"book" OR (alice AND', 5)
    assert {bank.unit(h.id).text for h in hits} == {
        "Alice and Bob went hiking",
        "the title of the book",
    }


def test_profile_round_trips_and_rejects_unknown_settings(bank):
    change = bank.set_profile(
        background="helps a team",
        agent_name="Juniper",
        disposition=Disposition(5, 1, 4, 0.9),
        config={"recall.rrf_k": 30},
    )
    assert change.touches(Kind.PROFILE)
    profile = bank.profile()
    assert (profile.background, profile.agent_name) == ("helps a team", "Juniper")
    assert profile.disposition == Disposition(5, 1, 4, 0.9)
    assert profile.config["recall.rrf_k"] == 30
    with pytest.raises(InvalidInputError, match="unknown setting 'no.such'"):
        bank.set_profile(config={"no.such": 1})
    with pytest.raises(ValueError):
        Disposition(skepticism=6)


def test_engine_creates_lists_renames_and_deletes_banks(engine):
    engine.create_bank("Demo: Juniper")
    engine.create_bank("demo juniper")  # same slug, different folder
    assert [b.name for b in engine.banks()] == ["demo juniper", "Demo: Juniper"]  # case-blind order
    with pytest.raises(BankExistsError):
        engine.create_bank("Demo: Juniper")
    for bad in ("", "   ", "x" * 101, "tab\there"):
        with pytest.raises(InvalidInputError):
            engine.create_bank(bad)
    engine.rename_bank("demo juniper", "Second")
    assert engine.open_bank("Second").name == "Second"
    engine.delete_bank("Second")
    assert [b.name for b in engine.banks()] == ["Demo: Juniper"]
    with pytest.raises(BankNotFoundError):
        engine.open_bank("Second")


def test_reopen_keeps_everything_and_schema_version(engine):
    bank = engine.create_bank("b")
    bank.add_units([NewUnit("kept across reopen")])
    bank.close()
    bank = engine.open_bank("b")
    assert [u.text for u in bank.units()] == ["kept across reopen"]
    assert bank.store.meta("schema_version") == SCHEMA_VERSION
    assert bank.verify().ok


def test_a_new_banks_schema_in_one_step_is_the_schema_version_by_version(tmp_path):
    """A new bank's schema is made in one transaction; an old bank's is moved up one
    version at a time: both end with the same tables, columns, types and defaults."""
    import duckdb

    from core.store.schema import MIGRATIONS, migrate

    def columns(con) -> list[tuple]:
        return con.execute(
            "SELECT table_name, column_name, data_type, column_default, is_nullable"
            " FROM information_schema.columns ORDER BY table_name, ordinal_position"
        ).fetchall()

    with duckdb.connect(str(tmp_path / "new.duckdb")) as new:
        assert migrate(new) == 0
        made = columns(new)
        assert new.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
    with duckdb.connect(str(tmp_path / "old.duckdb")) as old:
        for statement in MIGRATIONS[0]:  # a bank made by the first release
            old.execute(statement)
        old.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        assert migrate(old) == 1
        assert columns(old) == made
        assert old.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )


def test_a_mismatched_embedding_model_is_refused(tmp_path, embedder):
    with Engine(tmp_path, embedder=embedder) as engine:
        engine.create_bank("b").close()

    class OtherModel:
        name, dim = "other-model", 8

    with (
        Engine(tmp_path, embedder=OtherModel()) as engine,
        pytest.raises(EmbeddingMismatchError, match="all-MiniLM-L6-v2"),
    ):
        engine.open_bank("b")


def test_repair_rederives_indexes_that_lost_entries(bank):
    bank.add_units([NewUnit(f"fact number {i}") for i in range(5)])
    victim = bank.units()[0].id
    bank.store.vectors.delete([victim])
    bank.store.lexical.delete([victim])
    report = bank.verify()
    assert not report.ok and report.missing_vectors == (victim,)
    assert report.missing_lexical == (victim,)
    assert bank.repair().ok
    assert bank.store.lexical.search("number", 10)


CHILD_OPENS_BANK = textwrap.dedent(
    """
    import sys, time
    from core import Engine
    engine = Engine(sys.argv[1])
    bank = engine.open_bank("b")
    print("opened", flush=True)
    sys.stdin.read()
    """
)


@pytest.mark.slow
def test_a_second_process_gets_a_lock_error_naming_the_pid(tmp_path, embedder):
    with Engine(tmp_path, embedder=embedder) as engine:
        engine.create_bank("b").close()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_OPENS_BANK, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "opened"
        with Engine(tmp_path, embedder=embedder) as engine:
            with pytest.raises(BankLockedError, match=f"PID {child.pid}") as error:
                engine.open_bank("b")
            assert error.value.pid == child.pid
    finally:
        child.communicate("")
    with Engine(tmp_path, embedder=embedder) as engine:
        assert engine.open_bank("b").count() == 0  # free again after the owner left


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path, embedder):
    with Engine(tmp_path, embedder=embedder) as engine:
        folder = engine.create_bank("b").folder
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (folder / "bank.lock").write_text(json.dumps({"pid": int(dead.stdout), "host": "x"}))
    with Engine(tmp_path, embedder=embedder) as engine:
        bank = engine.open_bank("b")
        owner = json.loads((folder / "bank.lock").read_text())
        assert owner["pid"] == os.getpid()
        bank.close()


def test_rebuild_indexes_rederives_both_from_duckdb(bank):
    bank.add_units([NewUnit(f"rebuilt fact {i}") for i in range(4)])
    gone = bank.units()[0].id
    bank.store.vectors.delete([gone])  # an index that lost an entry and gained history
    bank.store.rebuild_indexes()
    assert bank.verify().ok
    assert bank.store.vectors.versions() == 1
    assert {h.id for h in bank.store.lexical.search("rebuilt", 10)} == {u.id for u in bank.units()}
