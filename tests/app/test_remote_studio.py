"""The studio on a bank another machine serves: File → Connect to a real
`engram serve` child process (its own data folder and token), the server's
banks listed beside the local ones, and every pane driven on the remote bank
while a second client writes to it meanwhile. One server for the module.
"""

from __future__ import annotations

import shutil
import stat
from datetime import UTC, datetime

import pytest
import shiboken6
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QDialog

import app.panes.entities as entities_module
from app.connections import SETTINGS_KEY, TOKENS_FILE, Connection, saved_connections
from core import Disposition, Kind, Network, RemoteEngine
from tests.app.conftest import DEMO, wait_idle
from tests.support.remote import Proxy, engram_serve, memory_keyring

pytestmark = pytest.mark.slow

TOKEN = "remote-studio-token-" + "z" * 24
BANK = "Demo"
LONG = 60_000


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_subset_home):
    home = tmp_path_factory.mktemp("served")
    shutil.copytree(demo_subset_home, home, dirs_exist_ok=True)
    with engram_serve(home, TOKEN) as url:
        yield url


@pytest.fixture
def other(server):
    """A second client of the same server: an agent writing while the studio looks."""
    with RemoteEngine(server, TOKEN, timeout=120) as engine:
        yield engine.open_bank(BANK)


@pytest.fixture
def no_keyring(monkeypatch):
    """No OS keyring here (as on a headless server): tokens go to the 0600 file."""
    import keyring
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(before)


def first_in_world(bank, text: str):
    """A world memory dated before anything in the bank: the World pane's first row
    (its default order is by date), whatever else this module's tests added to the
    shared server's bank — past the first page it would only load when scrolled to."""
    return bank.add_memory(
        text, network=Network.WORLD, occurred_start=datetime(2020, 1, 10, tzinfo=UTC)
    )


def connect(qtbot, window, url: str, token: str = TOKEN, ca_file: str = ""):
    """File → Connect to server…, filled in and confirmed as a person would."""
    dialog = window.ask_connect()
    dialog.url.setText(url)
    dialog.token.setText(token)
    dialog.ca_file.setText(ca_file)
    dialog.connect_button.click()
    return dialog


def closed(dialog) -> bool:
    """Accepted and gone (the dialog deletes itself on close)."""
    return not shiboken6.isValid(dialog) or not dialog.isVisible()


def open_remote(qtbot, window, url: str, name: str = BANK):
    qtbot.waitUntil(lambda: url in window.state.remotes.servers, timeout=LONG)
    server = window.state.remotes.servers[url]
    qtbot.waitUntil(lambda: server.listed, timeout=LONG)
    item = window.bank_list.item_for(url, next(i.id for i in server.banks if i.name == name))
    assert item is not None
    window.bank_list._activated(item)
    qtbot.waitUntil(lambda: window.state.bank is not None and window.state.remote, timeout=LONG)
    qtbot.waitUntil(lambda: window.follower is not None and window.follower.status == "live")
    return window.state.bank


@pytest.fixture
def studio(qtbot, make_window, server, no_keyring):
    window = make_window()
    dialog = connect(qtbot, window, server)
    qtbot.waitUntil(lambda: closed(dialog), timeout=LONG)
    bank = open_remote(qtbot, window, server)
    wait_idle(qtbot, window.runner, LONG)
    return window, bank


