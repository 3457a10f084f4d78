"""Rules mode: praise of the listener tends the conversation; it is no opinion of
the speaker's about the world (made-up names)."""

from __future__ import annotations

from datetime import datetime

from core.retain.extract import Exchange, ExtractedFact
from core.retain.rules import RulesExtractor, opinion_confidence
from core.retain.statements import is_phatic
from core.types import Network, Turn

SESSION = datetime(2024, 6, 2, 18, 0)


def extract(*turns: tuple[str, str], agent: str = "") -> list[ExtractedFact]:
    exchange = Exchange(
        tuple(
            Turn(f"t{i}", speaker, text, SESSION, "s1", i)
            for i, (speaker, text) in enumerate(turns)
        ),
        "s1",
    )
    return RulesExtractor().extract(exchange, agent, [])


def test_praise_of_the_listeners_person_is_phatic() -> None:
    names = frozenset({"tamsin"})
    for sentence in (
        "Your resilience and strength in the face of all this is inspiring!",
        "You're so brave, Tamsin.",
        "You are so brave for sharing that.",
        "You should be proud of yourself.",
    ):
        assert is_phatic(sentence, names), sentence
    # What the listener did stays: it has content after the praise.
    assert not is_phatic("You're so brave to hike the Quellmoor ridge alone.", names)


def test_a_compliment_on_the_listeners_things_is_a_fact_not_an_opinion() -> None:
    assert opinion_confidence("Your drawings look amazing!") is None
    assert opinion_confidence("Wow, your garden looks so lovely.") is None
    assert opinion_confidence("It's great that you're helping out at the shelter.") is None
    assert opinion_confidence("So cool to see how you've grown as a painter!") is None
    assert opinion_confidence("Supporting your dreams is awesome!") is None
    assert opinion_confidence("Love your creations!") is None
    assert opinion_confidence("You both looked so great on your wedding day!") is None
    assert opinion_confidence("I love painting landscapes.") is not None
    # The speaker's own judgments still are opinions, and so is generic "you".
    assert opinion_confidence("The concert was amazing.") is not None
    assert opinion_confidence("I think your painting is beautiful.") is not None
    assert opinion_confidence("When you're tired, running is hard.") is not None
    assert opinion_confidence("Your trip sounds fun and the museum was awesome.") is not None
    assert opinion_confidence("It's great to find something you enjoy doing.") is not None


def test_rules_extraction_stores_no_compliment_as_an_opinion() -> None:
    facts = extract(
        ("Tamsin", "I finished the mural at the Quellmoor library last week."),
        ("Odran", "Your mural looks amazing! Your dedication is inspiring. The library was great."),
        agent="Odran",
    )
    opinions = [f.text for f in facts if f.network is Network.OPINION]
    assert not any("mural" in t or "dedication" in t for t in opinions), opinions
    assert any("library was great" in t for t in opinions), opinions
    # The compliment still records the mural, as a world fact.
    assert any("mural looks amazing" in f.text for f in facts if f.network is Network.WORLD)
