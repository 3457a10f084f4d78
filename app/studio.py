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


def parse_args(args: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="engram", description="Open Engram Studio.")
    parser.add_argument("--home", help="data folder (default: ENGRAM_HOME or the user data dir)")
    parser.add_argument(
        "--no-demo", action="store_true", help="do not build the demo bank on a first start"
    )
    return parser.parse_args(list(args))


def run_studio(args: Sequence[str]) -> int:
    options = parse_args(args)
    if not has_display():
        print(NO_DISPLAY, file=sys.stderr)
        return 2

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app import theme
    from app.demo import demo_available, start_demo_build
    from app.window import APPLICATION, ORGANIZATION, MainWindow
    from core import Engine, EngramError

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "engram"])
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
    if not engine.banks() and not options.no_demo and demo_available():
        window.start(open_last=False)
        start_demo_build(window)
    else:
        window.start()
    return int(app.exec())
