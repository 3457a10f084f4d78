"""A snapshot made before a purge does not quietly bring the purged entity
back (issue 27, item 14). The bank remembers what it purged by a salted hash of
each name the entity had, never the name; importing such a snapshot in place
of the bank is refused until its user confirms (the CLI asks; the studio's
import dialog asks), and the new bank still remembers."""

from __future__ import annotations

import pytest

from core import Engine, PurgedInSnapshotError
from core.cli import main as cli_main
from core.store import purged
from tests.core.test_purge_exact import _leaks, _zorblax_bank
from tests.support.embedders import HashEmbedder
from tests.support.terminal import at_a_terminal


@pytest.fixture
def engine(tmp_path):
    with Engine(tmp_path / "home", embedder=HashEmbedder()) as engine:
        yield engine


def before_and_after(engine, tmp_path):
    """The bank `z` purged of Zorblax, and a snapshot made before the purge."""
    bank, zid = _zorblax_bank(engine)
    old = tmp_path / "before.engram"
    bank.export_snapshot(old)
    bank.purge_entity(zid, confirm=True)
    return bank, old


def test_the_bank_remembers_what_it_purged_without_the_name(engine, tmp_path):
    bank, _ = before_and_after(engine, tmp_path)
    records = bank.handle.store.meta(purged.KEY)
    assert purged.purged_among(records, ["zorblax", "ZORBLAX ", "Ann"]) == ["ZORBLAX ", "zorblax"]
    assert _leaks(bank, "zorblax") == []  # the record holds no trace of the name


def test_an_import_in_place_that_would_bring_it_back_is_refused_until_confirmed(engine, tmp_path):
    bank, old = before_and_after(engine, tmp_path)
    units = bank.count(status=None)
    with pytest.raises(PurgedInSnapshotError, match="purged since.*nothing was imported"):
        engine.import_snapshot(old, "z", replace=True)
    bank = engine.open_bank("z")
    assert bank.count(status=None) == units and _leaks(bank, "zorblax") == []
    # Under another name it is only a copy to look at: no question.
    engine.import_snapshot(old, "look")
    # Confirmed: it comes back, and the bank still knows it was purged once.
    back = engine.import_snapshot(old, "z", replace=True, restore_purged=True)
    assert _leaks(back, "zorblax")
    assert purged.purged_among(back.handle.store.meta(purged.KEY), ["Zorblax"]) == ["Zorblax"]


def test_a_snapshot_made_after_the_purge_imports_without_a_question(engine, tmp_path):
    bank, _ = before_and_after(engine, tmp_path)
    after = tmp_path / "after.engram"
    bank.export_snapshot(after)
    assert engine.import_snapshot(after, "z", replace=True).name == "z"


def test_the_cli_asks_and_a_no_imports_nothing(engine, tmp_path, monkeypatch, capsys):
    _, old = before_and_after(engine, tmp_path)
    home = str(engine.home)
    engine.close()
    at_a_terminal(monkeypatch, "n")
    assert cli_main(["--home", home, "import", str(old), "--name", "z", "--replace"]) == 1
    out = capsys.readouterr()
    assert "purged since" in out.out + out.err and "nothing imported" in out.out + out.err
    at_a_terminal(monkeypatch, "y")
    assert cli_main(["--home", home, "import", str(old), "--name", "z", "--replace"]) == 0
    # Without a terminal: refused, saying how to go on.
    monkeypatch.undo()
    code = cli_main(["--home", home, "import", str(old), "--name", "z", "--replace"])
    assert code == 1 and "--yes" in capsys.readouterr().err
    assert cli_main(["--home", home, "import", str(old), "--name", "z", "--replace", "--yes"]) == 0
