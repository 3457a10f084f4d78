"""The installed Qt binding must not leak references to None.

PySide6-Essentials 6.12.0 took one reference off None on every Qt method that
returns nothing; the studio died with `none_dealloc` a few hundred animation
frames in. pyproject.toml pins below it; this test fails if that comes back.
"""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QSlider


def test_void_qt_calls_keep_none_alive(qtbot):
    slider = QSlider()
    qtbot.addWidget(slider)
    before = sys.getrefcount(None)
    for _ in range(2000):
        slider.hide()
    assert before - sys.getrefcount(None) < 100
