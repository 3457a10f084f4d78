"""Studio start-up and first-page times (issue 7's measurements).

    .venv/bin/python benchmarks/studio_start.py [--home DIR] [--runs 3] [--demo-only]

Every time is also given as a ratio against `python -c pass` measured in the
same run (the machine is shared: ratios compare across runs, seconds do not).

Measures, offscreen:
- cold start on the demo bank and on a 100,000-unit bank, a fresh Python
  process per run, each time from interpreter start:
  - window shown: built and shown (before the bank is open);
  - interactive: the window has handled input, a key press posted to it
    after it was shown (seen by an event filter when the event loop delivers
    it), so the window answers, it is not just painted;
  - bank open, first page: the bank opened in the runner and the first page
    of the World pane in its model;
  - longest stall: the longest the event loop went without running a 5 ms
    timer between the window shown and the first page (how well the window
    keeps answering while the stores and the bank load off the UI thread);
  - CPU: the process's CPU seconds (all threads) at interactive and at the
    first page (less sensitive to a shared machine's load than wall time);
- time to the first page of a network pane at 100,000 units: from handing the
  open bank to the pane to its first 100 rows being in the model, then again
  after sorting by text (a new query on the whole network).

The demo bank (rules mode) and the 100k bank (random unit vectors) are built
under --home on the first run and reused after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

STARTED = time.perf_counter()  # as early as possible: the child measures from here

# --repo measures another checkout (e.g. before a change); children inherit it.
REPO = Path(os.environ.get("ENGRAM_BENCH_REPO") or Path(__file__).resolve().parents[1])
DEMO_NAME = "Demo: Juniper"
LARGE_NAME = "Large 100k"
LARGE_UNITS = 100_000


def python_baseline(runs: int) -> float:
    """Median wall time of `python -c pass`: the floor of any cold start."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def ensure_banks(home: Path, large: bool = True) -> None:
    sys.path.insert(0, str(REPO))
    from app.demo import build_demo_bank
    from core import Engine, Network, NewUnit

    with Engine(home / "demo") as engine:
        if DEMO_NAME not in [b.name for b in engine.banks()]:
            print("building the demo bank (rules mode)…", file=sys.stderr)
            build_demo_bank(engine)
    if not large:
        return
    with Engine(home / "large") as engine:
        if LARGE_NAME not in [b.name for b in engine.banks()]:
            import numpy as np

            print("building the 100,000-unit bank…", file=sys.stderr)
            bank = engine.create_bank(LARGE_NAME)
            rng = np.random.default_rng(0)
            networks = list(Network)
            start = datetime(2024, 1, 1)
            for first in range(0, LARGE_UNITS, 10_000):
                v = rng.standard_normal((10_000, 384)).astype(np.float32)
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                bank.add_units(
                    [
                        NewUnit(
                            text=f"Unit {first + i}: a note about topic {(first + i) % 97}",
                            network=networks[(first + i) % 4],
                            occurred_start=start + timedelta(minutes=first + i),
                            vector=tuple(v[i].tolist()),
                        )
                        for i in range(10_000)
                    ]
                )