def test_connect_lists_the_servers_banks_as_remote_and_remembers_it(
    qtbot, make_window, engine, server, no_keyring
):
    engine.create_bank("Mine")
    window = make_window(start=True)
    qtbot.waitUntil(lambda: window.bank_list.names() == ["Mine"])

    # A wrong token: the dialog stays, says why, and keeps what was typed.
    dialog = connect(qtbot, window, server.removeprefix("http://"), token="wrong-" + "x" * 20)
    qtbot.waitUntil(lambda: dialog.problem.text().startswith("Could not connect"), timeout=LONG)
    assert dialog.isVisible() and dialog.url.text() == server.removeprefix("http://")
    assert server not in window.state.remotes.servers
    dialog.token.setText(TOKEN)
    dialog.connect_button.click()
    qtbot.waitUntil(lambda: closed(dialog), timeout=LONG)

    bank = open_remote(qtbot, window, server)
    texts = [window.bank_list.list.item(i).text() for i in range(window.bank_list.list.count())]
    assert texts[0] == "Mine"  # the local banks first, then the server's, marked remote
    assert texts[1].startswith("⇄ 127.0.0.1:") and texts[1].endswith("1 bank")
    assert texts[2] == f"  ⇄ {BANK}"
    assert window.bank_list.names() == ["Mine"]  # what "create" checks names against
    assert "(remote · 127.0.0.1:" in window.windowTitle()
    assert window.remote_label.text().endswith("· live")
    assert not window.act_rename.isEnabled()  # a remote bank is renamed on its server
    assert bank.count() > 0

    # Remembered: the URL in settings, the token in a file only its owner reads.
    assert Connection(server) in saved_connections()
    tokens = engine.home / TOKENS_FILE
    assert TOKEN in tokens.read_text() and stat.S_IMODE(tokens.stat().st_mode) == 0o600
    window.close()

    # The next start reconnects and opens the remote bank it had open.
    again = make_window(start=True)
    qtbot.waitUntil(lambda: again.state.bank is not None and again.state.remote, timeout=LONG)
    assert again.state.bank.id == bank.id and again.state.bank_url == server

    # Forget: gone from the list, the settings and the token file.
    again.disconnect_server(server, forget=True)
    qtbot.waitUntil(lambda: again.state.bank is None)
    assert server not in again.state.remotes.servers
    assert again.bank_list.list.count() == 1
    assert TOKEN not in tokens.read_text()
    assert server not in str(QSettings().value(SETTINGS_KEY))


def test_the_token_goes_to_the_os_keyring_where_there_is_one(engine):
    import keyring

    from app.connections import TokenStore

    before = keyring.get_keyring()
    backend = memory_keyring()
    keyring.set_keyring(backend)
    try:
        store = TokenStore(engine.home)
        store.set("https://memory.example:8888", "secret-token")
        assert backend.passwords == {
            ("Engram Studio", "https://memory.example:8888"): "secret-token"
        }
        assert not (engine.home / TOKENS_FILE).exists()  # never written to disk
        assert store.get("https://memory.example:8888") == "secret-token"
        store.forget("https://memory.example:8888")
        assert backend.passwords == {}
    finally:
        keyring.set_keyring(before)


