"""One configuration spec (core/config.py): every key typed, bounded, documented,
and checked the same way by the bank, recall's per-call overrides, the CLI and
the engine settings; stored settings from older versions still load."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.config import (
    DEFAULTS,
    ENGINE_SPEC,
    SPEC,
    EngineFields,
    SettingError,
    bank_config,
    parse_setting,
    setting_value,
    stored_config,
)
from core.recall.settings import resolve
from core.settings import SETTINGS_FILE, EngineSettings
from core.types import InvalidInputError
from tests.support.interpreter import run_python


def test_every_key_has_a_type_help_and_a_default_its_own_check_accepts():
    assert len(SPEC) == len(DEFAULTS) >= 50
    for key, setting in SPEC.items():
        assert key.split(".")[0] in ("retain", "recall", "journal"), key
        assert setting.kind in (bool, int, float, str), key
        assert len(setting.help) > 15, key
        assert setting_value(key, setting.default) == setting.default, key
        if setting.kind in (int, float):
            assert setting.minimum is not None, f"{key} has no lower bound"


def test_text_is_read_as_the_key_types_it():
    assert setting_value("recall.entity_fan", "false") is False
    assert setting_value("recall.entity_fan", "True") is True
    assert setting_value("recall.rrf_k", "60") == 60
    assert setting_value("recall.mu_causal", 1) == 1.0
    assert parse_setting("recall.mu_causal", " 0.5 ") == 0.5


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("recall.rrf_k", 60.7, "integer"),  # used to become 60
        ("recall.rrf_k", True, "truth value"),
        ("recall.activation_decay", 1.5, "less than or equal to 1"),
        ("recall.rrf_k", -1, "greater than or equal to 0"),
        ("retain.temporal_decay_hours", 0, "greater than 0"),
        ("recall.mu_entity", float("nan"), "finite"),
        ("recall.entity_fan", "maybe", "boolean"),
        ("recall.cross_encoder_path", 5, "string"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(key, value, words):
    with pytest.raises(SettingError, match=words) as info:
        bank_config({key: value})
    assert repr(key) in str(info.value)
    assert isinstance(info.value, InvalidInputError)  # the CLI's and API's one-line error


def test_an_unknown_key_is_refused_by_name():
    with pytest.raises(
        SettingError, match="unknown setting 'recall.rrf'.*did you mean 'recall.rrf_k'"
    ):
        bank_config({"recall.rrf": 1})


def test_recall_overrides_go_through_the_same_spec():
    # type(default)(value) made 'false' True and 60.7 into 60.
    assert (
        resolve({}, {"recall.embed_without_speakers": "false"})["recall.embed_without_speakers"]
        is False
    )
    with pytest.raises(SettingError, match="recall.rrf_k"):
        resolve({}, {"recall.rrf_k": 60.7})
    with pytest.raises(SettingError, match="unknown recall setting"):
        resolve({}, {"retain.opinion_alpha": 0.2})


def test_a_bank_refuses_a_bad_setting_and_keeps_what_it_had(bank):
    bank.set_profile(config={"recall.rrf_k": 40})
    with pytest.raises(SettingError, match="recall.activation_decay"):
        bank.set_profile(config={"recall.rrf_k": 50, "recall.activation_decay": 2})
    assert bank.profile().config["recall.rrf_k"] == 40
    bank.set_profile(config={"recall.entity_fan": "false", "recall.rrf_k": "45"})
    assert bank.profile().config["recall.entity_fan"] is False
    # Stored as the key takes it, not as the caller wrote it.
    stored = bank.store.meta("profile")["config"]
    assert (stored["recall.entity_fan"], stored["recall.rrf_k"]) == (False, 45)


def test_stored_settings_of_an_older_version_still_load_with_a_note():
    config, notes = stored_config(
        {"recall.rrf_k": 30, "reranker_model_path": "/x", "recall.mu_entity": 9.0}
    )
    assert config["recall.rrf_k"] == 30
    assert config["recall.mu_entity"] == DEFAULTS["recall.mu_entity"]
    assert any("'reranker_model_path' ignored (retired" in note for note in notes)
    assert any("recall.mu_entity" in note and "default" in note for note in notes)


def test_engine_settings_are_the_specs_fields():
    from dataclasses import fields

    carried = {f.name: f.default for f in fields(EngineSettings)}
    assert carried == {k: s.default for k, s in ENGINE_SPEC.items()}
    assert set(carried) == set(EngineFields.model_fields)


def test_settings_json_with_a_retired_or_damaged_value_still_loads(tmp_path, monkeypatch, caplog):
    for name in ("ENGRAM_OLLAMA_HOST", "ENGRAM_OLLAMA_MODEL", "ENGRAM_OLLAMA_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / SETTINGS_FILE).write_text(
        json.dumps({"ollama_model": "m", "ollama_timeout": "soon", "reranker_model_path": ""})
    )
    settings = EngineSettings.load(tmp_path)
    assert (settings.ollama_model, settings.ollama_timeout) == ("m", 60.0)
    assert "reranker_model_path" in caplog.text and "ollama_timeout" in caplog.text
    assert settings.with_values(ollama_timeout="90").ollama_timeout == 90.0
    with pytest.raises(SettingError, match="ollama_timeout"):
        settings.with_values(ollama_timeout=-1)


def test_the_cli_reads_and_writes_settings_through_the_spec(engine, bank, capsys):
    home, name = engine.home, bank.name
    bank.close()

    def run(*argv: str) -> int:
        return main(["--home", str(home), "config", *argv])

    assert run("set", name, "recall.entity_fan=false", "recall.rrf_k=42") == 0
    assert run("show", name, "--changed", "--json") == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{") :]) == {"recall.rrf_k": 42, "recall.entity_fan": False}
    # One bad value: nothing is saved, and the error names the key.
    assert run("set", name, "recall.rrf_k=10", "recall.activation_steps=2.5") == 1
    assert "recall.activation_steps" in capsys.readouterr().err
    assert run("set", name, "recall.nope=1") == 1
    assert "unknown setting 'recall.nope'" in capsys.readouterr().err
    assert run("reset", name, "recall.rrf_k") == 0
    assert run("show", name, "--changed", "--json") == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{") :]) == {"recall.entity_fan": False}
    assert run("keys") == 0
    assert "recall.rrf_k" in capsys.readouterr().out


def test_help_and_a_bank_listing_never_load_pydantic(tmp_path):
    EngineSettings(ollama_model="m").save(tmp_path)  # what the settings pane writes
    for argv in (["--help"], ["--home", str(tmp_path), "banks"]):
        code = (
            "import sys; from app.main import main\n"
            f"try: main({argv!r})\nexcept SystemExit: pass\n"
            "print('LOADED' if 'pydantic' in sys.modules else 'CLEAN')"
        )
        done = run_python(["-c", code])
        assert done.stdout.strip().endswith("CLEAN"), (argv, done.stdout[-300:], done.stderr)
