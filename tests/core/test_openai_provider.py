"""The OpenAI-compatible provider (llama-server, LM Studio, vLLM, Ollama's /v1)
against a fake speaking that protocol: the same asking, validation, retries and
timeouts as the Ollama provider, chosen in the settings and by environment."""

from __future__ import annotations

from typing import Any

import pytest

from core import Engine, EngineSettings
from core.providers.llm import LanguageModelError, LlmSettings, open_model
from core.providers.openai_compat import OpenAICompatibleModel, api_base
from core.retain.llm_extract import LlmExtractor
from tests.core.test_llm_checks import EXCHANGE
from tests.fakes.ollama_server import Reply
from tests.fakes.openai_server import FakeOpenAI

MODEL = "qwen2.5-coder-0.5b-instruct"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}


def answer(value: Any) -> str:
    if not isinstance(value.get("a"), str):
        raise ValueError("'a' must be a string")
    return value["a"]


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


def model(fake: FakeOpenAI, **settings: Any) -> OpenAICompatibleModel:
    lm = open_model(LlmSettings(host=fake.url, model=MODEL, provider="openai", **settings))
    assert isinstance(lm, OpenAICompatibleModel)
    return lm


@pytest.mark.parametrize(
    ("host", "base"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1"),
        ("http://127.0.0.1:1234/v1/", "http://127.0.0.1:1234/v1"),
        ("localhost:11434", "http://localhost:11434/v1"),
    ],
)
def test_the_api_root_is_found_from_the_address_a_person_types(host: str, base: str) -> None:
    assert api_base(host) == base


def test_a_structured_answer_streams_with_the_json_schema_and_a_seed(fake) -> None:
    fake.script(Reply.json({"a": "streamed"}, chunks=5))
    seen: list[int] = []
    with model(fake, temperature=0.05) as lm:
        assert lm.structured("You answer.", "Q", SCHEMA, answer, on_tokens=seen.append) == (
            "streamed"
        )
        assert lm.speed.calls == 1 and lm.speed.eval_tokens > 0
    [body] = fake.chat_requests
    assert body["stream"] is True and body["seed"] == 42 and body["temperature"] == 0.05
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert seen == [1, 2, 3, 4, 5]


def test_a_bad_answer_is_asked_again_with_the_problem(fake) -> None:
    fake.script(Reply.text("Sure! Here you go: {'a': 3}"), Reply.json({"a": "fixed"}))
    with model(fake, retries=1) as lm:
        assert lm.structured("", "Q", SCHEMA, answer) == "fixed"
    second = fake.chat_requests[1]["messages"]
    assert second[-1]["role"] == "user" and "failed validation" in second[-1]["content"]


@pytest.mark.slow
def test_a_reply_cut_at_max_tokens_is_asked_again_with_more_room(fake) -> None:
    fake.script(Reply.json({"a": "x" * 400}), Reply.json({"a": "short"}))
    with model(fake, retries=1, num_predict=20) as lm:
        assert lm.structured("", "Q", SCHEMA, answer) == "short"
    first, second = fake.chat_requests
    assert (first["max_tokens"], second["max_tokens"]) == (20, 40)


@pytest.mark.slow
def test_server_errors_are_retried_and_a_missing_model_is_not(fake) -> None:
    fake.script(Reply.http_error(500, "slot unavailable"), Reply.json({"a": "ok"}))
    with model(fake) as lm:
        assert lm.structured("", "Q", SCHEMA, answer) == "ok"
    with (
        open_model(LlmSettings(host=fake.url, model="nope", provider="openai")) as lm,
        pytest.raises(LanguageModelError, match="not served") as info,
    ):
        lm.structured("", "Q", SCHEMA, answer)
    assert info.value.kind == "model"


@pytest.mark.slow
def test_a_silent_server_times_out_and_a_dead_one_is_unreachable(fake) -> None:
    fake.script(Reply.json({"a": "late"}, chunks=2, chunk_delay=3))
    with model(fake, timeout=0.5, retries=0) as lm, pytest.raises(LanguageModelError) as info:
        lm.structured("", "Q", SCHEMA, answer)
    assert info.value.kind == "timeout" and "mid-answer" in str(info.value)
    url = fake.url
    fake.stop()
    with (
        open_model(LlmSettings(host=url, model=MODEL, provider="openai")) as lm,
        pytest.raises(LanguageModelError, match="no OpenAI-compatible server") as info,
    ):
        lm.structured("", "Q", SCHEMA, answer)
    assert info.value.kind == "unreachable"


@pytest.mark.slow
def test_a_long_prompt_may_take_its_reading_time_after_the_headers(fake) -> None:
    # These servers send headers at once, then nothing until the prompt is read.
    fake.script(Reply.json({"a": "read"}, delay=1.2))
    with model(fake, timeout=0.5, retries=0) as lm:
        assert lm.structured("", "word " * 110, SCHEMA, answer) == "read"


@pytest.mark.slow
def test_the_probe_lists_the_servers_models(fake) -> None:
    with model(fake) as lm:
        assert lm.probe().ready
    with open_model(LlmSettings(host=fake.url, model="other", provider="openai")) as lm:
        status = lm.probe()
    assert status.state == "missing" and "load it in the server" in status.reason


def test_extraction_runs_through_it_with_the_same_checks(fake) -> None:
    fake.script(
        Reply.json(
            {
                "facts": [
                    {
                        "text": "Juniper booked the staging run for Friday at 9.",
                        "network": "experience",
                        "source_ids": ["t2"],
                    },
                    {"text": "Priya: Ouch.", "network": "opinion", "confidence": 0.9},
                ]
            }
        )
    )
    with model(fake) as lm:
        extractor = LlmExtractor(lm)
        [fact] = extractor.extract(EXCHANGE, "Juniper", [])
        [checked] = extractor.take_checks()
    assert fact.text.startswith("Juniper booked") and len(checked.dropped) == 1


def test_the_provider_is_chosen_in_the_settings_and_by_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("ENGRAM_LLM_PROVIDER", raising=False)
    assert EngineSettings.load(tmp_path).llm_provider == "ollama"
    monkeypatch.setenv("ENGRAM_LLM_PROVIDER", "openai")
    assert EngineSettings.load(tmp_path).llm_provider == "openai"
    monkeypatch.delenv("ENGRAM_LLM_PROVIDER")
    settings = EngineSettings().with_values(llm_provider="openai", ollama_model=MODEL)
    settings.save(tmp_path)
    with Engine(tmp_path) as engine:
        lm = engine.language_model()
        assert isinstance(lm, OpenAICompatibleModel)
        lm.close()
    from core import SettingError

    with pytest.raises(SettingError):
        EngineSettings().with_values(llm_provider="gopher")
