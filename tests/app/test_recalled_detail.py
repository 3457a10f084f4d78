"""The unit detail says how often a unit was recalled, and when last."""

from __future__ import annotations

from app.panes.detail import UnitDetail
from app.runner import Runner
from app.state import StudioState


def test_the_detail_shows_recalled_n_times_and_when(qtbot, small_bank, embedder):
    runner = Runner()
    state = StudioState(small_bank.engine, runner)
    state.set_bank(small_bank)
    detail = UnitDetail(state)
    qtbot.addWidget(detail)
    try:
        first = small_bank.recall("Atlas project", budget_tokens=64).unit_ids[0]
        detail.show_unit(small_bank.unit(first))
        assert detail.fields["accessed"].text().startswith("recalled once · last recalled 20")
        small_bank.recall("Atlas project", budget_tokens=64)
        small_bank.recall("Atlas project", budget_tokens=64, count_access=False)
        unit = small_bank.unit(first)
        detail.show_unit(unit)
        assert detail.fields["accessed"].text().startswith("recalled 2 times · last recalled")
        never = next(u for u in small_bank.units(limit=300) if u.access_count == 0)
        detail.show_unit(never)
        assert detail.fields["accessed"].text() == "never recalled"
    finally:
        runner.shutdown()
