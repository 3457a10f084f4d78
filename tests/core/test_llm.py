"""The language-model provider against a fake Ollama server, through the real client."""

from __future__ import annotations

from typing import Any

import httpx
import ollama
import pytest

from core.providers.llm import (
    LanguageModel,
    LanguageModelError,
    LlmSettings,
    is_echo,
    parse_json_reply,
    strip_think,
)
from core.types import EngramError
from tests.fakes.ollama_server import FakeOllama, Reply

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}
EXAMPLE = "Alice works at Google as a software engineer since 2019"


def facts(value: Any) -> list[str]:
    items = value["facts"]
    if not isinstance(items, list) or not all(isinstance(x, str) and x.strip() for x in items):
        raise ValueError("facts must be a list of non-empty strings")
    return items


def lm(fake: FakeOllama, **settings: Any) -> LanguageModel:
    settings.setdefault("model", "llama3.2")
    return LanguageModel(LlmSettings(host=fake.url, **settings))


@pytest.fixture
def dead_url() -> str:
    """An address where nothing listens (a fake server that was stopped)."""
    with FakeOllama() as server:
        url = server.url
    return url


# ---- structured answers ------------------------------------------------------------


def test_structured_answer_and_what_the_server_received(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.json({"facts": ["Bob moved to Paris in 2021"]}))
    model = lm(fake_ollama, temperature=0.05)

    result = model.structured("You extract facts.", "Bob: I moved to Paris in 2021.", SCHEMA, facts)

    assert result == ["Bob moved to Paris in 2021"]
    [body] = fake_ollama.chat_requests
    assert body["model"] == "llama3.2"
    assert body["format"] == SCHEMA
    assert body["options"]["temperature"] == pytest.approx(0.05)
    assert body["think"] is False
    # Streamed, so the timeout bounds silence, not the whole answer.
    assert body["stream"] is True
    assert body["keep_alive"] == "30m"
    assert body["options"]["num_predict"] == 2048
    assert body["options"]["num_ctx"] >= 4096
    assert body["messages"] == [
        {"role": "system", "content": "You extract facts."},
        {"role": "user", "content": "Bob: I moved to Paris in 2021."},
    ]


