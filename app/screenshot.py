"""`engram screenshot --out DIR`: every pane on the demo bank, rendered offscreen to PNG.

Without --home the demo bank is built in a temporary data folder (offline
rules mode) and a few curation actions are made there so the audit and
snapshot-diff panes have something to show; with --home an existing demo
bank is only read. The user's own QSettings are never touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

SIZE = (1440, 900)

# A short extra conversation ingested through the Ingest pane for its picture.
EXTRA_CONVERSATION = """## 2025-08-28 10:00
Maya: Juniper, can you book the Lisbon offsite venue for 10 to 12 September?
Juniper: I booked the LX Factory studio for the offsite because it fits all four of you and has a projector.
Priya: I think a half-day design jam on the first day would help Beacon 2.1 planning.
Juniper: I added the design jam to the first morning and moved the Atlas phase-two review to the afternoon.
Tomás: I'm back from leave on 18 August, so I can present the Atlas ingestion roadmap.
Leo: I'll bring the push-notification metrics from the Beacon 2.0 launch.
"""


HELP = "render every pane of the studio to PNG"


def _arguments(parser: argparse.ArgumentParser, home_default=None) -> None:
    parser.add_argument("--out", default="docs/screenshots", help="folder for the PNG files")
    parser.add_argument(
        "--home",
        default=home_default,
        help="data folder with the demo bank (default: build one in a temporary folder)",
    )
    parser.add_argument("--theme", choices=("light", "dark"), default="light")
    parser.add_argument("--size", default=f"{SIZE[0]}x{SIZE[1]}", help="window size, WIDTHxHEIGHT")
    parser.add_argument(
        "--animate",
        action="store_true",
        help="only the graph pane: its spreading activation as numbered frames "
        "(graph-frame-NNN.png, two per wave), to check the animation without a display",
    )
    parser.add_argument(
        "--query", default="", help="with --animate: the query to recall (default: the demo's)"
    )


def register(sub: argparse._SubParsersAction) -> None:
    """`engram screenshot`, in the entry point's parser tree."""
    p = sub.add_parser("screenshot", help=HELP, description=HELP.capitalize() + ".")
    # SUPPRESS: `engram --home X screenshot` keeps X (a subparser default would overwrite it).
    _arguments(p, home_default=argparse.SUPPRESS)
    p.set_defaults(standalone=run)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="engram screenshot", description=HELP.capitalize() + ".")
    _arguments(parser)
    return parser.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse_args(sys.argv[1:] if argv is None else argv))


def run(options: argparse.Namespace) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    width, height = (int(v) for v in options.size.lower().split("x"))
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    scratch = Path(tempfile.mkdtemp(prefix="engram-screenshot-"))
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(scratch / "qsettings")
    )
    app = QApplication.instance() or QApplication(["engram-screenshot"])

    from app import collector, theme
    from app.demo import DEMO_NAME
    from app.window import APPLICATION, ORGANIZATION, MainWindow
    from core import Engine

    collector.install(app)
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    theme.apply_theme(app, options.theme)
    temporary = options.home is None
    engine = Engine(options.home or scratch / "home")
    window = MainWindow(engine)
    window.resize(width, height)
    window.show()
    window.start(open_last=False)
    idle = _idler(app, window)
    shots: list[Path] = []
    if DEMO_NAME in [b.name for b in engine.banks()]:
        window.set_bank(engine.open_bank(DEMO_NAME))
    else:  # built as on a first start, pictured a third of the way in
        print(f"building the demo bank “{DEMO_NAME}” (offline rules)…", file=sys.stderr)
        first_start = _first_start(app, window, out / "00-first-start.png")
        if first_start is not None:
            shots.append(first_start)
    idle()
    if options.animate:
        shots = animate(window, idle, out, options.query)
        window.close()
        app.processEvents()
        shutil.rmtree(scratch, ignore_errors=True)
        for path in shots:
            print(path)
        return 0
    if temporary:
        _curate(window, idle, scratch)
        _agents(window, idle)

    def shoot(name: str, widget=None) -> None:
        idle()
        path = out / f"{name}.png"
        (widget or window).grab().save(str(path))
        shots.append(path)

    for number, pane in enumerate(window.panes, start=1):
        window.show_pane(pane.slug)
        idle()
        _prepare(pane, window, idle, scratch, temporary)
        # A pane can stage itself for its picture (e.g. a graph mid-animation).
        prepare = getattr(pane, "prepare_screenshot", None)
        if callable(prepare):
            prepare(idle)
        shoot(f"{number:02d}-{pane.slug}")

    if temporary:
        _replayed(window, idle, shoot)
    _dialogs(window, idle, shoot)
    _remote(window, idle, shoot)

    # An empty bank, to show the panes' empty states.
    if temporary:
        window.create_bank("Empty bank")
        idle()
        window.show_pane("world")
        shoot("empty-bank")

    window.close()  # joins the runner and closes the banks
    app.processEvents()
    shutil.rmtree(scratch, ignore_errors=True)
    for path in shots:
        print(path)
    return 0


