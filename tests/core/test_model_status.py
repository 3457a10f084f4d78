"""One connection check, used everywhere: "server down" is told from "model not
pulled" in the mode, the CLI, `--mode auto` and reflect, and a model that fails
mid-reflection falls back the same way whatever the cause, saying why."""

from __future__ import annotations

from datetime import datetime

import pytest

from core import Network
from core.cli import main
from core.providers.llm import LanguageModel, LlmSettings
from core.settings import EngineSettings
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.support.reflection import Router, add, unit, use_fake

CONVERSATION = (
    "## 2025-03-01 09:00\nAlice: I moved to Lisbon last week.\nBob: Lisbon is lovely in spring.\n"
)


@pytest.fixture
def dead_url() -> str:
    with FakeOllama() as server:
        url = server.url
    return url


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for name in ("ENGRAM_OLLAMA_HOST", "ENGRAM_OLLAMA_MODEL", "ENGRAM_OLLAMA_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


def test_probe_tells_down_from_not_pulled_from_ready(fake_ollama, dead_url):
    def probe(host, model):
        with LanguageModel(LlmSettings(host=host, model=model)) as lm:
            return lm.probe()

    down = probe(dead_url, "llama3.2")
    missing = probe(fake_ollama.url, "mistral:7b")
    ready = probe(fake_ollama.url, "llama3.2")
    assert (down.state, missing.state, ready.state) == ("down", "missing", "ready")
    assert "not reachable" in down.reason
    assert "not installed" in missing.reason and "ollama pull mistral:7b" in missing.reason


def test_mode_says_which_cause(engine, fake_ollama, dead_url):
    engine.set_settings(EngineSettings(ollama_host=fake_ollama.url, ollama_model="mistral:7b"))
    assert "'mistral:7b' not installed" in engine.mode()
    engine.set_settings(EngineSettings(ollama_host=dead_url, ollama_model="llama3.2"))
    assert f"Ollama not reachable at {dead_url}" in engine.mode()
    use_fake(engine, fake_ollama)
    assert engine.mode() == "Ollama: llama3.2"


@pytest.fixture
def conversation(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text(CONVERSATION, "utf-8")
    return path


def _ingest(engine, *argv):
    bank = engine.create_bank("B")
    bank.close()
    return main(["--home", str(engine.home), "ingest", "B", *argv])


def test_cli_llm_mode_names_the_missing_model(engine, fake_ollama, conversation, capsys):
    engine.set_settings(EngineSettings(ollama_host=fake_ollama.url, ollama_model="mistral:7b"))
    assert _ingest(engine, str(conversation), "--mode", "llm", "--quiet") == 1
    err = capsys.readouterr().err
    assert "'mistral:7b' not installed" in err and "ollama pull mistral:7b" in err
    assert "not reachable" not in err


def test_cli_llm_mode_names_the_dead_server(engine, dead_url, conversation, capsys):
    engine.set_settings(EngineSettings(ollama_host=dead_url, ollama_model="llama3.2"))
    assert _ingest(engine, str(conversation), "--mode", "llm", "--quiet") == 1
    err = capsys.readouterr().err
    assert f"Ollama not reachable at {dead_url}" in err and "not installed" not in err


def test_auto_mode_says_why_it_fell_back(engine, fake_ollama, conversation, capsys):
    engine.set_settings(EngineSettings(ollama_host=fake_ollama.url, ollama_model="mistral:7b"))
    assert _ingest(engine, str(conversation), "--quiet") == 0
    out = capsys.readouterr().out
    assert "mode: rules" in out
    assert "auto mode fell back to offline rules: 'mistral:7b' not installed" in out


@pytest.fixture
def evidence_bank(bank):
    add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    add(bank, unit("Yosemite is a great park for Alice.", Network.OPINION, confidence=0.6))
    return bank


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (Reply.json({}, chunks=2, chunk_delay=3), "sent nothing for 0.5 s"),
        (
            Reply.http_error(404, 'model "llama3.2" not found, try pulling it first'),
            "not installed",
        ),
    ],
    ids=["timeout", "model-removed"],
)
@pytest.mark.slow
def test_reflect_falls_back_the_same_way_with_the_reason(
    evidence_bank, engine, fake_ollama, reply, cause
):
    use_fake(engine, fake_ollama)
    fake_ollama.script(reply)
    with LanguageModel(
        LlmSettings(host=fake_ollama.url, model="llama3.2", timeout=0.5, retries=0)
    ) as lm:
        reflection = evidence_bank.reflect("Where should Alice hike?", llm=lm, commit=False)
    assert reflection.mode == "offline extractive"
    assert reflection.error is None and reflection.answer
    assert any(cause in note and "extractive" in note for note in reflection.notes)


def test_reflect_with_the_model_not_pulled_says_so(evidence_bank, engine, fake_ollama):
    engine.set_settings(EngineSettings(ollama_host=fake_ollama.url, ollama_model="mistral:7b"))
    fake_ollama.responder = Router()
    reflection = evidence_bank.reflect("Where should Alice hike?", commit=False)
    assert reflection.mode == "offline extractive"
    [note] = reflection.notes
    assert "'mistral:7b' not installed" in note and "not reachable" not in note


def test_cli_ingest_of_replies_cut_by_length_fails_with_the_reason(
    engine, fake_ollama, conversation, capsys
):
    use_fake(engine, fake_ollama)
    # The model always stops at the token limit: two of four facts would survive a
    # "repair". The chunk fails and says why; nothing is half-kept; the exit code is 1.
    fake_ollama.responder = lambda body: Reply.text(
        '{"facts": [{"text": "Alice moved to Lisbon", "network": "world"}, {"text": "Bo',
        done_reason="length",
    )
    assert _ingest(engine, str(conversation), "--mode", "llm", "--quiet") == 1
    captured = capsys.readouterr()
    assert "FAILED chunk" in captured.out and "cut off at the limit" in captured.out
    assert "documents: 0 ingested, 0 skipped, 1 failed" in captured.out
    assert "some chunks failed" in captured.err
    bank = engine.open_bank("B")
    assert bank.count() == 0


@pytest.mark.slow
def test_the_timeout_flag_reaches_the_model(engine, fake_ollama, conversation, capsys):
    use_fake(engine, fake_ollama)
    fake_ollama.responder = lambda body: Reply.json({"facts": []}, chunks=2, chunk_delay=3)
    argv = (str(conversation), "--mode", "llm", "--quiet", "--ollama-timeout", "0.5")
    assert _ingest(engine, *argv) == 1
    assert "sent nothing for 0.5 s" in capsys.readouterr().out


def test_cli_ingest_says_which_profiles_the_rules_wrote_when_the_model_died(
    engine, fake_ollama, conversation, capsys
):
    from tests.core.test_retain_llm import Script, kind_of

    use_fake(engine, fake_ollama)
    script = Script()

    def responder(body):
        # Extraction answers; the server dies at the first observation profile.
        if kind_of(body) in ("extract", "assess"):
            return script(body)
        return Reply.dies(shutdown_server=True)

    fake_ollama.responder = responder
    assert _ingest(engine, str(conversation), "--mode", "llm", "--quiet") == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("observations:"))
    assert "(llm)" in line and "by rules, the model failed" in line, line
