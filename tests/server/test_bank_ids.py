"""Banks keep their identity: an immutable id in the folder's label, the name a
label a rename changes. Renaming a bank while it is served keeps every client
working: under the new name at once, under the old one for the grace period
(then a message naming the new one), and under its id for good; the studio's
writes and the server's take the one lock either way."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from core import BankExistsError, BankNotFoundError, Engine, Kind, RemoteEngine
from core.home import RENAME_GRACE, read_label, write_label
from core.server import ServedBanks, start_server
from tests.server.conftest import TOKEN
from tests.support.embedders import HashEmbedder


@pytest.fixture
def engine(tmp_path):
    with Engine(tmp_path, embedder=HashEmbedder()) as engine:
        yield engine


def test_a_bank_is_found_by_its_id_its_name_or_its_former_name(engine):
    bank = engine.create_bank("Support agent")
    assert bank.id == "support-agent" == read_label(bank.folder)["id"]
    change = engine.rename_bank("Support agent", "Helpdesk")
    assert change == change.of(updated={Kind.BANK: [bank.id]})
    assert bank.id == "support-agent" and bank.name == "Helpdesk"
    for ref in ("Helpdesk", "support-agent", "Support agent"):
        assert engine.open_bank(ref) is bank
    assert [(b.id, b.name) for b in engine.banks()] == [("support-agent", "Helpdesk")]
    # Past the grace the old name is refused, naming the new one and the id.
    label = read_label(bank.folder)
    past = datetime.now(UTC) - RENAME_GRACE - timedelta(hours=1)
    label["former_names"][0]["renamed_at"] = past.isoformat()
    write_label(bank.folder, label)
    with pytest.raises(BankNotFoundError, match="renamed to 'Helpdesk'.*'support-agent'"):
        engine.open_bank("Support agent")


def test_ids_and_names_never_collide(engine):
    engine.create_bank("Alpha")
    engine.rename_bank("Alpha", "Beta")
    # "alpha" is Beta's id: a new bank by that name would take its clients.
    with pytest.raises(BankExistsError, match="id of the bank 'Beta'"):
        engine.create_bank("alpha")
    chosen = engine.create_bank("agent 7", bank_id="agent 7")  # a Hindsight client's bank_id
    assert chosen.id == "agent 7"
    with pytest.raises(BankExistsError):
        engine.create_bank("Other", bank_id="Beta")


def test_a_bank_made_before_ids_has_its_folders_name_and_keeps_it(engine):
    bank = engine.create_bank("Old one")
    folder = bank.folder
    bank.close()
    label = read_label(folder)
    del label["id"]
    write_label(folder, label)
    assert engine.open_bank("old-one").id == "old-one"
    engine.close()
    engine.rename_bank("Old one", "Renamed")
    assert read_label(folder)["id"] == "old-one"


def test_a_replaced_bank_keeps_its_id(engine, tmp_path):
    bank = engine.create_bank("Kept", bank_id="kept-id")
    bank.add_memory("Maya moved to Lisbon.")
    bank.export_snapshot(tmp_path / "kept.engram")
    replaced = engine.import_snapshot(tmp_path / "kept.engram", "Kept", replace=True)
    assert replaced.id == "kept-id"
    fresh = engine.import_snapshot(tmp_path / "kept.engram", "Copy")
    assert fresh.id == "copy"


@pytest.mark.slow
def test_renaming_a_served_bank_keeps_every_client_working(tmp_path):
    """As the studio serves the bank it has open: adopted, renamed by the studio."""
    engine = Engine(tmp_path, embedder=HashEmbedder())
    heard = []
    served = ServedBanks(engine, open_on_demand=False, on_change=lambda k, c: heard.append(k))
    bank = engine.create_bank("Alpha Team")  # its id: alpha-team
    served.adopt(bank)
    handle = start_server(served, "127.0.0.1", 0, TOKEN)
    http = httpx.Client(
        base_url=handle.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
    )
    remote = RemoteEngine(handle.url, TOKEN, timeout=60)
    try:
        opened = remote.open_bank("Alpha Team")  # a client that holds the bank from before

        def retain(ref: str, text: str) -> None:
            item = {"content": text, "strategy": "verbatim", "metadata": {"speaker": "Maya"}}
            answer = http.post(f"/v1/default/banks/{ref}/memories", json={"items": [item]})
            assert answer.status_code == 200, answer.text

        retain("Alpha Team", "Maya moved to Lisbon.")
        engine.rename_bank("Alpha Team", "beta")  # the studio's rename, while it serves
        assert http.get("/v1/default/banks/beta/profile").status_code == 200  # at once
        retain("Alpha Team", "Maya works at Atlas.")  # an agent still using the old name
        retain("beta", "Maya likes tea.")
        assert opened.count() == bank.count() == 3  # all in the one bank
        assert opened.name == "beta"
        # One bank, one lock, one feed, however it is named.
        assert served.key_of("Alpha Team") == served.key_of("beta") == bank.id == "alpha-team"
        assert served.lock(bank.id) is served.lock(served.key_of("Alpha Team"))
        assert set(heard) == {bank.id}
        listed = http.get("/engram/v1/banks").json()["items"]
        assert [(b["id"], b["name"]) for b in listed] == [(bank.id, "beta")]
        # Past the grace, the old name gets a message naming the new one.
        label = read_label(bank.folder)
        label["former_names"][0]["renamed_at"] = "2000-01-01T00:00:00+00:00"
        write_label(bank.folder, label)
        gone = http.get("/v1/default/banks/Alpha Team/profile")
        assert gone.status_code == 404 and "renamed to 'beta'" in json.dumps(gone.json())
        assert opened.count() == 3  # by its id, for good
    finally:
        remote.close()
        http.close()
        handle.stop()
        served.close()
        engine.close()
