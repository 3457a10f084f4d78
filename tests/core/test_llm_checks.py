"""The checks on a model's facts, on what a real 0.5B model wrote (issue 30).

Every case here is an answer a real small model gave that the fake never did:
a third party's action as the agent's experience, small talk as an opinion at
0.9, a turn copied with its speaker's prefix, a misspelt name, a date the
turns do not allow, the prompt's example conversation given back."""

from __future__ import annotations

from datetime import datetime

import pytest

from core.providers.llm import LanguageModel, LlmSettings
from core.retain.extract import EntityMention, Exchange, ExtractedFact
from core.retain.grounding import Vocabulary, support
from core.retain.llm_checks import (
    ACTOR_NOT_IN_TURNS,
    COPIED_TURN,
    DATE_OUTSIDE,
    MISSPELT_NAME,
    NOT_A_MEMORY,
    NOT_THE_AGENT_ACTING,
    NOT_THE_AGENTS_EXPERIENCE,
    NOT_THE_AGENTS_OPINION,
    SPEAKER_AS_ACTOR,
    UNSUPPORTED,
    check_facts,
)
from core.retain.llm_extract import LlmExtractor
from core.types import ExtractionMode, Network, Turn
from tests.fakes.ollama_server import FakeOllama, Reply

WHEN = datetime(2025, 6, 12, 10)
TURNS = (
    Turn("t1", "Maya", "Can someone book the staging run for Friday?", WHEN, "s", 0),
    Turn("t2", "Juniper", "I booked the staging run for Friday at 9.", WHEN, "s", 1),
    Turn("t3", "Priya", "Ouch.", WHEN, "s", 2),
    Turn("t4", "Maya", "I think the Postgres lock took 40 minutes.", WHEN, "s", 3),
    Turn("t5", "Maya", "Good. Have a calm weekend, everyone.", WHEN, "s", 4),
)
EXCHANGE = Exchange(TURNS, "s")


def fact(text, network=Network.WORLD, sources=("t2",), confidence=None, **kw) -> ExtractedFact:
    return ExtractedFact(
        text=text,
        network=network,
        occurred_start=kw.get("start"),
        occurred_end=kw.get("end"),
        mentioned_at=WHEN,
        entities=tuple(kw.get("entities", ())),
        causal=(),
        source_ids=tuple(sources),
        confidence=confidence,
        mode=ExtractionMode.LLM,
    )


def check(*facts, agent="Juniper"):
    return check_facts(list(facts), EXCHANGE, agent, ["Beacon"])


def reasons(verdicts) -> list[str]:
    return [v.reason.split(":")[0] for v in verdicts]


def test_the_agents_own_action_is_kept_as_experience():
    result = check(fact("Juniper booked the staging run for Friday.", Network.EXPERIENCE))
    [kept] = result.facts
    assert kept.network is Network.EXPERIENCE and not result.dropped and not result.repaired


def test_a_third_party_named_as_the_actor_of_the_agents_turn_is_dropped():
    # "Maya booked the staging run" -- Juniper did.
    result = check(fact("Maya booked the staging run for Friday.", Network.EXPERIENCE))
    assert result.facts == [] and reasons(result.dropped) == [NOT_THE_AGENT_ACTING]


def test_experience_in_a_bank_without_an_agent_is_a_world_fact():
    result = check(fact("Juniper booked the staging run.", Network.EXPERIENCE), agent="")
    [kept] = result.facts
    assert kept.network is Network.WORLD
    assert reasons(result.repaired) == [NOT_THE_AGENTS_EXPERIENCE]


def test_another_speakers_view_is_a_world_fact_naming_its_holder():
    result = check(
        fact("The Postgres lock took 40 minutes.", Network.OPINION, ("t4",), confidence=0.6)
    )
    [kept] = result.facts
    assert kept.network is Network.WORLD and kept.confidence is None
    assert kept.text == "Maya thinks that the Postgres lock took 40 minutes."
    assert reasons(result.repaired) == [NOT_THE_AGENTS_OPINION]


def test_a_fact_whose_actor_its_turns_do_not_make_the_actor_is_dropped():
    """What a real 0.5B model wrote: "Maya returns on August 18" of Maya's turn
    "Tomás returns on August 18"; "Maya shared the draft" of others' turns."""
    turns = (
        Turn("u1", "Maya", "Tomás returns on August 18, so he can settle in.", WHEN, "s", 0),
        Turn("u2", "Maya", "Northwind signed the Atlas extension yesterday!", WHEN, "s", 1),
        Turn("u3", "Priya", "I'm designing the supplier portal screens.", WHEN, "s", 2),
        Turn("u4", "Maya", "Can someone review the portal screens?", WHEN, "s", 3),
    )
    exchange = Exchange(turns, "s")
    result = check_facts(
        [
            fact("Maya returns on August 18, so she can settle in.", sources=("u1",)),
            fact("Maya signed the Atlas extension yesterday.", sources=("u2",)),
            fact("Maya is designing the supplier portal screens.", sources=("u3",)),
            # Kept: the turn's subject is named, the speaker speaks for herself, asks.
            fact("Tomás returns on August 18.", sources=("u1",)),
            fact("Priya is designing the supplier portal screens.", sources=("u3",)),
            fact("Maya asked for a review of the portal screens.", sources=("u4",)),
        ],
        exchange,
        "Juniper",
    )
    assert [f.text for f in result.facts] == [
        "Tomás returns on August 18.",
        "Priya is designing the supplier portal screens.",
        "Maya asked for a review of the portal screens.",
    ]
    assert reasons(result.dropped) == [SPEAKER_AS_ACTOR, SPEAKER_AS_ACTOR, ACTOR_NOT_IN_TURNS]
    assert result.dropped[0].reason.endswith("Maya for Tomás")


