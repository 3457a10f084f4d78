"""The language model's timeout is set in the Settings pane, kept, and used."""

from __future__ import annotations

from core import EngineSettings
from tests.app.conftest import wait_idle


def test_the_timeout_set_in_settings_is_kept_and_used(qtbot, make_window, engine, monkeypatch):
    monkeypatch.delenv("ENGRAM_OLLAMA_TIMEOUT", raising=False)
    window = make_window(start=True)
    wait_idle(qtbot, window.runner)
    pane = window.show_pane("settings")
    assert pane.llm_timeout.value() == engine.settings.ollama_timeout == 60
    pane.llm_model.setEditText("llama3.2")
    pane.llm_timeout.setValue(300)
    pane.llm_save.click()
    qtbot.waitUntil(lambda: engine.settings.ollama_timeout == 300)
    wait_idle(qtbot, window.runner)
    assert EngineSettings.load(engine.home).ollama_timeout == 300
    assert engine.language_model().settings.timeout == 300
    # The environment overrides the saved value (CI, scripts, a slow machine).
    monkeypatch.setenv("ENGRAM_OLLAMA_TIMEOUT", "900")
    assert EngineSettings.load(engine.home).ollama_timeout == 900
