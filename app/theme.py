"""Light and dark themes, following the system unless the user picks one.

The palette drives Fusion; `style.qss` adds the few rules a palette cannot say,
with @tokens filled from the same colours so the two never disagree.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from core import Network

STYLESHEET = Path(__file__).with_name("style.qss")

THEMES: dict[str, dict[str, str]] = {
    "light": {
        "window": "#f4f5f7",
        "base": "#ffffff",
        "alt": "#f0f2f5",
        "button": "#ffffff",
        "text": "#1d2430",
        "muted": "#5a6475",
        "border": "#d3d8e0",
        "accent": "#2f63c9",
        "ontint": "#ffffff",
        "selection": "#cddffd",
        "seltext": "#0f1f3d",
        "danger": "#b42318",
        "ok": "#1a7f37",
        "link": "#2f63c9",
    },
    "dark": {
        "window": "#1d2025",
        "base": "#25292f",
        "alt": "#2b3037",
        "button": "#2f343c",
        "text": "#e5e8ed",
        "muted": "#a3abb8",
        "border": "#3b424c",
        "accent": "#6d9cff",
        "ontint": "#0d1526",
        "selection": "#2e4a7d",
        "seltext": "#ffffff",
        "danger": "#ff7b72",
        "ok": "#56d364",
        "link": "#8ab4ff",
    },
}

# Network colours, shared by every pane that shows a network (and the graph pane).
NETWORK_COLORS = {
    Network.WORLD: "#3b82f6",
    Network.EXPERIENCE: "#10b981",
    Network.OPINION: "#f59e0b",
    Network.OBSERVATION: "#8b5cf6",
}

CHOICES = ("system", "light", "dark")


def system_scheme() -> str:
    hints = QGuiApplication.styleHints()
    return "dark" if hints.colorScheme() == Qt.ColorScheme.Dark else "light"


def resolve(choice: str) -> str:
    return system_scheme() if choice not in ("light", "dark") else choice


def palette_for(name: str) -> QPalette:
    c = {k: QColor(v) for k, v in THEMES[name].items()}
    pal = QPalette()
    role = QPalette.ColorRole
    pal.setColor(role.Window, c["window"])
    pal.setColor(role.WindowText, c["text"])
    pal.setColor(role.Base, c["base"])
    pal.setColor(role.AlternateBase, c["alt"])
    pal.setColor(role.ToolTipBase, c["base"])
    pal.setColor(role.ToolTipText, c["text"])
    pal.setColor(role.PlaceholderText, c["muted"])
    pal.setColor(role.Text, c["text"])
    pal.setColor(role.Button, c["button"])
    pal.setColor(role.ButtonText, c["text"])
    pal.setColor(role.BrightText, c["danger"])
    pal.setColor(role.Highlight, c["selection"])
    pal.setColor(role.HighlightedText, c["seltext"])
    pal.setColor(role.Link, c["link"])
    pal.setColor(role.LinkVisited, c["link"])
    pal.setColor(role.Mid, c["border"])
    pal.setColor(role.Dark, c["border"])
    for r in (role.Text, role.WindowText, role.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, r, c["muted"])
    return pal


def stylesheet_for(name: str) -> str:
    qss = STYLESHEET.read_text("utf-8")
    # Longest tokens first so "@selection" is not eaten by a shorter prefix.
    for token, value in sorted(THEMES[name].items(), key=lambda kv: -len(kv[0])):
        qss = qss.replace("@" + token, value)
    return qss


def apply_theme(app: QApplication, choice: str = "system") -> str:
    """Apply the chosen theme ("system", "light" or "dark"); returns the one applied."""
    name = resolve(choice)
    app.setStyle("Fusion")
    app.setPalette(palette_for(name))
    app.setStyleSheet(stylesheet_for(name))
    app.setProperty("engram_theme", name)
    return name


def current_theme() -> str:
    app = QApplication.instance()
    value = app.property("engram_theme") if app is not None else None
    return value if value in THEMES else "light"


def color(token: str) -> str:
    return THEMES[current_theme()][token]