def animate(window, idle: Callable[[], None], out: Path, query: str = "") -> list[Path]:
    """The graph pane's replay of a recall, frame by frame: the seeds, then each
    step half-way (energy on its links) and complete. Returns the files written."""
    pane = window.pane("graph")
    window.show_pane("graph")
    idle()
    if query:
        pane.show_query(query)
    else:
        pane.prepare_screenshot(idle)
    idle()
    player = pane.graph.player
    player.pause()  # the frames are sought one by one
    per_step = player.frames_per_step
    frames = sorted({*range(0, player.last_frame + 1, max(per_step // 2, 1)), player.last_frame})
    written: list[Path] = []
    for number, frame in enumerate(frames):
        player.seek(frame)
        idle()
        path = out / f"graph-frame-{number:03d}.png"
        window.grab().save(str(path))
        written.append(path)
    return written


def _first_start(app, window, path: Path) -> Path | None:
    """Build the demo bank in the window as a first start does (app/demo.py), save
    the window once the build is a third done (the empty states say it is being
    built), and return when it is open. The picture's path, or None if the build
    was over before a picture was taken."""
    from PySide6.QtCore import QEventLoop

    from app.demo import start_demo_build

    printer = _printer()
    taken: list[Path] = []

    def built(building) -> None:
        if building is None:
            return
        printer(building.done, building.total, building.message)
        if not taken and building.total and building.done * 3 >= building.total:
            app.processEvents()  # the labels' new text laid out before the grab
            window.grab().save(str(path))
            taken.append(path)

    window.state.building_changed.connect(built)
    start_demo_build(window)
    while window.state.bank is None and (window.runner.busy or window.state.building):
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.02)  # processEvents returns at once when nothing is pending
    window.state.building_changed.disconnect(built)
    if window.state.bank is None:
        raise RuntimeError("the demo bank could not be built (see the messages above)")
    return taken[0] if taken else None


def _printer() -> Callable[[int, int, str], None]:
    last = [-1]

    def progress(done: int, total: int, message: str) -> None:
        percent = int(100 * done / total) if total else 0
        if percent // 10 != last[0]:
            last[0] = percent // 10
            print(f"  {percent:3d}% {message}", file=sys.stderr)

    return progress


def _idler(app, window) -> Callable[[], None]:
    from PySide6.QtCore import QEventLoop

    def idle(timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        quiet = 0
        # Idle = the runner has nothing and a few event-loop passes changed nothing.
        while time.monotonic() < deadline and quiet < 5:
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
            quiet = 0 if window.runner.busy else quiet + 1
            if window.runner.busy:
                time.sleep(0.02)

    return idle


def _curate(window, idle: Callable[[], None], scratch: Path) -> None:
    """A few undoable curation actions in the temporary demo, for the audit and diff panes."""
    bank = window.state.bank
    snapshot = scratch / "before-curation.engram"
    bank.export_snapshot(snapshot)
    entities = {e.name: e for e in bank.entities()}
    # Typical corrections of the rules extraction, where it left them to make.
    if "Northwind" in entities and "Northwind Analytics" in entities:
        source, target = entities["Northwind"].id, entities["Northwind Analytics"].id
        window.runner.run_op(lambda: bank.merge_entities(source, target))
    if "Beacon 2" in entities and "Beacon 2.0" not in entities:
        beacon = entities["Beacon 2"].id
        window.runner.run_op(lambda: bank.rename_entity(beacon, "Beacon 2.0"))
    opinions = bank.units("opinion", order="confidence", limit=1)
    if opinions:
        unit = opinions[0]
        lower = 0.25 if unit.confidence != 0.25 else 0.3
        window.runner.run_op(lambda: bank.edit_unit(unit.id, confidence=lower))
    idle()
    snapshots = window.pane("snapshots")
    snapshots.side_a.setText(str(snapshot))


# What two agents ask the demo bank, for the Activity pane's picture.
AGENT_RECALLS = (
    ("support-bot", "http", "Where is the Lisbon office team based?"),
    ("support-bot", "http", "What caused the Atlas outage in June?"),
    ("claude-desktop", "mcp", "Who leads the Beacon beta?"),
)


def _agents(window, idle: Callable[[], None]) -> None:
    """Agents at work on the temporary demo: recalls and a retain under their own
    names, as the studio's server would journal them (Activity, live marks)."""
    from core import Caller, acting_as

    bank = window.state.bank
    for actor, transport, query in AGENT_RECALLS:
        with acting_as(Caller(actor, transport)):
            bank.recall(query, budget_tokens=512)
    with acting_as(Caller("support-bot", "http")):
        change = bank.add_memory("Priya booked the Rotterdam venue for the September offsite.")
    window.state.broadcast(change)
    idle()


def _replayed(window, idle: Callable[[], None], shoot: Callable[..., None]) -> None:
    """The recall debugger on an agent's recorded recall, replayed after a curator
    retracted an entity it leaned on (taken back afterwards)."""
    bank = window.state.bank
    recalls = [e for e in bank.activity(kind="recall") if e.actor == "support-bot"]
    if not recalls:
        return
    entry = recalls[-1]  # the first asked: the Lisbon office
    debugger = window.show_pane("recall")
    debugger.show_recorded(entry)
    idle()
    shoot("recall-recorded")
    try:
        lisbon = bank.resolve_entity("Lisbon")
    except Exception:  # noqa: BLE001 - the demo without it: no replay to show
        return
    window.runner.run_op(lambda: bank.retract_entity(lisbon))
    idle()
    debugger.replay_now()
    idle()
    shoot("recall-replayed")
    window.runner.run_op(bank.undo)
    idle()


def _prepare(pane, window, idle: Callable[[], None], scratch: Path, temporary: bool) -> None:
    from app.panes.entities import EntitiesPane
    from app.panes.ingest import IngestPane
    from app.panes.network import NetworkPane
    from app.panes.snapshots import SnapshotsPane

    if isinstance(pane, NetworkPane):
        if pane.model.rowCount() > 2:
            pane.select_row(2)
            idle()
    elif isinstance(pane, EntitiesPane):
        # An entity with a merge hint, so the page shows one; else Priya.
        hinted = [h.source_id for h in pane.hints]
        if not (hinted and pane.select_entity_id(hinted[0])) and not pane.select_entity("Priya"):
            pane.table.selectRow(0)
        idle()
    elif isinstance(pane, IngestPane) and temporary:
        extra = scratch / "09-august-offsite.txt"
        extra.write_text(EXTRA_CONVERSATION, "utf-8")
        pane.add_files([extra])
        pane.mode.setCurrentIndex(pane.mode.findData("rules"))
        pane.start()
        idle()
    elif isinstance(pane, SnapshotsPane) and temporary:
        pane.compare()
        idle()
    elif callable(getattr(pane, "prepare_screenshot", None)):
        pane.prepare_screenshot(idle)  # graph, recall debugger, reflect, timelines


def _dialogs(window, idle: Callable[[], None], shoot: Callable[..., None]) -> None:
    from app.banks import DeleteBankDialog
    from app.window import ShortcutsDialog

    dialog = ShortcutsDialog(window.shortcut_actions, window)
    dialog.show()
    shoot("dialog-shortcuts", dialog)
    dialog.close()
    dialog.deleteLater()
    name = window.state.bank.name if window.state.bank else "Demo: Juniper"
    dialog = DeleteBankDialog(name, window)
    dialog.confirm.setText(name[:6])
    dialog.show()
    shoot("dialog-delete-bank", dialog)
    dialog.close()
    dialog.deleteLater()
    dialog = window.ask_connect()
    dialog.url.setText("https://memory.example.com:8888")
    dialog.token.setText("x" * 40)
    dialog.ca_file.setText(str(Path.home() / "engram-ca.pem"))
    shoot("dialog-connect", dialog)
    dialog.close()


def _remote(window, idle: Callable[[], None], shoot: Callable[..., None]) -> None:
    """The demo bank as a studio on another machine sees it: a copy served here on
    loopback by a second engine (as `engram serve` would serve it), connected to
    through File → Connect and opened remote; then that server stops, and the
    banner says the connection is lost."""
    import secrets

    from app.connections import Connection, RemoteListing
    from core import Engine, ServedBanks, start_server

    bank = window.state.bank
    if bank is None:
        return
    folder = Path(tempfile.mkdtemp(prefix="engram-screenshot-remote-"))
    bank.export_snapshot(folder / "copy.engram")
    engine = Engine(folder / "home")
    served = ServedBanks(engine, open_on_demand=False)
    copy = engine.import_snapshot(folder / "copy.engram")
    served.adopt(copy)
    token = secrets.token_urlsafe(24)
    handle = start_server(served, "127.0.0.1", 0, token)
    try:
        window.connect_to(Connection(handle.url), token, remember=False)
        idle()
        server = window.state.remotes.servers.get(handle.url)
        if server is None or not server.banks:
            return
        window.open_bank(RemoteListing(handle.url, server.banks[0]))
        deadline = time.monotonic() + 60
        while window.follower is None or window.follower.status != "live":
            idle(1.0)
            if time.monotonic() > deadline:
                return
        pane = window.show_pane("world")
        idle()
        if pane.model.rowCount() > 2:
            pane.select_row(2)
        shoot("remote-bank")
        handle.stop()
        while window.follower.status == "live" and time.monotonic() < deadline:
            idle(1.0)
        shoot("remote-connection-lost")
    finally:
        handle.stop()
        window.set_bank(None)
        served.close()
        copy.close()
        engine.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