def child(home: Path, bank_name: str) -> None:
    """One cold start; prints JSON timings (seconds since interpreter start)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(REPO))
    import tempfile

    from PySide6.QtCore import QCoreApplication, QEvent, QObject, QSettings, Qt, QTimer
    from PySide6.QtGui import QKeyEvent
    from PySide6.QtWidgets import QApplication

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
    app = QApplication([])
    t_qt = time.perf_counter()
    from app import theme
    from app.window import MainWindow
    from core import Engine

    theme.apply_theme(app, "light")
    engine = Engine(home)
    window = MainWindow(engine)
    window.resize(1440, 900)
    window.show()
    t_shown = time.perf_counter()
    QSettings().setValue("window/bank", bank_name)
    window.start()
    pane = window.show_pane("world")
    marks: dict[str, float] = {}

    class InputSeen(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
            if event.type() == QEvent.Type.KeyPress and "interactive" not in marks:
                marks["interactive"] = time.perf_counter()
                marks["cpu_interactive"] = time.process_time()
            return False

    seen = InputSeen()
    window.installEventFilter(seen)
    # Posted, not sent: handled only when the event loop gets to it.
    key = QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_F24, Qt.KeyboardModifier.NoModifier)
    QCoreApplication.postEvent(window, key)

    stall = {"last": time.perf_counter(), "longest": 0.0}

    def tick() -> None:
        now = time.perf_counter()
        stall["longest"] = max(stall["longest"], now - stall["last"])
        stall["last"] = now

    ticker = QTimer()
    ticker.setInterval(5)
    ticker.timeout.connect(tick)
    ticker.start()

    def poll() -> None:
        if "opened" not in marks and window.state.bank is not None:
            marks["opened"] = time.perf_counter()
        if "first_page" not in marks and pane.model.unit_at(0) is not None:
            marks["first_page"] = time.perf_counter()
            marks["cpu_first_page"] = time.process_time()
            marks["rows"] = pane.model.rowCount()
            tick()
            ticker.stop()
            QTimer.singleShot(0, app.quit)
            return
        QTimer.singleShot(1, poll)

    QTimer.singleShot(0, poll)
    app.exec()
    import shiboken6

    if shiboken6.isValid(window):  # quit() may already have closed (and deleted) it
        window.close()
    print(
        json.dumps(
            {
                "qt_ready": t_qt - STARTED,
                "window_shown": t_shown - STARTED,
                "bank_open": marks["opened"] - STARTED,
                "first_page": marks["first_page"] - STARTED,
                "interactive": marks["interactive"] - STARTED,
                "longest_stall": stall["longest"],
                "cpu_interactive": marks["cpu_interactive"],
                "cpu_first_page": marks["cpu_first_page"],
                "rows": marks["rows"],
            }
        )
    )


def first_page_at_100k(home: Path, runs: int) -> dict[str, float]:
    """In-process: an open 100k bank handed to a network pane, to its first page."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.runner import Runner
    from app.unit_model import UnitTableModel
    from core import Engine, Network

    app = QApplication.instance() or QApplication([])
    engine = Engine(home)
    bank = engine.open_bank(LARGE_NAME)
    runner = Runner()
    results: dict[str, list[float]] = {"open": [], "sorted_by_text": []}

    def wait_for(model: UnitTableModel) -> None:
        loop = QEventLoop()
        model.page_loaded.connect(loop.quit)
        QTimer.singleShot(60_000, loop.quit)
        loop.exec()
        model.page_loaded.disconnect(loop.quit)

    for _ in range(runs):
        model = UnitTableModel(runner, Network.WORLD)
        t = time.perf_counter()
        model.set_bank(bank)
        wait_for(model)
        results["open"].append(time.perf_counter() - t)
        t = time.perf_counter()
        model.set_order("text", descending=True)
        wait_for(model)
        results["sorted_by_text"].append(time.perf_counter() - t)
        assert model.unit_at(0) is not None
    runner.shutdown()
    engine.close()
    app.processEvents()
    return {k: statistics.median(v) for k, v in results.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--home", default=os.path.join(os.path.expanduser("~"), ".cache", "engram-bench")
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repo", help="checkout to measure (default: this one)")
    parser.add_argument("--demo-only", action="store_true", help="skip the 100,000-unit bank")
    parser.add_argument("--child", nargs=2, metavar=("HOME", "BANK"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(Path(options.child[0]), options.child[1])
        return 0
    if options.repo:
        global REPO
        REPO = Path(options.repo).resolve()
        os.environ["ENGRAM_BENCH_REPO"] = str(REPO)
    home = Path(options.home)
    home.mkdir(parents=True, exist_ok=True)
    ensure_banks(home, large=not options.demo_only)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HF_HUB_OFFLINE": "1"}
    baseline = python_baseline(options.runs)
    print(f"python -c pass, median of {options.runs}: {baseline:.3f} s")
    banks = [("demo bank", "demo", DEMO_NAME), ("100,000-unit bank", "large", LARGE_NAME)]
    for label, sub, bank in banks[:1] if options.demo_only else banks:
        runs = []
        for _ in range(options.runs):
            t = time.perf_counter()
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(home / sub), bank],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            wall = time.perf_counter() - t
            timing = json.loads(out.stdout.strip().splitlines()[-1])
            timing["wall"] = wall
            runs.append(timing)
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"cold start, {label} ({int(med['rows']):,} world rows), median of {options.runs}: "
            f"Qt up {med['qt_ready']:.2f} s, window shown {med['window_shown']:.2f} s, "
            f"interactive (input handled) {med['interactive']:.2f} s, bank open "
            f"{med['bank_open']:.2f} s, first page {med['first_page']:.2f} s; longest stall "
            f"while loading {med['longest_stall'] * 1000:.0f} ms; CPU {med['cpu_interactive']:.2f} s "
            f"to interactive, {med['cpu_first_page']:.2f} s to the first page (process wall "
            f"time {med['wall']:.2f} s)\n  interactive = {med['interactive'] / baseline:.1f} x, "
            f"first page = {med['first_page'] / baseline:.1f} x python -c pass"
        )
    if options.demo_only:
        return 0
    sys.path.insert(0, str(REPO))
    page = first_page_at_100k(home / "large", options.runs)
    print(
        f"first page of the World pane at 100,000 units (25,000 world), median of {options.runs}: "
        f"{page['open'] * 1000:.0f} ms from an open bank; {page['sorted_by_text'] * 1000:.0f} ms "
        "after sorting by text"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
