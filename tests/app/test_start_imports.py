"""The studio's window appears before the stores load.

Building and showing the window imports none of DuckDB, LanceDB, Tantivy,
onnxruntime or pyqtgraph: panes are built when their tab is first shown and
the bank opens in the runner, so the window answers while those load (issue
14: interactive in under 2 s). Checked in a fresh interpreter, whose
`sys.modules` nothing else in the test session has filled.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from core import Engine
from tests.app.conftest import make_units
from tests.support.interpreter import run_python

HEAVY = (
    "duckdb",
    "lancedb",
    "tantivy",
    "pyarrow",
    "onnxruntime",
    "tokenizers",
    "torch",
    "pyqtgraph",
    "ollama",
    "fastapi",
)

# The studio's own start (app/studio.py) up to the window on screen, then the
# bank opened in the runner: the heavy modules before and after.
SCRIPT = """
import json, sys, tempfile
from PySide6.QtCore import QEventLoop, QSettings, QTimer
from PySide6.QtWidgets import QApplication

QSettings.setDefaultFormat(QSettings.Format.IniFormat)
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
qapp = QApplication([])
QSettings().setValue("serving/enabled", False)
import app.main
from app import theme
from app.window import MainWindow
from core import Engine

HEAVY = {heavy!r}
theme.apply_theme(qapp, "light")
window = MainWindow(Engine(sys.argv[1]))
window.show()
qapp.processEvents()
shown = [m for m in HEAVY if m in sys.modules]
built = sorted(window._built)

window.start()
loop = QEventLoop()
def wait_for(done):  # the event loop runs until done() (a minute at most)
    def poll():
        if done():
            loop.quit()
        else:
            QTimer.singleShot(10, poll)
    QTimer.singleShot(0, poll)
    QTimer.singleShot(60_000, loop.quit)
    loop.exec()

wait_for(lambda: window.state.bank is not None and window.pane("world").model.unit_at(0) is not None)
opened = [m for m in HEAVY if m in sys.modules]
rows = window.pane("world").model.rowCount()
# Recall's preload opens the search indexes after the first page.
wait_for(lambda: "lancedb" in sys.modules and "tantivy" in sys.modules)
later = [m for m in HEAVY if m in sys.modules]
window.close()
print(json.dumps({{"shown": shown, "built": built, "opened": opened, "later": later, "rows": rows}}))
"""


def studio_python(argv: list[str], home: Path, **env: str) -> subprocess.CompletedProcess:
    """`run_python` with a HOME of the test's own (the studio writes its settings
    there); it must succeed."""
    done = run_python(argv, HOME=str(home), **env)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_the_window_shows_before_the_stores_load(tmp_path):
    home = tmp_path / "home"
    with Engine(home) as engine:
        engine.create_bank("Start").add_units(make_units(8))
    done = studio_python(["-c", SCRIPT.format(heavy=HEAVY), str(home)], tmp_path)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["shown"] == []
    assert seen["built"] == ["world"]  # the tab on screen; the others wait for theirs
    # The same names do load once the bank is open (the check above can fail):
    # DuckDB for the first page, the search indexes behind it.
    assert "duckdb" in seen["opened"]
    assert {"lancedb", "tantivy"} <= set(seen["later"])
    assert seen["rows"] == 2  # 8 units over four networks: two world facts


@pytest.mark.slow
def test_the_start_probe_reports_the_window_answering_and_closes_it(tmp_path):
    """ENGRAM_START_PROBE: how the bundle's cold start is measured (no script runs there)."""
    argv = ["-m", "app.main", "--home", str(tmp_path / "home"), "--no-demo"]
    done = studio_python(argv, tmp_path, ENGRAM_START_PROBE="1")
    assert re.search(r"studio window answered input \d+\.\d\d s after start", done.stdout)
