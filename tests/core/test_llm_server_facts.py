"""What a real local model showed that the fake never did (issue 30), replayed in
the fake so `make test` keeps catching it: a CPU model reading a long prompt
sends nothing for a minute; /api/show knows the model's own context and
capabilities; a seed makes answers repeatable; OLLAMA_HOST is where users
point Ollama; and a reply streams token by token, so progress (and a cancel)
can act within one chunk."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from core.providers.llm import LanguageModel, LanguageModelError, LlmSettings
from core.settings import EngineSettings, host_url
from tests.fakes.ollama_server import FakeOllama, Reply

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}


def lm(fake: FakeOllama, **settings: Any) -> LanguageModel:
    settings.setdefault("model", "llama3.2")
    return LanguageModel(LlmSettings(host=fake.url, **settings))


def answer(value: Any) -> str:
    return value["a"]


@pytest.mark.slow
def test_a_long_prompt_is_given_the_time_to_be_read_before_the_first_token(
    fake_ollama: FakeOllama,
) -> None:
    # ~150 tokens at an assumed 30 tokens/s: ~7 s of reading allowed on top of the
    # 0.5 s of silence. The model answers after 1.2 s, all of it before its first
    # token (a real Ollama sends nothing, not even headers, while it reads).
    fake_ollama.script(Reply.json({"a": "read it"}, delay=1.2))
    prompt = "word " * 110
    assert lm(fake_ollama, timeout=0.5, retries=0).structured("", prompt, SCHEMA, answer) == (
        "read it"
    )


@pytest.mark.slow
def test_silence_after_the_first_token_is_still_cut_at_the_silence_timeout(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.script(Reply.json({"a": "stalls"}, chunks=3, chunk_delay=3))
    prompt = "word " * 110
    with pytest.raises(LanguageModelError, match="sent nothing for 0.5 s mid-answer") as info:
        lm(fake_ollama, timeout=0.5, retries=0).structured("", prompt, SCHEMA, answer)
    assert info.value.kind == "timeout"


@pytest.mark.slow
def test_the_measured_reading_speed_sets_the_wait_and_the_error_says_so() -> None:
    # A model measured at 5 tokens/s is given ~45 s for a 150-token prompt; one
    # measured as instant gets only the silence timeout, and says why it gave up.
    with FakeOllama(prompt_rate=1e9) as fast:
        fast.script(Reply.json({"a": "x"}), Reply.json({"a": "late"}, delay=2))
        model = lm(fast, timeout=0.5, retries=0)
        model.structured("", "word " * 250, SCHEMA, answer)
        assert model.speed.prompt_rate and model.speed.prompt_rate > 1e6
        with pytest.raises(LanguageModelError, match="sent nothing for 0.5 s"):
            model.structured("", "word " * 110, SCHEMA, answer)
    with FakeOllama(prompt_rate=5) as slow:
        slow.script(Reply.json({"a": "x"}))
        model = lm(slow, timeout=0.5, retries=0)
        model.structured("", "word " * 400, SCHEMA, answer)
        assert model.speed.prompt_rate == pytest.approx(5, rel=0.01)
        assert model._first_wait([{"content": "word " * 110}]) > 40


def test_a_seed_and_the_models_own_context_are_sent() -> None:
    with FakeOllama(context_length=6000) as fake:
        fake.script(Reply.json({"a": "x"}), Reply.json({"a": "y"}))
        model = lm(fake)
        model.structured("", "short", SCHEMA, answer)
        # A prompt needing more than 4096 but within the model's 6000: 6000, not 8192.
        model.structured("", "word " * 2000, SCHEMA, answer)
        first, second = fake.chat_requests
        assert first["options"]["seed"] == second["options"]["seed"] == 42
        assert first["options"]["num_ctx"] == 4096 and second["options"]["num_ctx"] == 6000
        with pytest.raises(LanguageModelError, match="the model's own context"):
            model.structured("", "word " * 6000, SCHEMA, answer)
        assert len(fake.chat_requests) == 2  # refused before sending


def test_no_seed_when_the_settings_say_none(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.json({"a": "x"}))
    lm(fake_ollama, seed=None).structured("", "p", SCHEMA, answer)
    assert "seed" not in fake_ollama.chat_requests[0]["options"]


def test_think_is_not_sent_to_a_model_that_says_it_cannot_think() -> None:
    with FakeOllama(think_capable=False) as fake:
        fake.script(Reply.json({"a": "x"}))
        lm(fake).structured("", "p", SCHEMA, answer)
        [body] = fake.chat_requests  # no refused first attempt
        assert "think" not in body


def test_an_embedding_model_is_not_offered_as_ready() -> None:
    with FakeOllama(models=["nomic-embed-text"], capabilities=["embedding"]) as fake:
        status = lm(fake, model="nomic-embed-text").probe()
    assert status.state == "error" and "cannot chat" in status.message
    assert status.info is not None and status.info.capabilities == ("embedding",)


@pytest.mark.slow
def test_a_server_without_show_details_still_works() -> None:
    with FakeOllama(capabilities=()) as fake:
        fake.script(Reply.json({"a": "x"}))
        model = lm(fake)
        assert model.probe().ready
        assert model.structured("", "p", SCHEMA, answer) == "x"


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:11434"),
        (":11435", "http://127.0.0.1:11435"),
        ("gpu-box", "http://gpu-box:11434"),
        ("gpu-box:8080", "http://gpu-box:8080"),
        ("https://example.com", "https://example.com:443"),
        ("http://example.com/ollama/", "http://example.com:80/ollama"),
        ("[::1]:11434", "http://[::1]:11434"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(given: str, url: str) -> None:
    assert host_url(given) == url


def test_ollama_host_is_the_host_unless_one_was_chosen(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("ENGRAM_OLLAMA_HOST", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11500")
    assert EngineSettings.load(tmp_path).ollama_host == "http://127.0.0.1:11500"
    EngineSettings(ollama_host="http://chosen:11434").save(tmp_path)
    assert EngineSettings.load(tmp_path).ollama_host == "http://chosen:11434"
    monkeypatch.setenv("ENGRAM_OLLAMA_HOST", "http://engram-env:1")
    assert EngineSettings.load(tmp_path).ollama_host == "http://engram-env:1"


@pytest.mark.slow
def test_tokens_are_reported_as_they_stream_and_a_cancel_stops_the_reply(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.script(Reply.json({"a": "x" * 40}, chunks=8))
    seen: list[int] = []
    lm(fake_ollama).structured("", "p", SCHEMA, answer, on_tokens=seen.append)
    assert seen == list(range(1, len(seen) + 1)) and len(seen) >= 8

    class Stop(Exception):
        pass

    def stop(count: int) -> None:
        if count == 2:
            raise Stop

    fake_ollama.script(Reply.json({"a": "x" * 40}, chunks=8), Reply.json({"a": "never"}))
    with pytest.raises(Stop):
        lm(fake_ollama).structured("", "p", SCHEMA, answer, on_tokens=stop)
    assert fake_ollama.pending == 1  # not asked again


def test_one_model_is_safe_to_share_between_threads(fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = lambda body: Reply.json({"a": "ok"}, chunks=4)
    model = lm(fake_ollama)
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(model.structured("", "p", SCHEMA, answer)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["ok"] * 4 and model.speed.calls == 4


def test_a_new_client_of_the_same_model_knows_its_measured_speed(fake_ollama) -> None:
    # Reflect makes its own client per call; it must not assume a slow CPU again
    # when extraction already measured the model.
    fake_ollama.script(Reply.json({"a": "x"}))
    with lm(fake_ollama) as first:
        first.structured("", "word " * 250, SCHEMA, answer)
    with lm(fake_ollama) as second, lm(fake_ollama, model="qwen3:4b") as other:
        assert second.speed.prompt_rate and second.speed.prompt_rate > 1000
        assert other.speed.prompt_rate is None
