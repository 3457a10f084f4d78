"""The studio reads the engine's vocabulary; it keeps no copy."""

from __future__ import annotations

import core
from app.graph import model
from app.panes import recall_debugger


def test_the_studio_lists_are_the_engines():
    assert model.NETWORKS is core.NETWORKS and model.LINK_KINDS is core.LINK_KINDS
    assert recall_debugger.CHANNELS is core.CHANNELS
    assert [level for level, _label in recall_debugger.LEVEL_CHOICES] == list(core.LEVELS)
