"""Render resources/icons/engram-studio.svg to the PNG sizes desktops ask for.

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/make_icons.py

The PNGs are committed; run this again only when the SVG changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def main() -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 (fonts, painters)
    renderer = QSvgRenderer(str(ICONS / "engram-studio.svg"))
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        image.save(str(ICONS / f"engram-studio-{size}.png"))
    print(f"wrote {len(SIZES)} PNGs to {ICONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
