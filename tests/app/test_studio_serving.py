"""The studio serves the bank it has open: agents write, the panes follow."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import QSettings

from core import Network, find_owner
from tests.app.conftest import make_units, wait_idle

TOKEN = "studio-serving-token-" + "z" * 20


@pytest.fixture
def serving(qtbot, make_window, engine, embedder, monkeypatch):
    """A window with the bank "Live" open and serving on a free port."""
    monkeypatch.setenv("ENGRAM_API_TOKEN", TOKEN)
    engine.create_bank("Live").add_units(make_units(12, networks=[Network.WORLD]))
    window = make_window(start=True)  # tests start with serving off: turned on below
    qtbot.waitUntil(lambda: window.state.bank is not None)
    assert not window.server.running
    window.server.start(port=0)
    qtbot.waitUntil(lambda: window.server.running, timeout=60_000)
    wait_idle(qtbot, window.runner)
    return window


def texts(pane) -> list[str]:
    model = pane.model
    return [u.text for r in range(model.rowCount()) if (u := model.unit_at(r)) is not None]


@pytest.mark.slow
def test_a_client_retains_and_the_open_pane_shows_the_facts_without_a_refresh(qtbot, serving):
    from hindsight_client import Hindsight

    window = serving
    world, experience = window.show_pane("world"), window.pane("experience")
    qtbot.waitUntil(lambda: world.model.rowCount() == 12)
    owner = find_owner(window.engine.home, "Live")
    assert owner is not None and owner.url == window.server.url  # the lock says where

    client = Hindsight(base_url=window.server.url, api_key=TOKEN)
    try:
        client.retain("Live", "Maya moved to Lisbon in March 2025 to lead the Atlas team.")
    finally:
        client.close()
    qtbot.waitUntil(
        lambda: any("Lisbon" in t for t in texts(world) + texts(experience)), timeout=10_000
    )
    assert world.model.rowCount() + experience.model.rowCount() > 12


@pytest.mark.slow
def test_the_runner_and_the_server_take_turns_on_one_bank(qtbot, serving):
    """A runner task on the bank holds its lock: a write through the server waits for it."""
    window = serving
    bank = window.state.bank
    inside, release = threading.Event(), threading.Event()

    def long_task():
        inside.set()
        release.wait(30)
        return bank.count()

    window.runner.run_query(long_task, key=bank)
    qtbot.waitUntil(inside.is_set)
    answered = threading.Event()
    result = {}

    def write_through_server():
        with httpx.Client(
            base_url=window.server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        ) as http:
            unit = bank.units(limit=1)[0]
            body = {"args": [unit.id], "kwargs": {"text": "Edited through the server."}}
            result["response"] = http.post("/engram/v1/banks/Live/call/edit_unit", json=body)
        answered.set()

    writer = threading.Thread(target=write_through_server)
    writer.start()
    assert not answered.wait(1.5), f"the server wrote while the runner held the bank: {result}"
    release.set()
    writer.join(60)
    assert answered.is_set() and result["response"].status_code == 200
    wait_idle(qtbot, window.runner)
    assert bank.verify().ok


@pytest.mark.slow
def test_serving_off_withdraws_the_address_and_the_indicator_says_so(qtbot, serving):
    window = serving
    indicator = window.serving_indicator
    assert indicator.text().startswith("⇄ Serving · 127.0.0.1:")
    assert find_owner(window.engine.home, "Live") is not None
    window.server.stop()
    assert "Not serving" in indicator.text()
    # Still owned, but nothing to route to: a command is refused, naming the studio.
    assert find_owner(window.engine.home, "Live") is None


@pytest.mark.slow
def test_a_taken_port_falls_back_to_a_free_one_and_says_which(qtbot, make_window, engine):
    import socket

    engine.create_bank("Live")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        QSettings().setValue("serving/port", port)
        QSettings().setValue("serving/enabled", True)
        window = make_window(start=True)
        qtbot.waitUntil(lambda: window.server.running, timeout=60_000)
        assert window.server.fell_back and not window.server.url.endswith(f":{port}")
        assert f"({port} was taken)" in window.serving_indicator.text()


@pytest.mark.slow
def test_render_the_status_bar_and_the_settings_box(qtbot, serving, tmp_path):
    window = serving
    window.resize(1440, 900)
    settings = window.show_pane("settings")
    assert settings.serving.enabled.isChecked()
    qtbot.waitUntil(lambda: window.server.url in settings.serving.status.text())
    shots = Path(os.environ.get("ENGRAM_SHOTS", tmp_path))
    assert window.grab().save(str(shots / "studio-serving.png"))


@pytest.mark.slow
def test_switching_banks_serves_the_new_one_and_releases_the_old(qtbot, serving, engine):
    window = serving
    engine.create_bank("Other").close()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=window.server.url, headers=headers, timeout=60) as http:
        assert http.get("/engram/v1/banks/Other").status_code == 404  # not open: not served
        window.open_bank("Other")
        qtbot.waitUntil(lambda: window.state.bank is not None and window.state.bank.name == "Other")
        wait_idle(qtbot, window.runner)
        assert http.get("/engram/v1/banks/Other").status_code == 200
        assert http.get("/engram/v1/banks/Live").status_code == 404
    assert find_owner(engine.home, "Other").url == window.server.url
    assert find_owner(engine.home, "Live") is None  # closed by the studio: free again
