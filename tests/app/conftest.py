"""Fixtures for studio tests: offscreen Qt, temporary QSettings, real banks on disk.

QT_QPA_PLATFORM is set before anything imports Qt. QSettings go to a
temporary folder (never the user's), cleared before each test. Banks are real
(DuckDB, LanceDB, Tantivy under tmp_path); units get precomputed random unit
vectors so most tests never load the embedding model. Tests that edit text or
ingest use the session's one embedder (the process-wide shared model).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import shutil  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from datetime import datetime, timedelta  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6.QtCore import QCoreApplication, QEvent, QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from core import Bank, Engine, Network, NewUnit  # noqa: E402

DIM = 384
REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"


@pytest.fixture(scope="session", autouse=True)
def _temporary_qsettings(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("qsettings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))


@pytest.fixture(autouse=True)
def _studio_app(qapp: QApplication) -> Iterator[None]:
    from app import collector

    collector.install(qapp)  # as the studio does: no Qt object freed on a worker thread
    qapp.setOrganizationName("Engram")
    qapp.setApplicationName("Engram Studio")
    QSettings().clear()
    # The studio serves by default; a test that wants its server turns it on.
    QSettings().setValue("serving/enabled", False)
    yield
    QSettings().clear()


@pytest.fixture(autouse=True)
def _states_deleted_on_the_ui_thread(monkeypatch) -> Iterator[None]:
    """A StudioState a test makes without a parent is deleted here, on the UI thread,
    after the test's own fixtures have stopped its runner. It and its activity feed
    refer to each other (the feed is its Qt child and keeps `.state`), so Python
    frees them only in a cyclic collection, which runs on whichever thread is
    allocating: often a runner thread of a later test, where destroying QObjects
    (the feed's timer) is not allowed. Workers crashed with a segfault in Qt's event
    loop in test_reflect_pane, test_timelines and test_graph_pane, which make such
    states; the window's state has the window as its parent and is not affected."""
    import shiboken6

    from app.state import StudioState

    made: list[StudioState] = []
    init = StudioState.__init__

    def recording_init(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        if self.parent() is None:
            made.append(self)

    monkeypatch.setattr(StudioState, "__init__", recording_init)
    yield
    for state in made:
        if shiboken6.isValid(state):
            state.activity.close()
            shiboken6.delete(state)


@pytest.fixture(scope="session")
def embedder():
    """The embedding model, loaded once per session (shared with the engine's lazy default)."""
    from core.providers.embedder import shared_embedder

    return shared_embedder()


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def make_units(
    n: int,
    networks: Sequence[Network] = tuple(Network),
    start: datetime = datetime(2025, 3, 1),
    seed: int = 0,
    text: str = "Fact {i} about the Atlas project",
) -> list[NewUnit]:
    vectors = unit_vectors(n, seed)
    out = []
    for i in range(n):
        network = networks[i % len(networks)]
        out.append(
            NewUnit(
                text=text.format(i=i),
                network=network,
                occurred_start=start + timedelta(hours=i),
                confidence=round(0.2 + 0.6 * (i % 5) / 4, 2)
                if network == Network.OPINION
                else None,
                vector=tuple(vectors[i].tolist()),
            )
        )
    return out


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine(tmp_path / "home") as engine:
        yield engine


@pytest.fixture
def small_bank(engine: Engine) -> Bank:
    """240 units, 60 per network, hourly from 1 March 2025."""
    bank = engine.create_bank("Small")
    bank.add_units(make_units(240))
    return bank


def process_deletes() -> None:
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QCoreApplication.processEvents()


@pytest.fixture
def make_window(qtbot, engine):
    """Build main windows (on the `engine` fixture unless given another); each is
    closed (cancelling and joining its work) after the test, before any engine closes."""
    from app.window import MainWindow

    windows = []
    default = engine

    def make(start: bool = False, engine: Engine | None = None) -> MainWindow:
        window = MainWindow(engine or default)
        window.show()
        windows.append(window)
        if start:
            window.start()
        return window

    yield make
    for window in windows:
        try:
            if not window.closed:
                window.close()
        except RuntimeError:  # already deleted by the test
            pass
    process_deletes()


def wait_idle(qtbot, runner, timeout: int = 20_000) -> None:
    qtbot.waitUntil(lambda: not runner.busy, timeout=timeout)


@pytest.fixture(scope="session")
def demo_subset_home(tmp_path_factory: pytest.TempPathFactory, worker_id: str, embedder) -> Path:
    """A data folder holding a "Demo" bank ingested (rules mode) from two demo files.

    Built once per run, by whichever xdist worker asks first (the others wait on
    the lock, then reuse it: the build takes seconds); tests copy it
    (`demo_engine`) so each gets its own."""
    from filelock import FileLock

    # Under xdist the workers' folders share this run's base folder; alone, the
    # parent of ours would be shared with other runs (and their older code).
    run = tmp_path_factory.getbasetemp()
    shared = run if worker_id == "master" else run.parent
    home, built = shared / "demo-home", shared / "demo-home.built"
    with FileLock(str(shared / "demo-home.lock")):
        if not built.exists():
            shutil.rmtree(home, ignore_errors=True)  # a build that failed midway
            with Engine(home, embedder=embedder) as engine:
                bank = engine.create_bank("Demo", agent_name="Juniper")
                for name in ("03-may-beacon-beta.json", "06-june-atlas-incident.jsonl"):
                    bank.ingest(DEMO / name, mode="rules")
                bank.process_jobs()
            built.touch()
    return home


@pytest.fixture
def demo_engine(tmp_path: Path, demo_subset_home: Path, embedder) -> Iterator[Engine]:
    home = tmp_path / "demo-home"
    shutil.copytree(demo_subset_home, home)
    with Engine(home, embedder=embedder) as engine:
        yield engine


@pytest.fixture
def runner(qapp):
    """A bare runner (no window) for the tests of the runner and of models on it."""
    from app.runner import Runner

    runner = Runner()
    yield runner
    runner.shutdown()
    runner.deleteLater()