def test_small_talk_as_an_opinion_and_bare_reactions_are_dropped():
    result = check(
        fact("Maya: Good. Have a calm weekend, everyone.", Network.OPINION, ("t5",), 0.9),
        fact("Priya: Ouch.", sources=("t3",)),
        fact("Have a calm weekend, everyone.", sources=("t5",)),
        fact("Can someone book the staging run?", sources=("t1",)),
    )
    assert result.facts == []
    assert reasons(result.dropped) == [COPIED_TURN, COPIED_TURN, NOT_A_MEMORY, NOT_A_MEMORY]


def test_a_turn_copied_with_its_prefix_is_quoted_as_its_speakers():
    result = check(fact("Juniper: I booked the staging run for Friday at 9."))
    [kept] = result.facts
    assert kept.text == 'Juniper said: "I booked the staging run for Friday at 9."'
    assert reasons(result.repaired) == [COPIED_TURN]


def test_a_misspelt_name_is_corrected_in_the_text_and_the_entities():
    result = check(
        fact(
            "Juliper booked the staging run for Friday.",
            Network.EXPERIENCE,
            entities=[EntityMention("Juliper", "person")],
        )
    )
    [kept] = result.facts
    assert kept.text == "Juniper booked the staging run for Friday."
    assert [e.name for e in kept.entities] == ["Juniper"]
    assert reasons(result.repaired) == [MISSPELT_NAME]


def test_a_fact_the_turns_do_not_support_is_dropped():
    result = check(
        fact(
            "Maya, a 25-year-old woman with a passion for music, enjoys technology.",
            sources=("t1",),
        ),
        fact("Priya adopted her neighbour's greyhound Biscuit in Lisbon.", sources=("t3",)),
    )
    assert result.facts == [] and reasons(result.dropped) == [UNSUPPORTED, UNSUPPORTED]
    assert "Biscuit" in result.dropped[1].reason


def test_a_date_the_turns_do_not_allow_is_taken_off_the_fact():
    result = check(
        fact(
            "Juniper booked the staging run.",
            Network.EXPERIENCE,
            start=datetime(1999, 1, 1),
            end=datetime(1999, 1, 2),
        ),
        fact(
            "Juniper booked the staging run for Friday.",
            Network.EXPERIENCE,
            start=datetime(2025, 6, 13),
            end=datetime(2025, 6, 14),
        ),
    )
    wrong, right = result.facts
    assert wrong.occurred_start is None and reasons(result.repaired) == [DATE_OUTSIDE]
    assert right.occurred_start == datetime(2025, 6, 13)


def test_causal_links_follow_the_facts_that_stay():
    from dataclasses import replace

    from core.retain.extract import CausalRelation

    dropped = fact("Priya: Ouch.", sources=("t3",))
    cause = replace(
        fact("Maya asked for the staging run to be booked.", sources=("t1",)),
        causal=(CausalRelation(2, "causes", 0.8), CausalRelation(0, "caused_by", 0.5)),
    )
    effect = fact("Juniper booked the staging run for Friday.", Network.EXPERIENCE)
    result = check(dropped, cause, effect)
    first, _second = result.facts
    assert [(c.target_index, c.relation) for c in first.causal] == [(1, "causes")]


def test_support_counts_names_numbers_and_words():
    vocabulary = Vocabulary.of(["Maya moved to Rotterdam in May with 3 colleagues."])
    assert support("Maya moved to Rotterdam in May 2025.", vocabulary).supported(0.5)
    found = support("Maya moved to Rotterdam with 12 colleagues.", vocabulary)
    assert found.numbers == ("12",) and not found.supported(0.5)


@pytest.mark.slow
def test_the_example_conversation_given_back_is_refused_and_asked_again():
    """SmolLM2 135M answered with the prompt's example conversation as facts."""
    echo = {
        "facts": [
            {
                "text": "Priya: My neighbour moved to Lisbon last week, so I adopted her "
                "greyhound Biscuit.",
                "network": "world",
                "source_ids": ["t2"],
            }
        ]
    }
    good = {
        "facts": [
            {
                "text": "Juniper booked the staging run for Friday at 9.",
                "network": "experience",
                "source_ids": ["t2"],
            }
        ]
    }
    with FakeOllama() as fake:
        fake.script(Reply.json(echo), Reply.json(good))
        lm = LanguageModel(LlmSettings(host=fake.url, model="llama3.2", retries=1))
        with lm:
            extractor = LlmExtractor(lm)
            [kept] = extractor.extract(EXCHANGE, "Juniper", [])
        second = fake.chat_requests[1]["messages"][-1]["content"]
    assert kept.network is Network.EXPERIENCE
    assert "copied the prompt's example" in second


def test_an_ingest_report_with_checked_facts_crosses_the_wire():
    """A routed `engram ingest` (the owner runs it) hands back the report whole."""
    import json

    from core.retain.report import CheckedFact, IngestReport
    from core.server.client import decode, encode

    report = IngestReport(
        mode="llm",
        model_facts=2,
        checked=[CheckedFact("chat", ("t3",), "Priya: Ouch.", COPIED_TURN, True)],
    )
    assert decode(json.loads(json.dumps(encode(report)))) == report
