"""Start the studio: `engram` with no command.

Checks for a display first (a clear message, not a Qt stack trace), applies
the theme, opens the window, and on a first start with no bank builds the
demo bank so a newcomer sees every pane populated.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

NO_DISPLAY = """engram: no display found (DISPLAY and WAYLAND_DISPLAY are unset).
The studio needs a graphical session. Without one you can:
  xvfb-run engram                                  run it on a virtual display
  QT_QPA_PLATFORM=offscreen engram screenshot --out DIR   render every pane to PNG
  engram --help                                    use the headless commands"""


def has_display() -> bool:
    """False on Linux without X11 or Wayland, unless a Qt platform is chosen explicitly."""
    if not sys.platform.startswith("linux"):
        return True
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_studio(options: argparse.Namespace | Sequence[str]) -> int:
    """Open the studio; `options` parsed by `engram`'s parser (or its words)."""
    if not isinstance(options, argparse.Namespace):
        from app.main import build_parser

        options = build_parser().parse_args(list(options))
    if not has_display():
        print(NO_DISPLAY, file=sys.stderr)
        return 2

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app import collector, theme
    from app.demo import demo_available, start_demo_build
    from app.window import APPLICATION, ORGANIZATION, MainWindow
    from core import Engine, EngramError

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "engram"])
    collector.install(app)  # cycles holding Qt objects are freed on this thread only
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName(APPLICATION)
    theme.apply_theme(app, str(QSettings().value("theme", "system")))

    try:
        engine = Engine(options.home)
    except EngramError as error:  # e.g. a malformed ENGRAM_OLLAMA_TIMEOUT
        print(f"engram: {error}", file=sys.stderr)
        return 2
    window = MainWindow(engine)
    window.show()
    if sys.platform == "darwin":
        _accept_finder_opens(app, window)
    if options.open:  # a .engram file opened from the file manager
        window.start(open_last=False)
        window.open_snapshot(Path(options.open))
    elif not engine.banks() and not options.no_demo and demo_available():
        window.start(open_last=False)
        start_demo_build(window)
    else:
        window.start()
    if os.environ.get("ENGRAM_START_PROBE"):
        _probe_start(window)
    return int(app.exec())


def _accept_finder_opens(app, window) -> None:
    """macOS hands a file opened in Finder (or dropped on the Dock icon) to the
    running app as a FileOpen event, not as an argument: offer it for import as
    `engram --open FILE` does. (Not exercised here: no macOS to run it on.)"""
    from PySide6.QtCore import QEvent, QObject

    class FileOpens(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
            if event.type() == QEvent.Type.FileOpen and event.file().endswith(".engram"):
                window.open_snapshot(Path(event.file()))
                return True
            return False

    app.installEventFilter(FileOpens(app))


def _probe_start(window) -> None:
    """ENGRAM_START_PROBE=1 (the bundle's cold-start measurement, where no benchmark
    script can run): print the seconds from process creation to the window having
    handled a key press posted to it, then close the studio."""
    import time

    import psutil
    from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
    from PySide6.QtGui import QKeyEvent

    class Probe(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
            if event.type() == QEvent.Type.KeyPress:
                since = time.time() - psutil.Process().create_time()
                print(f"engram: studio window answered input {since:.2f} s after start")
                sys.stdout.flush()
                window.removeEventFilter(self)
                window.close()
            return False

    probe = Probe(window)
    window.installEventFilter(probe)
    key = QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_F24, Qt.KeyboardModifier.NoModifier)
    QCoreApplication.postEvent(window, key)  # handled when the event loop gets to it
