"""Export, import and diff: the round trip is exact, replace is atomic, diffs read right."""

from __future__ import annotations

import hashlib
import json
import zipfile
from datetime import datetime

import pytest

from core import BankExistsError, CancelledError, CancelToken, Disposition, Engine, NewUnit
from core.cli import main as cli
from core.snapshot import FORMAT_VERSION, diff_snapshots
from tests.support.curation import dump, lexical_ids, table_rows, vector_ids
from tests.support.embedders import HashEmbedder

QUERIES = ["Who plays the cello?", "Where does Alice work?", "bikes and weather", "concert"]


def _add_reflection(bank) -> None:
    with bank.store.transaction() as tx:
        tx.con.execute(
            "INSERT INTO reflections (id, query, disposition, evidence_ids, answer, opinions,"
            " model, mode, created_at, committed) VALUES ('r1', 'q?', '{\"skepticism\": 3}',"
            " ['x'], 'an answer', '[]', '', 'extractive', ?, true)",
            [datetime(2024, 3, 5)],
        )


def _recall(bank, query):
    result = bank.recall(query, budget_tokens=200)
    return [(i.unit_id, round(i.score, 9)) for i in result.items]


@pytest.mark.slow
def test_round_trip_is_identical(built, engine, tmp_path):
    bank, b = built
    bank.set_profile(background="A helpful assistant.", disposition=Disposition(skepticism=5))
    bank.retract_entity(b.entities["google"])  # retracted state travels too
    _add_reflection(bank)
    path = tmp_path / "out" / "test.engram"
    steps = []
    manifest = bank.export_snapshot(path, progress=lambda d, t, m: steps.append(m))
    assert path.is_file() and steps[-1] == "wrote test.engram"
    assert manifest.counts["units"] == 11 and manifest.counts["reflections"] == 1
    assert manifest.embedding_model == bank.store.embedding_model and manifest.embedding_dim == 384
    with zipfile.ZipFile(path) as archive:
        stored = json.loads(archive.read("manifest.json"))
        assert stored["format_version"] == FORMAT_VERSION and stored["exported_by"]["version"]
        for name, member in stored["members"].items():
            assert hashlib.sha256(archive.read(name)).hexdigest() == member["sha256"]
        assert "jobs.parquet" not in archive.namelist()
        assert "audit.parquet" not in archive.namelist()
    expected = dump(bank)
    answers = {q: _recall(bank, q) for q in QUERIES}
    searches = [vector_ids(bank, q, k=20) for q in QUERIES] + [
        lexical_ids(bank, q) for q in QUERIES
    ]

    copy = engine.import_snapshot(path, name="copy")

    assert copy.name == "copy"
    assert dump(copy) == expected
    assert copy.profile().background == "A helpful assistant."
    assert copy.profile().disposition.skepticism == 5
    assert copy.verify().ok
    assert {q: _recall(copy, q) for q in QUERIES} == answers
    assert [vector_ids(copy, q, k=20) for q in QUERIES] + [
        lexical_ids(copy, q) for q in QUERIES
    ] == searches
    assert table_rows(copy, "SELECT count(*) FROM reflections") == [(1,)]
    assert not [p for p in engine.banks_dir.iterdir() if p.name.startswith(".")]
    # The default name is the exported one: taken, so refused without replace.
    with pytest.raises(BankExistsError):
        engine.import_snapshot(path)


@pytest.mark.slow
def test_replace_swaps_the_bank_atomically(built, engine, tmp_path):
    bank, b = built
    path = tmp_path / "before.engram"
    bank.export_snapshot(path)
    snapshot_state = dump(bank)
    bank.delete_units([b.units["plain"]])
    bank.rename_entity(b.entities["bob"], "Robert")
    assert dump(bank) != snapshot_state
    fresh = engine.import_snapshot(path, replace=True)
    assert bank.closed  # the old handle was closed, not left pointing at moved files
    assert dump(fresh) == snapshot_state
    assert [i.name for i in engine.banks()] == ["test"]
    assert fresh.audit() == []  # history stays with the bank it happened in
    assert fresh.verify().ok