def test_every_pane_works_on_the_remote_bank_while_another_client_writes(
    qtbot, studio, other, tmp_path, monkeypatch
):
    window, bank = studio

    # Browse: the world facts, as the server holds them.
    world = window.show_pane("world")
    qtbot.waitUntil(lambda: world.model.counted, timeout=LONG)
    assert world.model.rowCount() == other.count(Network.WORLD)

    # Another client writes meanwhile: the pane shows it without a refresh.
    before = world.model.rowCount()
    added = first_in_world(other, "In 2020 Maya planted a lemon tree on her balcony.")
    [new_id] = added.added[Kind.UNIT]
    qtbot.waitUntil(lambda: world.model.rowCount() == before + 1, timeout=LONG)
    qtbot.waitUntil(lambda: world.model.row_of(new_id) is not None, timeout=LONG)

    # Edit in the detail panel: saved on the server, seen by the other client.
    row = world.model.row_of(new_id)
    qtbot.waitUntil(lambda: world.model.unit_at(row) is not None, timeout=LONG)
    world.select_row(row)
    qtbot.waitUntil(lambda: world.detail.unit is not None and world.detail.unit.id == new_id)
    world.detail.start_edit()
    world.detail.text.setPlainText("Maya keeps two lemon trees on her balcony.")
    with qtbot.waitSignal(window.state.changed, timeout=LONG):
        world.detail.save_button.click()
    wait_idle(qtbot, window.runner, LONG)
    assert other.unit(new_id).text == "Maya keeps two lemon trees on her balcony."
    qtbot.waitUntil(lambda: world.detail.unit.text == "Maya keeps two lemon trees on her balcony.")

    # Curate: retract an entity (its preview asked of the server), then undo it.
    class Accept(entities_module.RetractEntityDialog):
        def exec(self):
            return QDialog.DialogCode.Accepted

    monkeypatch.setattr(entities_module, "RetractEntityDialog", Accept)
    entities = window.show_pane("entities")
    qtbot.waitUntil(lambda: entities.model.rowCount() > 0, timeout=LONG)
    entity = other.entities()[0]
    assert entities.select_entity(entity.name)
    world_before = other.count(Network.WORLD)
    with qtbot.waitSignal(window.state.changed, timeout=LONG):
        entities.retract_button.click()
    wait_idle(qtbot, window.runner, LONG)
    assert entity.id not in {e.id for e in other.entities()}
    assert other.count(Network.WORLD) < world_before
    qtbot.waitUntil(lambda: world.model.rowCount() == other.count(Network.WORLD), timeout=LONG)
    with qtbot.waitSignal(window.state.changed, timeout=LONG):
        window.undo()
    wait_idle(qtbot, window.runner, LONG)
    assert entity.id in {e.id for e in other.entities()}
    qtbot.waitUntil(lambda: world.model.rowCount() == world_before, timeout=LONG)

    # The audit pane lists them, from the server.
    audit = window.show_pane("audit")
    qtbot.waitUntil(lambda: bool(audit.entries) and audit.entries[0].action == "undo", timeout=LONG)
    assert "retract_entity" in [e.action for e in audit.entries]

    # The recall debugger: the four channels, from the server's trace.
    debugger = window.show_pane("recall")
    debugger.query.setText("Where did Maya move?")
    with qtbot.waitSignal(debugger.recalled, timeout=LONG):
        debugger.run_button.click()
    assert debugger.stack.currentWidget() is debugger.body
    assert "facts packed" in debugger.status.text()

    # Reflect: two dispositions compared side by side by the server; one committed.
    reflect = window.show_pane("reflect")
    qtbot.waitUntil(lambda: reflect.profile is not None, timeout=LONG)
    profiles = [Disposition(5, 5, 1, 0.8), Disposition(1, 1, 5, 0.8)]
    reflect.set_profiles(profiles)
    reflect.query.setText("What went wrong with Atlas in June?")
    with qtbot.waitSignal(reflect.compared, timeout=LONG):
        reflect.compare_button.click()
    assert [c.reflection.disposition for c in reflect.columns] == profiles
    assert all(c.answer.toPlainText().strip() for c in reflect.columns)
    with qtbot.waitSignal(reflect.committed, timeout=LONG):
        reflect.columns[0].commit_button.click()
    assert [r.disposition for r in other.reflections()] == [profiles[0]]

    # Snapshots: exported on the server, downloaded here; diffed with the live bank.
    snapshots = window.show_pane("snapshots")
    path = tmp_path / "remote.engram"
    snapshots.export_to(path)
    qtbot.waitUntil(lambda: snapshots.last_manifest is not None, timeout=LONG)
    assert path.stat().st_size > 0
    assert snapshots.last_manifest.counts["units"] == other.stats().total_units
    other.add_memory("Maya started learning Portuguese.", network=Network.WORLD)
    snapshots.side_a.setText(str(path))
    snapshots.compare()
    qtbot.waitUntil(lambda: snapshots.last_diff is not None, timeout=LONG)
    assert [u.text for u in snapshots.last_diff.units_added] == [
        "Maya started learning Portuguese."
    ]

    # Timelines, graph, documents: each reads the remote bank.
    timelines = window.show_pane("timelines")
    opinions = other.opinions()
    qtbot.waitUntil(
        lambda: {o.id for o in timelines.opinions} == {o.id for o in opinions}, timeout=LONG
    )
    documents = window.show_pane("documents")
    qtbot.waitUntil(lambda: documents.table.rowCount() == len(other.documents()), timeout=LONG)
    graph = window.show_pane("graph")
    with qtbot.waitSignal(graph.graph.layout_ready, timeout=LONG):
        graph.show_query("What went wrong with Atlas in June?")
    assert graph.neighbourhood.packed and graph.graph.view.graph is graph.neighbourhood.graph
    player = graph.graph.player  # the spreading activation, replayed from the server's trace
    assert player.frame_count > 1
    player.seek(0)
    player.step()  # one activation step further, as the Step button does
    assert 0 < player.frame <= player.frames_per_step

    # Ingest: a file uploaded as conversations, with progress, into the server's bank.
    ingest = window.show_pane("ingest")
    documents_before = len(other.documents())
    ingest.add_files([DEMO / "01-march-kickoff.txt"])
    ingest.mode.setCurrentIndex(ingest.mode.findData("rules"))
    ingest.start()
    qtbot.waitUntil(lambda: not ingest.running, timeout=LONG)
    assert len(other.documents()) == documents_before + 1
    qtbot.waitUntil(lambda: documents.table.rowCount() == documents_before + 1, timeout=LONG)


def test_the_open_bank_is_not_served_again_by_the_studio(qtbot, studio):
    window, bank = studio
    assert window.server._bank is None  # its own server serves it
    assert window.state.engine_for() is window.state.remotes.engine(window.state.bank_url)
    assert window.state.engine_for() is not window.engine


