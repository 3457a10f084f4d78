"""`engram reflect`, `engram opinions`, `engram reflections` end to end."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from core import Network
from core.cli import main
from core.reflect.disposition import SKEPTICISM
from core.settings import EngineSettings
from tests.fakes.ollama_server import FakeOllama
from tests.support.reflection import Router, add, opinion, system_of, unit, use_fake

QUERY = "Where should Alice go hiking?"
GREAT = "Yosemite is a great park for Alice."


@pytest.fixture
def home(engine, bank, monkeypatch):
    """A bank on disk, closed so the CLI's own engine can open it."""
    for name in ("ENGRAM_OLLAMA_HOST", "ENGRAM_OLLAMA_MODEL"):
        monkeypatch.delenv(name, raising=False)
    ids = add(
        bank,
        unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1), sources=("t1",)),
        unit("I recommended Yosemite to Alice.", Network.EXPERIENCE, sources=("t2",)),
        unit(GREAT, Network.OPINION, confidence=0.6),
    )
    bank.close()
    return engine.home, ids


def run(home, *argv: str) -> int:
    return main(["--home", str(home), *argv])


def test_offline_reflect_dry_run_and_kept(home, capsys):
    folder, _ = home
    assert run(folder, "reflect", "test", QUERY, "--skepticism", "5", "--dry-run", "--prompt") == 0
    out = capsys.readouterr().out
    assert "mode: offline extractive" in out and "Extractive reflection" in out
    assert SKEPTICISM[5] in out  # --prompt shows the verbalised Θ
    assert "dry run: nothing kept" in out
    assert run(folder, "reflections", "test") == 0
    assert "no reflections kept yet" in capsys.readouterr().out

    assert run(folder, "reflect", "test", QUERY, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "offline extractive" and data["committed"] is True
    assert data["disposition"] == {"skepticism": 3, "literalism": 3, "empathy": 3, "bias": 0.2}
    assert run(folder, "reflections", "test", "--json") == 0
    [kept] = json.loads(capsys.readouterr().out)
    assert kept["id"] == data["id"] and kept["query"] == QUERY


@pytest.mark.slow
def test_compare_profiles_file_commits_nothing_unless_kept(home, tmp_path, capsys):
    folder, _ = home
    profiles = tmp_path / "profiles.json"
    profiles.write_text(
        json.dumps({"trusting": {"skepticism": 1}, "skeptic": {"skepticism": 5, "bias": 0.9}})
    )
    assert run(folder, "reflect", "test", QUERY, "--compare", str(profiles)) == 0
    out = capsys.readouterr().out
    assert "=== 1 ===" in out and "=== 2 ===" in out and "nothing committed" in out
    assert "skepticism 5, literalism 3, empathy 3, bias 0.90" in out
    assert run(folder, "reflections", "test") == 0
    assert "no reflections kept yet" in capsys.readouterr().out

    assert run(folder, "reflect", "test", QUERY, "--compare", str(profiles), "--keep", "2") == 0
    assert "kept reflection 2" in capsys.readouterr().out
    assert run(folder, "reflections", "test", "--json") == 0
    [kept] = json.loads(capsys.readouterr().out)
    assert kept["disposition"]["skepticism"] == 5


def test_bad_input_says_what_is_wrong(home, tmp_path, capsys):
    folder, _ = home
    bad = tmp_path / "bad.json"
    bad.write_text('[{"skepticism": 9}, {}]')
    assert run(folder, "reflect", "test", QUERY, "--compare", str(bad)) == 1
    assert "skepticism must be an integer from 1 to 5" in capsys.readouterr().err
    bad.write_text("{not json")
    assert run(folder, "reflect", "test", QUERY, "--compare", str(bad)) == 1
    assert "not valid JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(folder, "reflect", "test", QUERY, "--empathy", "6")
    assert "from 1 to 5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(folder, "reflect", "test", QUERY, "--bias", "2")
    assert run(folder, "opinions", "test", "--history", "0" * 16) == 1
    assert "no unit" in capsys.readouterr().err


@pytest.mark.slow
def test_reflect_with_the_model_then_opinions_and_history(home, capsys):
    folder, ids = home
    hiked, _, held = ids
    with FakeOllama() as fake:
        router = Router(
            answer="Back to Yosemite.",
            opinions=[
                opinion(GREAT, 0.9, [hiked]),
                opinion("Alice prefers waterfalls to lakes.", 0.65, [hiked]),
            ],
        )
        fake.responder = router
        EngineSettings(ollama_host=fake.url, ollama_model="llama3.2").save(folder)
        assert run(folder, "reflect", "test", QUERY, "--empathy", "5") == 0
        out = capsys.readouterr().out
    assert "mode: ollama:llama3.2" in out and "Back to Yosemite." in out
    assert f"~ reinforce opinion {held} (0.60 -> 0.70)" in out
    assert "+ new opinion" in out and "(0.65): Alice prefers waterfalls to lakes." in out
    assert "Empathy 5/5" in system_of(router.answer_bodies[0])

    assert run(folder, "opinions", "test") == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith(held) and "0.70" in listed[0]
    assert "Alice prefers waterfalls to lakes." in listed[1]

    assert run(folder, "opinions", "test", "--history", held) == 0
    out = capsys.readouterr().out
    assert "reinforce" in out and "0.60 -> 0.70" in out
    assert "evidence [" + hiked + "] Alice hiked the Mist Trail" in out
    assert "from reflection" in out

    assert run(folder, "opinions", "test", "--since", "2000-01-01") == 0
    assert held in capsys.readouterr().out


def test_settings_for_the_fake_are_used_by_a_fixture_engine(engine, fake_ollama):
    # The helper the other reflect tests rely on points the engine at the fake.
    use_fake(engine, fake_ollama)
    assert engine.language_model().host == fake_ollama.url
    assert engine.mode() == "Ollama: llama3.2"
