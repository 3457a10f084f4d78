"""ServedBanks as the studio uses it: it serves only the banks handed to it."""

from __future__ import annotations

import threading

import pytest

from core import BankNotFoundError, Change, Engine, Kind
from core.server import ServedBanks


def test_the_studio_serves_what_it_adopts_and_nothing_else(tmp_path):
    heard: list[tuple[str, Change]] = []
    with Engine(tmp_path) as engine:
        mine = engine.create_bank("mine")
        engine.create_bank("other").close()
        served = ServedBanks(
            engine, open_on_demand=False, on_change=lambda n, c: heard.append((n, c))
        )
        with pytest.raises(BankNotFoundError):
            served.get("mine")
        served.adopt(mine)
        assert served.get("mine") is mine and served.names() == ["mine"]
        with pytest.raises(BankNotFoundError):
            served.get("other")  # on disk, but the studio did not open it
        with served.using("mine") as bank:
            assert bank is mine
            assert served.lock("mine").held  # the studio's runner takes the same lock
        served.changed("mine", Change())
        served.changed("mine", Change.of(added={Kind.UNIT: ["u1"]}))
        assert [n for n, _ in heard] == ["mine"]  # an empty change is not announced
        served.release("mine")
        with pytest.raises(BankNotFoundError):
            served.get("mine")
        served.close()
        assert not mine.closed  # adopted banks belong to the studio


def test_engram_serve_opens_on_demand_and_closes_what_it_opened(tmp_path):
    with Engine(tmp_path) as engine:
        engine.create_bank("a").close()
        served = ServedBanks(engine, open_on_demand=True)
        bank = served.get("a")
        assert served.get("a") is bank and served.names() == ["a"]
        with pytest.raises(BankNotFoundError):
            served.get("missing")
        writes = []

        def hold():
            with served.using("a"):
                writes.append("second")

        with served.using("a"):
            other = threading.Thread(target=hold)
            other.start()
            other.join(0.2)
            assert writes == []  # serialised behind the first writer
        other.join()
        assert writes == ["second"]
        served.close()
        assert bank.closed
