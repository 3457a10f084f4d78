"""LLM-mode extraction against the fake Ollama server, through the real `ollama` client."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from core.providers.llm import LanguageModel, LlmSettings
from core.retain.extract import Exchange, ExtractionError
from core.retain.llm_extract import (
    EXAMPLE_TEXTS,
    FACT_SCHEMA,
    MAX_TEMPERATURE,
    LlmExtractor,
    build_prompt,
    validate_facts,
)
from core.types import ExtractionMode, Network, Turn
from tests.fakes.ollama_server import FakeOllama, Reply

SESSION = datetime(2023, 5, 8, 13, 56)
MODEL = "llama3.2"


def exchange() -> Exchange:
    return Exchange(
        (
            Turn(
                "D1:3", "Caroline", "I went to a LGBTQ support group yesterday.", SESSION, "s1", 0
            ),
            Turn("D1:4", "Melanie", "I think that's so brave of you!", SESSION, "s1", 1),
        ),
        "s1",
    )


def fact(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "text": "Caroline went to an LGBTQ support group on 7 May 2023.",
        "network": "world",
        "occurred_start": "2023-05-07",
        "occurred_end": "2023-05-08",
        "entities": [{"name": "Caroline", "type": "person"}, {"name": "LGBTQ", "type": "concept"}],
        "causal": [],
        "source_ids": ["D1:3"],
        "confidence": None,
    }
    base.update(overrides)
    return base


GOOD = {
    "facts": [
        fact(causal=[{"target_index": 1, "relation": "causes", "strength": 0.7}]),
        fact(
            text="Melanie thinks Caroline was brave to go to the support group.",
            network="opinion",
            occurred_start=None,
            occurred_end=None,
            entities=[{"name": "Melanie", "type": "person"}],
            causal=[{"target_index": 0, "relation": "caused_by", "strength": 0.7}],
            source_ids=["D1:4"],
            confidence=0.6,
        ),
    ]
}


def lm(fake: FakeOllama, **settings: Any) -> LanguageModel:
    settings.setdefault("model", MODEL)
    settings.setdefault("retries", 2)
    return LanguageModel(LlmSettings(host=fake.url, **settings))


def test_normal_answer_becomes_facts_and_the_request_is_structured(fake_ollama) -> None:
    fake_ollama.script(Reply.json(GOOD))
    extractor = LlmExtractor(lm(fake_ollama))
    assert extractor.mode is ExtractionMode.LLM and extractor.model == MODEL

    went, brave = extractor.extract(exchange(), "Caroline", ["LGBTQ", "Nobody Else"])

    assert went.network is Network.WORLD
    assert (went.occurred_start, went.occurred_end) == (datetime(2023, 5, 7), datetime(2023, 5, 8))
    assert went.mentioned_at == SESSION
    assert went.source_ids == ("D1:3",)
    assert went.confidence is None
    assert [(e.name, e.type) for e in went.entities] == [
        ("Caroline", "person"),
        ("LGBTQ", "concept"),
    ]
    assert [(c.target_index, c.relation, c.strength) for c in went.causal] == [(1, "causes", 0.7)]
    # Melanie's view, not the agent's (Caroline's): a world fact naming its holder.
    assert brave.network is Network.WORLD and brave.confidence is None
    assert brave.text.startswith("Melanie thinks")
    assert brave.occurred_start is None and brave.occurred_end is None
    # The speaker the model forgot to list but named in the text is added as a person.
    assert ("Caroline", "person") in [(e.name, e.type) for e in brave.entities]
    assert all(f.mode is ExtractionMode.LLM and f.model == MODEL for f in (went, brave))

    [body] = fake_ollama.chat_requests
    assert body["format"] == FACT_SCHEMA
    assert body["options"]["temperature"] <= MAX_TEMPERATURE
    assert body["stream"] is True
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    for word in ("world", "experience", "opinion", "observation", "Caroline"):
        assert word in system["content"]
    for example in EXAMPLE_TEXTS:
        assert example in system["content"]
    assert "2023-05-08 (Monday)" in user["content"]
    assert "[D1:3] Caroline: I went to a LGBTQ support group yesterday." in user["content"]
    assert "LGBTQ" in user["content"] and "Nobody Else" not in user["content"]


def test_schema_constrains_networks_and_relations() -> None:
    item = FACT_SCHEMA["properties"]["facts"]["items"]
    assert item["properties"]["network"]["enum"] == ["world", "experience", "opinion"]
    assert set(item["properties"]["causal"]["items"]["properties"]["relation"]["enum"]) == {
        "causes",
        "caused_by",
        "enables",
        "prevents",
    }
    assert FACT_SCHEMA["properties"]["facts"]["maxItems"] == 5
    json.dumps(FACT_SCHEMA)  # serialisable as Ollama's `format`


def test_hot_model_settings_are_clamped_to_a_low_temperature(fake_ollama) -> None:
    fake_ollama.script(Reply.json(GOOD))
    extractor = LlmExtractor(lm(fake_ollama, temperature=0.9))
    extractor.extract(exchange(), "", [])
    extractor.close()
    [body] = fake_ollama.chat_requests
    assert body["options"]["temperature"] == pytest.approx(MAX_TEMPERATURE)


def test_markdown_wrapped_answer_is_repaired(fake_ollama) -> None:
    fake_ollama.script(
        Reply.text("Here are the facts:\n```json\n" + json.dumps(GOOD) + "\n```\nHope this helps!")
    )
    facts = LlmExtractor(lm(fake_ollama)).extract(exchange(), "", [])
    assert len(facts) == 2
    assert len(fake_ollama.chat_requests) == 1


def test_echoed_example_is_rejected_then_retried(fake_ollama) -> None:
    echo = {"facts": [fact(text=EXAMPLE_TEXTS[0], source_ids=["D1:3"])]}
    fake_ollama.script(Reply.json(echo), Reply.json(GOOD))
    facts = LlmExtractor(lm(fake_ollama)).extract(exchange(), "", [])
    assert [f.text for f in facts] == [f["text"] for f in GOOD["facts"]]
    assert len(fake_ollama.chat_requests) == 2


def test_garbage_every_time_raises_extraction_error_after_bounded_retries(fake_ollama) -> None:
    fake_ollama.script(*[Reply.text("I cannot help with that.")] * 3)
    with pytest.raises(ExtractionError) as caught:
        LlmExtractor(lm(fake_ollama, retries=2)).extract(exchange(), "", [])
    assert len(fake_ollama.chat_requests) == 3
    assert "D1:3" in str(caught.value) and "D1:4" in str(caught.value)
    assert caught.value.kind == "invalid"


def test_answers_with_no_usable_fact_are_retried(fake_ollama) -> None:
    fake_ollama.script(
        Reply.json({"facts": []}),
        Reply.json({"facts": [fact(network="observation"), fact(text="   ")]}),
        Reply.json(GOOD),
    )
    facts = LlmExtractor(lm(fake_ollama)).extract(exchange(), "", [])
    assert len(facts) == 2
    assert len(fake_ollama.chat_requests) == 3


def test_unreachable_server_is_an_extraction_error_of_that_kind() -> None:
    with FakeOllama() as server:
        url = server.url
    model = LanguageModel(LlmSettings(host=url, model=MODEL, retries=0, timeout=2))
    with pytest.raises(ExtractionError) as caught:
        LlmExtractor(model).extract(exchange(), "", [])
    assert caught.value.kind == "unreachable"


def test_unknown_source_ids_are_dropped(fake_ollama) -> None:
    fake_ollama.script(
        Reply.json(
            {
                "facts": [
                    fact(source_ids=["D1:3", "D9:99", "[D1:4]"]),
                    fact(source_ids=["nope", "D7:1"]),
                    # (Of Melanie's turn: a fact naming Caroline as its actor would not be.)
                    fact(text="Melanie thinks Caroline is brave.", source_ids="D1:4"),
                ]
            }
        )
    )
    mixed, unknown, single = LlmExtractor(lm(fake_ollama)).extract(exchange(), "", [])
    assert mixed.source_ids == ("D1:3", "D1:4")
    # Nothing valid left: the fact came from this exchange, so it cites all of it.
    assert unknown.source_ids == ("D1:3", "D1:4")
    assert single.source_ids == ("D1:4",)


# ---- validation without a server -------------------------------------------------------


def test_validation_repairs_what_it_can_and_drops_what_it_cannot() -> None:
    value = {
        "facts": [
            fact(network="Opinion", confidence=1.7, occurred_start="not a date", occurred_end=None),
            fact(network="observation"),  # dropped: not an extractable network
            fact(
                confidence=0.9,  # not an opinion: no confidence
                occurred_start="2023-05-07T10:00:00+02:00",
                occurred_end=None,
                causal=[
                    {"target_index": 7, "relation": "causes", "strength": 0.5},  # out of range
                    {"target_index": 1, "relation": "causes", "strength": 0.5},  # dropped fact
                    {"target_index": 2, "relation": "causes", "strength": 0.5},  # itself
                    {"target_index": 3, "relation": "caused by", "strength": 3},
                    {"target_index": 0, "relation": "explains", "strength": 0.5},  # bad relation
                    {"target_index": True, "relation": "causes"},  # not an index
                ],
                entities=[
                    {"name": "  Caroline ", "type": "PERSON"},
                    {"name": "x", "type": "alien"},
                    "Mel",
                    5,
                ],
            ),
            fact(
                network="opinion",
                confidence=None,
                occurred_start="last week",
                occurred_end=None,
                causal=[{"target_index": 2, "relation": "enables"}],
            ),
        ]
    }
    opinion, world, vague = validate_facts(value, exchange(), "m")
    assert opinion.network is Network.OPINION and opinion.confidence == 1.0
    assert opinion.occurred_start is None and opinion.occurred_end is None
    assert world.network is Network.WORLD and world.confidence is None
    # An aware datetime becomes naive UTC (an instant).
    assert world.occurred_start == datetime(2023, 5, 7, 8, 0) == world.occurred_end
    # Only the relation to a kept fact survives, renumbered past the dropped one.
    assert [(c.target_index, c.relation, c.strength) for c in world.causal] == [
        (2, "caused_by", 1.0)
    ]
    assert [(e.name, e.type) for e in world.entities] == [
        ("Caroline", "person"),
        ("x", "other"),
        ("Mel", "other"),
    ]
    # A phrase is resolved against the session; a missing confidence gets a default.
    assert vague.confidence == pytest.approx(0.5)
    assert (vague.occurred_start, vague.occurred_end) == (
        datetime(2023, 5, 1),
        datetime(2023, 5, 8),
    )
    assert [(c.target_index, c.relation, c.strength) for c in vague.causal] == [(1, "enables", 0.5)]


def test_validation_date_ranges() -> None:
    def span(start: Any, end: Any) -> tuple[datetime | None, datetime | None]:
        [f] = validate_facts({"facts": [fact(occurred_start=start, occurred_end=end)]}, exchange())
        return f.occurred_start, f.occurred_end

    # The exclusive end the prompt asks for ...
    assert span("2023-05-01", "2023-05-08") == (datetime(2023, 5, 1), datetime(2023, 5, 8))
    # ... and the same day given twice means that whole day.
    assert span("2023-05-07", "2023-05-07") == (datetime(2023, 5, 7), datetime(2023, 5, 8))
    assert span("2023-05-07", None) == (datetime(2023, 5, 7), datetime(2023, 5, 8))
    assert span(None, "2023-05-07") == (datetime(2023, 5, 7), datetime(2023, 5, 8))
    assert span("2023-02-30", "garbage") == (None, None)
    # Reversed: put in order.
    assert span("2023-05-09", "2023-05-01") == (datetime(2023, 5, 1), datetime(2023, 5, 10))


def test_validation_rejects_answers_without_facts() -> None:
    with pytest.raises(KeyError):
        validate_facts({"items": []}, exchange())
    with pytest.raises(ValueError):
        validate_facts({"facts": "Caroline went out"}, exchange())
    with pytest.raises(ValueError):
        validate_facts({"facts": [fact(network=None)]}, exchange())
    # A bare list of facts is accepted; more than five are cut to five.
    facts = validate_facts([fact(text=f"Fact number {i}.") for i in range(8)], exchange())
    assert [f.text for f in facts] == [f"Fact number {i}." for i in range(5)]


def test_prompt_gives_per_turn_times_only_when_they_differ() -> None:
    turns = (
        Turn("a", "Ann", "Hi", datetime(2024, 1, 1, 9, 0), "", 0),
        Turn("b", "Bob", "Hey", datetime(2024, 1, 1, 18, 30), "", 1),
    )
    prompt = build_prompt(Exchange(turns, ""), "Bob")
    assert "Session date: 2024-01-01 (Monday), 09:00." in prompt
    assert "The agent is Bob." in prompt
    assert "[b] (2024-01-01 (Monday), 18:30) Bob: Hey" in prompt
    assert "(" not in build_prompt(exchange(), "").split("\n", 2)[2]
