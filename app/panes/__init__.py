"""The studio's panes, in tab order.

A pane is a `Pane` (app/panes/base.py) built from the studio state. The
window lists every pane's tab from `PANES` but builds a pane only when it is
first shown (or asked for): each `PaneSpec` names the pane's slug and title,
and its `build` imports the pane's module then. So the window appears without
importing the graph view, pyqtgraph, the language-model client or the
stores (tests/app/test_start_imports.py keeps it so).

To add a pane, append a `PaneSpec` to `PANES` or call `register_pane`; the
window, F5, Ctrl+F, the change broadcast and `engram screenshot` pick it up
from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.panes.base import Pane
from core import Network

if TYPE_CHECKING:
    from app.state import StudioState

PaneFactory = Callable[["StudioState"], Pane]


@dataclass(frozen=True)
class PaneSpec:
    """One tab: known before its pane is built (slug and title must match the pane's)."""

    slug: str
    title: str
    build: PaneFactory


def _network(network: Network) -> PaneFactory:
    def build(state: StudioState) -> Pane:
        from app.panes.network import NetworkPane

        return NetworkPane(state, network)

    return build


def _pane(module: str, name: str) -> PaneFactory:
    """A factory that imports `module` when the pane is first built."""

    def build(state: StudioState) -> Pane:
        import importlib

        return getattr(importlib.import_module(module), name)(state)

    return build


PANES: list[PaneSpec] = [
    PaneSpec("world", "World", _network(Network.WORLD)),
    PaneSpec("experience", "Experience", _network(Network.EXPERIENCE)),
    PaneSpec("opinion", "Opinions", _network(Network.OPINION)),
    PaneSpec("observation", "Observations", _network(Network.OBSERVATION)),
    PaneSpec("entities", "Entities", _pane("app.panes.entities", "EntitiesPane")),
    PaneSpec("graph", "Graph", _pane("app.graph.pane", "GraphPane")),
    PaneSpec("entity-map", "Entity map", _pane("app.graph.entity_pane", "EntityMapPane")),
    PaneSpec("recall", "Recall debugger", _pane("app.panes.recall_debugger", "RecallDebuggerPane")),
    PaneSpec("reflect", "Reflect", _pane("app.panes.reflect", "ReflectPane")),
    PaneSpec("timelines", "Opinion timelines", _pane("app.panes.timelines", "TimelinesPane")),
    PaneSpec("ingest", "Ingest", _pane("app.panes.ingest", "IngestPane")),
    PaneSpec("documents", "Documents", _pane("app.panes.documents", "DocumentsPane")),
    PaneSpec("snapshots", "Snapshots", _pane("app.panes.snapshots", "SnapshotsPane")),
    PaneSpec("activity", "Activity", _pane("app.panes.activity", "ActivityPane")),
    PaneSpec("audit", "Audit", _pane("app.panes.audit", "AuditPane")),
    PaneSpec("settings", "Settings", _pane("app.panes.settings", "SettingsPane")),
]


def register_pane(spec: PaneSpec, before: str | None = "settings") -> None:
    """Add a pane; by default just before Settings (by slug), which stays last."""
    slugs = [s.slug for s in PANES]
    if before is None or before not in slugs:
        PANES.append(spec)
    else:
        PANES.insert(slugs.index(before), spec)


__all__ = ["PANES", "Pane", "PaneFactory", "PaneSpec", "register_pane"]