@pytest.mark.slow
def test_import_reembeds_a_snapshot_from_another_model(tmp_path):
    with Engine(tmp_path / "a", embedder=HashEmbedder("hash-a", 16)) as engine_a:
        bank = engine_a.create_bank("other model")
        bank.add_units([NewUnit(text=f"fact number {i}") for i in range(30)])
        bank.export_snapshot(tmp_path / "a.engram")
        texts = sorted(u.text for u in bank.units(limit=None))
    model_b = HashEmbedder("hash-b", 24)
    steps = []
    with Engine(tmp_path / "b", embedder=model_b) as engine_b:
        copy = engine_b.import_snapshot(
            tmp_path / "a.engram", progress=lambda d, t, m: steps.append((d, t, m))
        )
        assert copy.store.embedding_model == "hash-b" and copy.store.dim == 24
        assert sorted(u.text for u in copy.units(limit=None)) == texts
        rows = table_rows(copy, "SELECT DISTINCT len(vector), embedding_model FROM units")
        assert rows == [(24, "hash-b")]
        assert ("re-embedding units" in {m for _, _, m in steps}) and model_b.calls >= 1
        assert (30, 30, "re-embedding units") in steps
        assert copy.verify().ok
        hit = vector_ids(copy, "fact number 7", k=1)
        assert copy.unit(hit[0]).text == "fact number 7"


def test_cancelled_import_leaves_nothing(built, engine, tmp_path):
    bank, _ = built
    bank.export_snapshot(tmp_path / "s.engram")
    token = CancelToken()

    def progress(done, total, message):
        if message == "indexing" or message.startswith("loading"):
            token.cancel()

    with pytest.raises(CancelledError):
        engine.import_snapshot(tmp_path / "s.engram", name="never", progress=progress, cancel=token)
    assert [i.name for i in engine.banks()] == ["test"]
    assert sorted(p.name for p in engine.banks_dir.iterdir()) == ["test"]


@pytest.mark.slow
def test_diff_snapshot_against_live_bank_and_snapshot(built, tmp_path, capsys, engine):
    bank, b = built
    first = tmp_path / "first.engram"
    bank.export_snapshot(first)
    assert diff_snapshots(first, bank).empty
    bank.edit_unit(b.units["o_music"], text="The cellist is a gifted musician.", confidence=0.9)
    bank.delete_units([b.units["plain"]])
    bank.add_units([NewUnit(text="Carol joined the choir.")])
    bank.merge_entities(b.entities["alice"], b.entities["bob"])
    bank.retract_entity(b.entities["google"])
    bank.rename_entity(b.entities["bob"], "Robert")
    result = diff_snapshots(first, bank)
    assert [u.text for u in result.units_added] == ["Carol joined the choir."]
    assert [u.id for u in result.units_removed] == [b.units["plain"]]
    changed = {c.id: c for c in result.units_changed}
    music = changed[b.units["o_music"]]
    assert set(music.fields) == {"text", "confidence"}
    assert "{+The cellist+}" in music.text_diff() and "[-probably-]" in music.text_diff()
    assert {c.fields for i, c in changed.items() if i != b.units["o_music"]} == {("status",)}
    assert [(m.source.name, m.target.id) for m in result.entities_merged] == [
        ("Alice", b.entities["bob"])
    ]
    assert [e.name for e in result.entities_retracted] == ["Google"]
    assert [(r.before, r.after) for r in result.entities_renamed] == [("Bob", "Robert")]
    assert [(o.before, o.after) for o in result.opinions_changed] == [(0.7, 0.9)]
    text = result.text()
    assert "units: 1 added, 1 removed" in text and "merged Alice" in text
    assert "0.70 -> 0.90" in text
    # Two snapshots, through the CLI.
    second = tmp_path / "second.engram"
    bank.export_snapshot(second)
    home = ["--home", str(engine.home)]
    bank.close()
    assert cli([*home, "diff", str(first), str(second)]) == 0
    out = capsys.readouterr().out
    assert "retracted Google" in out and "+ [world]" in out
    assert cli([*home, "diff", str(second), "test", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["units_added"] == []


@pytest.mark.slow
def test_cli_export_and_import(built, engine, tmp_path, capsys):
    bank, _ = built
    expected = dump(bank)
    home = ["--home", str(engine.home)]
    bank.close()
    path = tmp_path / "cli.engram"
    assert cli([*home, "export", "test", str(path), "--quiet"]) == 0
    assert cli([*home, "import", str(path), "--name", "clone", "--quiet"]) == 0
    assert "as bank 'clone'" in capsys.readouterr().out
    assert cli([*home, "import", str(path), "--quiet"]) == 1  # the name is taken
    assert "already exists" in capsys.readouterr().err
    assert dump(engine.open_bank("clone")) == expected