def test_markdown_wrapped_json_with_trailing_comma_is_repaired(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(
        Reply.text('Sure! Here is the JSON:\n```json\n{"facts": ["Carol likes tea",]}\n```\nDone.')
    )
    assert lm(fake_ollama).structured("", "p", SCHEMA, facts) == ["Carol likes tea"]
    assert len(fake_ollama.chat_requests) == 1


def test_a_reply_cut_by_length_is_asked_again_with_more_room(fake_ollama: FakeOllama) -> None:
    # Four facts need about 30 tokens; the first request allows 16, so the server
    # cuts the reply (done_reason "length") where two of them would survive a repair.
    four = {"facts": ["Dan plays chess", "Eve writes poems", "Fay sails", "Gus bakes bread"]}
    fake_ollama.script(Reply.json(four), Reply.json(four))
    model = lm(fake_ollama, num_predict=16, retries=2)
    assert model.structured("", "p", SCHEMA, facts) == four["facts"]
    first, second = fake_ollama.chat_requests
    assert first["options"]["num_predict"] == 16
    assert second["options"]["num_predict"] == 32
    # Nothing of the cut reply is quoted back: the same question, with room to finish.
    assert second["messages"] == first["messages"]


def test_a_reply_always_cut_by_length_is_reported_never_half_kept(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.script(Reply.text('{"facts": ["Dan plays chess", "Eve wri', done_reason="length"))
    fake_ollama.script(*[Reply.json({"facts": ["x " * 200]})] * 2)
    with pytest.raises(LanguageModelError, match="cut off at the limit of 64 tokens") as info:
        lm(fake_ollama, num_predict=16, max_predict=64, retries=2).structured(
            "", "p", SCHEMA, facts
        )
    assert info.value.kind == "truncated"
    assert [r["options"]["num_predict"] for r in fake_ollama.chat_requests] == [16, 32, 64]


@pytest.mark.parametrize(
    ("reply", "structured"),
    [
        # An extraction reply that writes the same fact object until it is cut.
        (
            '{"facts": ['
            + '{"text": "Maya met Tomás at the Northwind office", "kind": "world"}, ' * 80,
            True,
        ),
        # A plain answer (another conversation) that says one sentence over and over.
        ("The release ships on Friday after the audit. " * 80, False),
    ],
)
def test_a_reply_that_loops_to_its_limit_is_reported_not_asked_again(
    fake_ollama: FakeOllama, reply: str, structured: bool
) -> None:
    fake_ollama.script(*[Reply.text(reply)] * 3)
    model = lm(fake_ollama, num_predict=128, max_predict=512, retries=2)
    with pytest.raises(LanguageModelError, match="repeating itself") as info:
        if structured:
            model.structured("", "p", SCHEMA, facts)
        else:
            model.chat("", "p")
    assert info.value.kind == "truncated"
    assert "not asked again" in str(info.value)
    # One request of 128 tokens, not 128 + 256 + 512 spent on the loop.
    assert [r["options"]["num_predict"] for r in fake_ollama.chat_requests] == [128]


def test_a_long_reply_that_does_not_repeat_still_gets_more_room(fake_ollama: FakeOllama) -> None:
    distinct = " ".join(f"Fact number {i} is about person {i}." for i in range(60))
    fake_ollama.script(Reply.text(distinct), Reply.json({"facts": ["Dan plays chess"]}))
    model = lm(fake_ollama, num_predict=64, max_predict=512, retries=2)
    assert model.structured("", "p", SCHEMA, facts) == ["Dan plays chess"]
    assert [r["options"]["num_predict"] for r in fake_ollama.chat_requests] == [64, 128]


def test_an_answer_cut_at_the_callers_limit_before_any_sentence_is_not_resent(
    fake_ollama: FakeOllama,
) -> None:
    # No sentence end to keep it to: resending the same request at the same limit
    # and seed would only buy the same cut reply twice more.
    fake_ollama.script(*[Reply.text("and then " * 400)] * 3)
    model = lm(fake_ollama, retries=2)
    with pytest.raises(LanguageModelError, match="before its first full sentence") as info:
        model.chat("", "p", max_tokens=32)
    assert info.value.kind == "truncated"
    assert [r["options"]["num_predict"] for r in fake_ollama.chat_requests] == [32]


def test_num_ctx_holds_a_long_prompt(fake_ollama: FakeOllama) -> None:
    # A reflect prompt on the demo bank is about 6k tokens: Ollama's default
    # context (2048 here) would silently drop its start.
    prompt = "Evidence: Dana said the renewal depends on the audit. " * 450
    fake_ollama.script(Reply.text("An answer."), Reply.text("An answer."))
    assert lm(fake_ollama).chat("You answer.", prompt) == "An answer."
    [body] = fake_ollama.chat_requests
    assert body["options"]["num_ctx"] >= len(prompt) // 4 + body["options"]["num_predict"]
    assert fake_ollama.cut_prompts == []
    # The same prompt without num_ctx is what the server would have cut.
    client = ollama.Client(host=fake_ollama.url, timeout=5)
    client.chat(model="llama3.2", messages=body["messages"], stream=False)
    assert len(fake_ollama.cut_prompts) == 1


def test_a_prompt_beyond_the_largest_context_is_refused_not_cut(fake_ollama: FakeOllama) -> None:
    # num_ctx stopped at 32768: a longer prompt (a large reflect budget on a big
    # bank) was sent anyway and lost its start without a word.
    prompt = "Evidence: Dana said the renewal depends on the audit. " * 2500  # ~45k tokens
    fake_ollama.script(Reply.text("An answer."))
    with pytest.raises(LanguageModelError, match="smaller budget") as info:
        lm(fake_ollama).chat("You answer.", prompt)
    assert "more than the 32,768" in str(info.value)
    assert fake_ollama.chat_requests == []  # nothing sent to be cut


@pytest.mark.slow
def test_a_slow_model_that_keeps_writing_is_not_cut_by_the_timeout(
    fake_ollama: FakeOllama,
) -> None:
    # Six pieces 0.4 s apart: 2 s in all, four times the 0.5 s timeout, but never
    # 0.5 s of silence. Without streaming the request would time out.
    fake_ollama.script(Reply.json({"facts": ["slow but steady"]}, chunks=6, chunk_delay=0.4))
    model = lm(fake_ollama, timeout=0.5, retries=0)
    assert model.structured("", "p", SCHEMA, facts) == ["slow but steady"]


@pytest.mark.slow
def test_a_model_silent_past_the_timeout_times_out_and_says_how_to_wait_longer(
    fake_ollama: FakeOllama,
) -> None:
    fake_ollama.script(Reply.json({"facts": ["late"]}, chunks=2, chunk_delay=3))
    with pytest.raises(LanguageModelError, match="ENGRAM_OLLAMA_TIMEOUT") as info:
        lm(fake_ollama, timeout=0.5, retries=0).structured("", "p", SCHEMA, facts)
    assert info.value.kind == "timeout"


def test_missing_field_is_retried_until_valid(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.json({"fact": "no plural"}), Reply.json({"facts": ["ok"]}))
    assert lm(fake_ollama, retries=2).structured("", "p", SCHEMA, facts) == ["ok"]
    first, second = fake_ollama.chat_requests
    # The re-ask is not the identical request: it quotes the bad answer and says what was wrong.
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assistant, user = second["messages"][len(first["messages"]) :]
    assert assistant == {"role": "assistant", "content": '{"fact": "no plural"}'}
    assert user["role"] == "user" and "missing field 'facts'" in user["content"]


def test_missing_field_gives_up_after_bounded_retries(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(*[Reply.json({"fact": "x"})] * 5)
    with pytest.raises(LanguageModelError) as info:
        lm(fake_ollama, retries=2).structured("", "p", SCHEMA, facts)
    assert len(fake_ollama.chat_requests) == 3
    assert fake_ollama.pending == 2
    message = str(info.value)
    assert "missing field 'facts'" in message
    assert "3 attempts" in message
    assert info.value.kind == "invalid"
    assert isinstance(info.value, EngramError)


def test_validator_message_is_reported(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.json({"facts": [""]}))
    with pytest.raises(LanguageModelError, match="facts must be a list of non-empty strings"):
        lm(fake_ollama, retries=0).structured("", "p", SCHEMA, facts)


def test_unparseable_reply_is_reported_as_invalid_json(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text("I cannot help with that."), Reply.text("Still no."))
    with pytest.raises(LanguageModelError, match="not valid JSON") as info:
        lm(fake_ollama, retries=1).structured("", "p", SCHEMA, facts)
    assert "2 attempts" in str(info.value)


def test_copied_example_is_rejected_then_real_answer_accepted(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(
        Reply.json({"facts": ["alice works at Google as a software engineer since 2019."]}),
        Reply.json({"facts": ["Frank adopted a dog named Rex"]}),
    )
    result = lm(fake_ollama).structured("", "p", SCHEMA, facts, examples=[EXAMPLE])
    assert result == ["Frank adopted a dog named Rex"]
    assert len(fake_ollama.chat_requests) == 2


def test_always_copied_example_fails_with_reason(fake_ollama: FakeOllama) -> None:
    # Near-identical (one word changed) still counts as a copy.
    fake_ollama.script(*[Reply.json({"facts": [EXAMPLE.replace("since", "from")]})] * 3)
    with pytest.raises(LanguageModelError, match="copied the prompt's example"):
        lm(fake_ollama, retries=1).structured("", "p", SCHEMA, facts, examples=[EXAMPLE])
    assert len(fake_ollama.chat_requests) == 2


def test_http_500_then_success(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.http_error(500, "llama runner crashed"), Reply.json({"facts": ["x"]}))
    assert lm(fake_ollama).structured("", "p", SCHEMA, facts) == ["x"]
    assert len(fake_ollama.chat_requests) == 2


def test_http_500_every_time_names_status(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(*[Reply.http_error(500, "llama runner crashed")] * 3)
    with pytest.raises(LanguageModelError, match="HTTP 500: llama runner crashed") as info:
        lm(fake_ollama, retries=2).structured("", "p", SCHEMA, facts)
    assert info.value.kind == "http"
    assert len(fake_ollama.chat_requests) == 3


def test_missing_model_is_not_retried(fake_ollama: FakeOllama) -> None:
    with pytest.raises(LanguageModelError, match="ollama pull mistral") as info:
        lm(fake_ollama, model="mistral").structured("", "p", SCHEMA, facts)
    assert info.value.kind == "model"
    assert len(fake_ollama.chat_requests) == 1


@pytest.mark.slow
def test_slow_answer_times_out(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.json({"facts": ["late"]}, delay=30))
    with pytest.raises(LanguageModelError, match="timeout") as info:
        lm(fake_ollama, timeout=0.5, retries=0).structured("", "p", SCHEMA, facts)
    assert info.value.kind == "timeout"
    assert "0.5 s" in str(info.value)
    assert len(fake_ollama.chat_requests) == 1


@pytest.mark.slow
def test_timeout_is_retried(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.delayed(30), Reply.json({"facts": ["on time"]}))
    result = lm(fake_ollama, timeout=0.5, retries=1).structured("", "p", SCHEMA, facts)
    assert result == ["on time"]
    assert len(fake_ollama.chat_requests) == 2


def test_dropped_connection_is_retried(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.dies(), Reply.json({"facts": ["back"]}))
    assert lm(fake_ollama).structured("", "p", SCHEMA, facts) == ["back"]
    assert len(fake_ollama.chat_requests) == 2


def test_server_dying_gives_error_without_wasted_retries(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.dies(shutdown_server=True), Reply.json({"facts": ["never"]}))
    with pytest.raises(LanguageModelError, match="not reachable") as info:
        lm(fake_ollama, retries=5).structured("", "p", SCHEMA, facts)
    assert info.value.kind == "unreachable"
    assert len(fake_ollama.chat_requests) == 1
    assert not fake_ollama.running


def test_unreachable_server_fails_at_once(dead_url: str) -> None:
    model = LanguageModel(LlmSettings(host=dead_url, model="llama3.2", retries=5))
    with pytest.raises(LanguageModelError, match=f"not reachable at {dead_url}") as info:
        model.structured("", "p", SCHEMA, facts)
    assert info.value.kind == "unreachable"
    with pytest.raises(LanguageModelError, match="not reachable"):
        model.chat("", "hi")


def test_no_model_configured(fake_ollama: FakeOllama) -> None:
    with pytest.raises(LanguageModelError, match="no language model") as info:
        lm(fake_ollama, model="").structured("", "p", SCHEMA, facts)
    assert info.value.kind == "config"
    assert fake_ollama.chat_requests == []


def test_answer_only_in_thinking_is_used(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply(content="", thinking='{"facts": ["from thinking"]}'))
    assert lm(fake_ollama).structured("", "p", SCHEMA, facts) == ["from thinking"]


# ---- plain chat --------------------------------------------------------------------


def test_chat_returns_text_without_think_block(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text("<think>The user greets me.</think>\n\nHello, Alice!"))
    assert lm(fake_ollama).chat("Be brief.", "Hi, I am Alice") == "Hello, Alice!"
    [body] = fake_ollama.chat_requests
    assert "format" not in body
    assert body["think"] is False
    assert body["messages"][-1] == {"role": "user", "content": "Hi, I am Alice"}


def test_chat_falls_back_to_thinking_when_content_is_empty(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply(content="<think>only thoughts</think>", thinking="The answer is 4."))
    assert lm(fake_ollama).chat("", "2+2?") == "The answer is 4."


def test_chat_empty_answer_is_retried(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.text("   "), Reply.text("Second try."))
    assert lm(fake_ollama).chat("", "q") == "Second try."
    assert len(fake_ollama.chat_requests) == 2


def test_think_field_dropped_when_server_refuses_it(fake_ollama: FakeOllama) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        if "think" in body:
            return Reply.http_error(400, '"llama3.2" does not support thinking')
        return Reply.text("plain")

    fake_ollama.responder = responder
    model = lm(fake_ollama, retries=0)
    assert model.chat("", "q") == "plain"
    assert model.chat("", "q") == "plain"
    sent = fake_ollama.chat_requests
    assert ["think" in b for b in sent] == [True, False, False]


def test_other_client_errors_are_not_retried(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(Reply.http_error(400, "invalid format schema"), Reply.text("never"))
    with pytest.raises(LanguageModelError, match="HTTP 400: invalid format schema"):
        lm(fake_ollama, retries=3).chat("", "q")
    assert len(fake_ollama.chat_requests) == 1


# ---- listing, availability, connection test ---------------------------------------


def test_models_lists_installed_models(fake_ollama: FakeOllama) -> None:
    assert lm(fake_ollama).models() == ["llama3.2:latest", "qwen3:4b"]
    assert fake_ollama.requests_to("/api/tags")


def test_models_raises_when_unreachable(dead_url: str) -> None:
    with pytest.raises(LanguageModelError, match="not reachable"):
        LanguageModel(LlmSettings(host=dead_url, model="llama3.2")).models()


@pytest.mark.parametrize("name", ["llama3.2", "llama3.2:latest", "LLAMA3.2", "qwen3:4b"])
def test_available_matches_with_or_without_tag(fake_ollama: FakeOllama, name: str) -> None:
    assert lm(fake_ollama, model=name).available() is True


@pytest.mark.parametrize("name", ["mistral", "qwen3", "llama3.2:1b", ""])
def test_available_false_when_model_missing(fake_ollama: FakeOllama, name: str) -> None:
    assert lm(fake_ollama, model=name).available() is False


def test_available_false_when_nothing_listens(dead_url: str) -> None:
    assert LanguageModel(LlmSettings(host=dead_url, model="llama3.2")).available() is False


def test_available_false_when_no_model_installed(fake_ollama: FakeOllama) -> None:
    fake_ollama.models = []
    assert lm(fake_ollama).available() is False


def test_check_reports_available_model_with_what_it_supports(fake_ollama: FakeOllama) -> None:
    # What the model is and can do comes from /api/show, as Settings shows it.
    assert lm(fake_ollama).check() == (
        f"Connected to {fake_ollama.url}: 2 models; 'llama3.2' available"
        " (llama · 3.2B · Q4_K_M · context 131,072 tokens · completion, thinking)"
    )


def test_check_reports_missing_model(fake_ollama: FakeOllama) -> None:
    text = lm(fake_ollama, model="mistral").check()
    assert text.startswith(f"Connected to {fake_ollama.url}: 2 models, but 'mistral'")
    assert "ollama pull mistral" in text
    assert "llama3.2:latest" in text


def test_check_reports_no_model_chosen(fake_ollama: FakeOllama) -> None:
    fake_ollama.models = ["phi3:latest"]
    assert lm(fake_ollama, model="").check() == (
        f"Connected to {fake_ollama.url}: 1 model; no model chosen (installed: phi3:latest)"
    )


def test_check_reports_unreachable(dead_url: str) -> None:
    text = LanguageModel(LlmSettings(host=dead_url, model="llama3.2")).check()
    assert text.startswith(f"Ollama is not reachable at {dead_url}")


def test_check_reports_bad_host() -> None:
    model = LanguageModel(LlmSettings(host="http://127.0.0.1:99999", model="llama3.2"))
    assert "not a valid address" in model.check()
    assert model.available() is False
    with pytest.raises(LanguageModelError, match="not a valid address"):
        model.chat("", "q")


def test_check_reports_non_ollama_server(fake_ollama: FakeOllama) -> None:
    # The fake answers 404 for unknown routes, like a web server that is not Ollama.
    model = LanguageModel(LlmSettings(host=fake_ollama.url + "/elsewhere", model="llama3.2"))
    assert "HTTP 404" in model.check()


# ---- the fake itself speaks the API the client expects -----------------------------


def test_fake_serves_embed_show_version_and_streaming(fake_ollama: FakeOllama) -> None:
    client = ollama.Client(host=fake_ollama.url, timeout=5)
    embedded = client.embed(model="llama3.2", input=["a", "b", "a"])
    assert len(embedded.embeddings) == 3
    assert embedded.embeddings[0] == embedded.embeddings[2] != embedded.embeddings[1]
    assert len(embedded.embeddings[0]) == fake_ollama.embed_dim

    shown = client.show("qwen3:4b")
    assert shown.capabilities is not None and "thinking" in shown.capabilities

    assert httpx.get(fake_ollama.url + "/api/version").json()["version"]

    fake_ollama.script(Reply.text("streamed"))
    parts = list(
        client.chat(model="llama3.2", messages=[{"role": "user", "content": "q"}], stream=True)
    )
    assert "".join(p.message.content or "" for p in parts) == "streamed"
    assert parts[-1].done is True

    fake_ollama.script(Reply.text("generated"))
    assert client.generate(model="llama3.2", prompt="q").response == "generated"


def test_fake_without_script_fails_loudly(fake_ollama: FakeOllama) -> None:
    client = ollama.Client(host=fake_ollama.url, timeout=5)
    with pytest.raises(ollama.ResponseError) as info:
        client.chat(model="llama3.2", messages=[{"role": "user", "content": "q"}])
    assert info.value.status_code == 500
    assert "no scripted reply" in info.value.error


def test_fake_refuses_thinking_for_non_thinking_model() -> None:
    with FakeOllama(think_capable=False) as fake:
        client = ollama.Client(host=fake.url, timeout=5)
        with pytest.raises(ollama.ResponseError) as info:
            client.chat(model="llama3.2", messages=[{"role": "user", "content": "q"}], think=True)
        assert info.value.status_code == 400
    # Stopped: nothing listens any more.
    with pytest.raises(ConnectionError):
        client.list()


# ---- the tolerant parser -----------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("[1, 2, 3]", [1, 2, 3]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('```JSON\n[{"a": 1}]\n```\nLet me know!', [{"a": 1}]),
        ('Here you go: {"a": "b"} Hope that helps.', {"a": "b"}),
        ('Result:\n\n{\n  "a": [1, 2,],\n  "b": {"c": 3,},\n}\n', {"a": [1, 2], "b": {"c": 3}}),
        ('<think>maybe {"a": 0}?</think>\n{"a": 1}', {"a": 1}),
        ('I should answer.</think>{"a": 1}', {"a": 1}),
        ('{"a": "has } and ] and \\" inside"}', {"a": 'has } and ] and " inside'}),
        ('{"text": "comma, then ]"}', {"text": "comma, then ]"}),
        ('{"facts": ["one", "tw', {"facts": ["one", "tw"]}),
        ('{"a": {"b": [1, 2', {"a": {"b": [1, 2]}}),
        ('{"a": 1, "b": ', {"a": 1, "b": None}),
        ('{"a": 1, "partial_ke', {"a": 1}),
        ('{"a": 1, "b": tru', {"a": 1}),
        ('{"a": 1, "b": 12.', {"a": 1}),
        ('{"a": "ends with backslash \\', {"a": "ends with backslash "}),
        ('```json\n{"a": [1, 2]', {"a": [1, 2]}),
        ("{'a': 'single quotes', 'b': [1, 2]}", {"a": "single quotes", "b": [1, 2]}),
        ('Step [1]: think. {"a": 1}', {"a": 1}),
        ('Answer: [{"a": 1}, {"a": 2}]', [{"a": 1}, {"a": 2}]),
        ('see {this} then {"a": 1}', {"a": 1}),
        ('{"a": "ünïcödé ✓"}', {"a": "ünïcödé ✓"}),
        ('\ufeff{"a": 1}', {"a": 1}),
        ('"just a string"', "just a string"),
    ],
)
def test_parse_json_reply(reply: str, expected: Any) -> None:
    assert parse_json_reply(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "<think>all thought</think>",
        "No JSON here.",
        "{not json at all}",
        "{]",
        "```\n```",
    ],
)
def test_parse_json_reply_rejects(reply: str) -> None:
    with pytest.raises(ValueError):
        parse_json_reply(reply)


def test_strip_think() -> None:
    assert strip_think("<think>a</think>b<thinking>c</thinking>d") == "bd"
    assert strip_think("<THINK>\nx\n</THINK>answer") == "answer"
    assert strip_think("<think>cut off mid-thought") == "cut off mid-thought"


@pytest.mark.parametrize(
    ("text", "echo"),
    [
        (EXAMPLE, True),
        ("  ALICE works at google, as a software-engineer since 2019!  ", True),
        ("Alice works at Google as a software engineer since 2018", True),
        ("Bob works at Microsoft as a designer since 2021", False),
        ("Alice", False),
        ("", False),
    ],
)
def test_is_echo(text: str, echo: bool) -> None:
    assert is_echo(text, ["Some other example sentence here", EXAMPLE]) is echo


def test_is_echo_short_examples_need_exact_copy() -> None:
    assert is_echo("Paris", ["paris"]) is True
    assert is_echo("Pariss", ["Paris"]) is False
