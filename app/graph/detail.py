"""A unit's detail, read-only, beside a graph or a timeline.

Reuses the studio's `UnitDetail` (text, times, entities, provenance, links)
without its edit and delete buttons: editing belongs to the network panes.
The unit is read in the runner.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from app.panes.detail import UnitDetail
from app.state import StudioState


class ReadOnlyUnitDetail(UnitDetail):
    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.edit_button.hide()
        self.delete_button.hide()
        self.placeholder.setText("Click a node to see its unit in full.")
        self._wanted = ""

    def start_edit(self) -> None:  # F2 / double-click must not open the editors here
        return

    def load(self, unit_id: str | None) -> None:
        """Fetch and show a unit by id (None: clear)."""
        self._wanted = unit_id or ""
        bank = self.state.bank
        if not unit_id or bank is None:
            self.show_unit(None)
            return

        def work():
            # Entity names, so the detail and its links say "via Atlas", not an id.
            names = {e.id: e.name for e in bank.entities(include_retracted=True)}
            return bank.unit(unit_id), names

        self.state.runner.run_query(
            work,
            lambda out: self._loaded(unit_id, *out),
            lambda _error: self._loaded(unit_id, None, {}),
            key=bank,
        )

    def _loaded(self, unit_id: str, unit, names: dict[str, str]) -> None:
        if unit_id == self._wanted:
            if names:
                self.entity_names = dict(names)
            self.show_unit(unit)
