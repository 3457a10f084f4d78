"""Purge by marker: afterwards no query, no old LanceDB version, no Tantivy term and
no byte of any file in the bank folder holds it, and everything else still works."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core import EngramError, Kind
from core.curate import purge as purge_module
from tests.support.curation import (
    MARKER,
    dump,
    folder_contains,
    lexical_ids,
    table_rows,
    vector_ids,
)

FOREIGN = "Zyxquørblåt"  # a non-ASCII alias


def _all_text(bank) -> str:
    """Every row of every table, as text (DuckDB's own view of the data)."""
    con = bank.store.reader()
    out = []
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
        out += [repr(r) for r in con.execute(f"SELECT * FROM {table}").fetchall()]
    return "\n".join(out)


def _lance_ids_by_version(bank) -> dict[int, set[str]]:
    table = bank.store.vectors._table
    out = {}
    for info in table.list_versions():
        table.checkout(info["version"])
        out[info["version"]] = set(table.to_arrow().column("id").to_pylist())
    table.checkout_latest()
    return out


def _terms(bank, prefix: str) -> list:
    return bank.store.lexical._index.searcher().terms_with_prefix("text", prefix)


def test_purge_needs_confirm_and_changes_nothing_without(built):
    bank, b = built
    before = dump(bank)
    with pytest.raises(EngramError, match="cannot be undone"):
        bank.purge_entity(b.entities["marker"])
    assert dump(bank) == before


@pytest.mark.slow
def test_purge_by_marker(built):
    bank, b = built
    marker = b.entities["marker"]
    doomed = {b.units[k] for k in ("m_cello", "m_bob", "i_concert", "o_music", "obs_marker")}
    kept = {b.units[k] for k in ("a_google", "a_office", "o_alice", "bob_bike", "plain", "b_lend")}
    # Curation history that names the marker: the audit log must not keep it.
    bank.edit_unit(b.units["m_cello"], text=f"{MARKER} plays the cello every single evening.")
    bank.rename_entity(marker, f"{MARKER} Senior")
    bank.rename_entity(marker, f"{FOREIGN} Senior")  # the log's JSON must not escape it away
    bank.retract_entity(marker)
    bank.restore_entity(marker)
    bank.delete_units([b.units["plain"]])
    bank.undo()  # the deleted unit is back
    # Text elsewhere: the profile, and a reflection (JSON, a list and plain text).
    bank.set_profile(background=f"Knows {MARKER} well.")
    with bank.store.transaction() as tx:
        tx.con.execute(
            "INSERT INTO reflections (id, query, disposition, evidence_ids, answer, opinions,"
            " model, mode, created_at, committed, notes) VALUES ('r1', ?, '{}', [], ?, ?, '',"
            " 'extractive', now(), true, ?)",
            [
                f"What does {MARKER} play?",
                f"{MARKER} plays the cello.",
                json.dumps([{"text": f"{MARKER} is gifted"}]),
                [f"about {MARKER}", "unrelated"],
            ],
        )
    purged_vector = np.asarray(
        table_rows(bank, "SELECT vector FROM units WHERE id = ?", [b.units["o_music"]])[0][0],
        dtype=np.float32,
    ).tobytes()
    bank.store.checkpoint()
    # Positive controls: the scans below do see the marker while it is there.
    assert MARKER in _all_text(bank) and FOREIGN in _all_text(bank)
    assert folder_contains(bank.folder, MARKER.encode())
    assert folder_contains(bank.folder / "vectors", purged_vector)
    assert _terms(bank, MARKER.lower())
    assert any(doomed & ids for ids in _lance_ids_by_version(bank).values())
    assert len(_lance_ids_by_version(bank)) > 1
    assert doomed & set(lexical_ids(bank, MARKER))
    steps = []

    change = bank.purge_entity(marker, confirm=True, progress=lambda d, t, m: steps.append(m))

    assert change.removed[Kind.UNIT] == doomed and change.removed[Kind.ENTITY] == {marker}
    assert b.units["b_lend"] in change.updated[Kind.UNIT]
    assert steps[-1] == "purged"
    # DuckDB: no row anywhere names it, or points at what was purged.
    everything = _all_text(bank)
    assert MARKER.lower() not in everything.lower() and FOREIGN not in everything
    assert not any(unit_id in everything for unit_id in doomed)
    # The entity's (random) id survives only as the purge entry's target.
    assert everything.count(marker) == 1 and bank.audit()[0].target == marker
    assert "[redacted]" in table_rows(bank, "SELECT text FROM turns WHERE id = 't2'")[0][0]
    assert table_rows(bank, "SELECT title FROM documents")[0][0] == "chat with [redacted]"
    assert bank.unit(b.units["b_lend"]).text == "Bob lent his spare bike to [redacted]'s sister."
    assert bank.profile().background == "Knows [redacted] well."
    assert table_rows(bank, "SELECT query, answer, opinions, notes FROM reflections") == [
        (
            "What does [redacted] play?",
            "[redacted] plays the cello.",
            '[{"text": "[redacted] is gifted"}]',
            ["about [redacted]", "unrelated"],
        )
    ]
    # LanceDB: one version left, and no version holds a purged vector.
    versions = _lance_ids_by_version(bank)
    assert len(versions) == 1
    assert all(doomed.isdisjoint(ids) for ids in versions.values())
    assert doomed.isdisjoint(vector_ids(bank, "plays the cello", k=50))
    # Tantivy: no hit, and no term left in any segment (deleted documents included).
    assert lexical_ids(bank, MARKER) == []
    assert _terms(bank, MARKER.lower()) == []
    assert bank.store.lexical._index.searcher().doc_freq("text", MARKER.lower()) == 0
    # Bytes: no file under the bank folder (WAL included) holds the marker or the vector.
    assert folder_contains(bank.folder, MARKER.encode()) == []
    assert folder_contains(bank.folder, FOREIGN.encode()) == []
    assert folder_contains(bank.folder, purged_vector) == []
    # The audit log keeps that a purge happened, not what was purged; nothing before it undoes.
    entries = bank.audit()
    assert entries[0].action == "purge_entity" and entries[0].before["units"] == 5
    redacted = {e.action for e in entries if e.before.get("redacted")}
    assert redacted == {"edit_unit", "rename_entity", "retract_entity", "restore_entity"}
    assert not any(e.undoable for e in entries if e.action in redacted)
    with pytest.raises(EngramError, match="nothing to undo"):
        bank.undo()
    # Everything unrelated is still there, indexed and recallable.
    assert {u.id for u in bank.units(limit=None)} == kept
    assert bank.verify().ok
    assert b.units["bob_bike"] in lexical_ids(bank, "bike")
    recalled = [i.unit_id for i in bank.recall("Where does Alice work?").items]
    assert b.units["a_google"] in recalled
    assert table_rows(
        bank,
        "SELECT count(*) FROM jobs WHERE target = ? AND status = 'queued'",
        [b.entities["bob"]],
    ) == [(1,)]
    # And after closing, the files still hold nothing of it.
    engine = bank.engine
    bank.close()
    assert folder_contains(engine.banks_dir, MARKER.encode()) == []
    reopened = engine.open_bank("test")
    assert reopened.verify().ok and len(reopened.units(limit=None)) == len(kept)


@pytest.mark.slow
def test_interrupted_purge_is_finished_by_the_next(built, monkeypatch):
    bank, b = built
    bank.store.checkpoint()

    def crash(bank, progress):
        raise RuntimeError("power cut")

    monkeypatch.setattr(purge_module, "_finish", crash)
    with pytest.raises(RuntimeError):
        bank.purge_entity(b.entities["marker"], confirm=True)
    monkeypatch.undo()
    assert bank.store.meta(purge_module.PENDING_KEY) is True
    # The rows are gone but old copies linger until the rebuilds run.
    assert MARKER not in _all_text(bank)
    assert purge_module.finish_pending_purge(bank.handle)
    assert bank.store.meta(purge_module.PENDING_KEY) is None
    assert folder_contains(bank.folder, MARKER.encode()) == []
    assert _terms(bank, MARKER.lower()) == []
    assert not purge_module.finish_pending_purge(bank.handle)
    assert bank.verify().ok