@pytest.fixture
def network(server):
    """The network between the studio and the server, which the test can cut."""
    from urllib.parse import urlsplit

    parts = urlsplit(server)
    proxy = Proxy((parts.hostname, parts.port))
    yield proxy
    proxy.close()


def test_a_dropped_connection_is_said_reconnects_and_loses_nothing_typed(
    qtbot, make_window, network, other, no_keyring
):
    window = make_window()
    dialog = connect(qtbot, window, network.url)
    qtbot.waitUntil(lambda: closed(dialog), timeout=LONG)
    open_remote(qtbot, window, network.url)
    world = window.show_pane("world")
    qtbot.waitUntil(
        lambda: world.model.counted and world.model.unit_at(0) is not None, timeout=LONG
    )
    world.select_row(0)
    unit = world.model.unit_at(0)
    qtbot.waitUntil(lambda: world.detail.unit is not None and world.detail.unit.id == unit.id)
    world.detail.start_edit()
    typed = unit.text + " (checked with Maya on the phone)"
    world.detail.text.setPlainText(typed)

    # The cable is pulled: the studio says so, above the panes and in the status bar.
    network.cut()

    def said_lost() -> bool:  # (between two attempts: each retry says "reconnecting")
        return (
            window.follower.status == "lost"
            and window.banner.isVisible()
            and "Lost the connection to 127.0.0.1:" in window.banner.text.text()
            and window.remote_label.text().endswith("connection lost")
        )

    qtbot.waitUntil(said_lost, timeout=LONG)

    # Saving now fails, says so, and can be retried; the edit stays as typed.
    world.detail.save_button.click()
    qtbot.waitUntil(lambda: bool(window.banner.failed), timeout=LONG)
    assert "Not saved" in window.banner.text.text() and window.banner.retry_writes.isVisible()
    assert world.detail.editing and world.detail.text.toPlainText() == typed
    assert other.unit(unit.id).text == unit.text  # nothing reached the server

    # Another client writes while the studio is cut off.
    added = first_in_world(other, "In 2020 Maya booked the first Lisbon offsite.")
    [new_id] = added.added[Kind.UNIT]

    # The network is back: reconnected, every pane reloaded (the missed write is
    # there), and the edit in progress is still in progress, as typed.
    network.restore()
    window.banner.retry_connect.click()
    qtbot.waitUntil(lambda: window.follower.status == "live", timeout=LONG)
    qtbot.waitUntil(lambda: world.model.row_of(new_id) is not None, timeout=LONG)
    assert window.remote_label.text().endswith("· live")
    assert world.detail.editing and world.detail.text.toPlainText() == typed
    assert window.banner.isVisible()  # the unsaved edit is still offered

    # "Send again" sends the edit that failed: saved now, and the banner has nothing left to say.
    with qtbot.waitSignal(window.state.changed, timeout=LONG):
        window.banner.retry_writes.click()
    wait_idle(qtbot, window.runner, LONG)
    assert other.unit(unit.id).text == typed
    qtbot.waitUntil(lambda: not world.detail.editing, timeout=LONG)
    assert not window.banner.isVisible()


def test_an_upload_ingest_shows_the_servers_progress_and_a_cancel_stops_it_there(
    qtbot, studio, other, tmp_path
):
    window, bank = studio
    # Long enough that the server is still extracting when the cancel arrives.
    lines = ["## 2025-09-01 09:00"]
    for i in range(400):
        lines.append(f"Maya: Sprint note {i}: the Atlas importer handled batch {i} in Lisbon.")
        lines.append(f"Priya: Thanks Maya, I logged batch {i} for the Beacon dashboard.")
    long_chat = tmp_path / "long-sprint.txt"
    long_chat.write_text("\n".join(lines) + "\n", "utf-8")
    documents_before, units_before = len(other.documents()), other.count()

    ingest = window.show_pane("ingest")
    ingest.add_files([long_chat])
    ingest.mode.setCurrentIndex(ingest.mode.findData("rules"))
    ingest.start()
    job = ingest.job
    progress = []
    job.progressed.connect(lambda done, total, message: progress.append((done, total)))
    qtbot.waitUntil(lambda: any(done > 0 for done, _ in progress), timeout=LONG)  # the server's
    ingest.cancel_button.click()
    qtbot.waitUntil(lambda: not ingest.running, timeout=LONG)
    wait_idle(qtbot, window.runner, LONG)
    assert ingest.files[0].status == "cancelled — nothing of it was written"
    assert len(other.documents()) == documents_before and other.count() == units_before
