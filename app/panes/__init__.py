"""The studio's panes, in tab order.

A pane is a `Pane` (app/panes/base.py) built from the studio state. To add
one (graph, recall debugger, reflect, opinion timelines), append a factory to
`PANES` or call `register_pane`; the window, F5, Ctrl+F, the change
broadcast and `engram screenshot` pick it up from here.
"""

from __future__ import annotations

from collections.abc import Callable

from app.panes.audit import AuditPane
from app.panes.base import Pane
from app.panes.documents import DocumentsPane
from app.panes.entities import EntitiesPane
from app.panes.ingest import IngestPane
from app.panes.network import NetworkPane
from app.panes.recall_debugger import RecallDebuggerPane
from app.panes.reflect import ReflectPane
from app.panes.settings import SettingsPane
from app.panes.snapshots import SnapshotsPane
from app.panes.timelines import TimelinesPane
from app.state import StudioState
from core import Network

PaneFactory = Callable[[StudioState], Pane]


def _graph_pane(state: StudioState) -> Pane:
    # app.graph builds on app.panes (Pane, the unit detail), so it is imported when
    # the pane is built, not while this package is still initialising.
    from app.graph.pane import GraphPane

    return GraphPane(state)


PANES: list[PaneFactory] = [
    lambda state: NetworkPane(state, Network.WORLD),
    lambda state: NetworkPane(state, Network.EXPERIENCE),
    lambda state: NetworkPane(state, Network.OPINION),
    lambda state: NetworkPane(state, Network.OBSERVATION),
    EntitiesPane,
    _graph_pane,
    RecallDebuggerPane,
    ReflectPane,
    TimelinesPane,
    IngestPane,
    DocumentsPane,
    SnapshotsPane,
    AuditPane,
    SettingsPane,
]


def register_pane(factory: PaneFactory, before: type[Pane] | None = SettingsPane) -> None:
    """Add a pane; by default just before Settings, which stays last."""
    if before is None or before not in PANES:
        PANES.append(factory)
    else:
        PANES.insert(PANES.index(before), factory)


def build_panes(state: StudioState) -> list[Pane]:
    return [factory(state) for factory in PANES]


__all__ = ["PANES", "Pane", "PaneFactory", "build_panes", "register_pane"]
