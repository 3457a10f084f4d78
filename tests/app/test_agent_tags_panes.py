"""What an agent retained with tags and metadata (Hindsight's) shows in the unit
detail and the Documents pane — as text: an agent's strings are never markup."""

from __future__ import annotations

import pytest

from app.panes.detail import UnitDetail
from app.panes.documents import HEADERS
from app.runner import Runner
from app.state import StudioState
from core import Document, Turn

HOSTILE = "<b>bold</b><img src=x>"
pytestmark = pytest.mark.slow  # a bank with the real embedding model, and a window


def _agent_bank(engine, embedder):
    bank = engine.create_bank("Agent")
    turn = Turn(
        "t0",
        "Quinn",
        "Quinn keeps bees on the library roof.",
        tags=("user:quinn", HOSTILE),
        metadata={"source": "crewai", "agent": HOSTILE},
    )
    bank.ingest(Document(id="chat-1", title="chat", turns=(turn,)), mode="verbatim")
    return bank


def test_the_unit_detail_shows_tags_and_metadata_as_text(qtbot, engine, embedder, tmp_path):
    bank = _agent_bank(engine, embedder)
    runner = Runner()
    state = StudioState(engine, runner)
    state.set_bank(bank)
    detail = UnitDetail(state)
    qtbot.addWidget(detail)
    try:
        (unit,) = bank.units(limit=None)
        detail.show_unit(unit)
        assert detail.fields["tags"].text() == f"user:quinn, {HOSTILE}"
        assert detail.fields["metadata"].text() == f"agent: {HOSTILE}\nsource: crewai"
        assert all(detail.fields[k].textFormat().name == "PlainText" for k in ("tags", "metadata"))
        detail.resize(520, 900)
        detail.grab().save(str(tmp_path / "detail.png"))
    finally:
        runner.shutdown()


def test_the_documents_pane_lists_tags_and_shows_metadata(
    qtbot, make_window, engine, embedder, tmp_path
):
    _agent_bank(engine, embedder)
    window = make_window(start=True)
    pane = window.show_pane("documents")
    qtbot.waitUntil(lambda: len(pane.documents) == 1, timeout=20_000)
    assert pane.table.item(0, HEADERS.index("Tags")).text() == f"user:quinn, {HOSTILE}"
    assert pane.select_document("chat-1")
    qtbot.waitUntil(lambda: "Quinn keeps bees" in pane.turns.toPlainText(), timeout=20_000)
    assert f"Metadata: agent: {HOSTILE}; source: crewai" in pane.info.text()
    assert HOSTILE in pane.turns.toPlainText()  # escaped in the turns' HTML, shown as written
    window.grab().save(str(tmp_path / "documents.png"))
