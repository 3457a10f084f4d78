"""Rules-mode mechanisms on small inputs, no model: statements, fillers, safe
rewriting, entity evidence (gazetteer, person cues, non-names), short-name
resolution, bounded observation profiles, fair-share packing and opinion
evidence from the opinion's own holder."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.recall.packing import pack
from core.retain.entities import name_similarity
from core.retain.extract import Exchange
from core.retain.gazetteer import is_place, is_region
from core.retain.observations import PROFILE_MAX_TOKENS, rules_profile
from core.retain.opinions import Relation, assess_rules
from core.retain.rules import RulesExtractor
from core.retain.statements import (
    is_filler,
    is_phatic,
    rewrite_is_safe,
    sentences,
    split_turn,
)
from core.types import Entity, Network, Turn, Unit

SESSION = datetime(2023, 5, 8, 13, 56)


def facts_of(*turns: tuple[str, str], agent: str = ""):
    exchange = Exchange(
        tuple(Turn(f"t{i}", s, t, SESSION, "s1", i) for i, (s, t) in enumerate(turns)), "s1"
    )
    return RulesExtractor().extract(exchange, agent, [])


def mentions(*turns: tuple[str, str]) -> dict[str, str]:
    return {m.name: m.type for f in facts_of(*turns) for m in f.entities}


# -- statements -----------------------------------------------------------------------


def test_sentences_keep_abbreviations_inside() -> None:
    assert sentences("I saw Dr. Lee today. It went well! Did it?") == [
        "I saw Dr. Lee today.",
        "It went well!",
        "Did it?",
    ]


def test_fillers_are_greetings_thanks_and_bare_reactions() -> None:
    names = frozenset({"mel", "caroline"})
    for text in ("Hey Mel!", "Thanks, Caroline!", "Wow, that's awesome!", "Congrats on that!"):
        assert is_filler(text, names), text
    for text in ("I ran a marathon.", "Thanks to the grant, we opened a clinic in Leeds."):
        assert not is_filler(text, names), text


def test_split_turn_drops_questions_joins_back_references_and_keeps_captions() -> None:
    split = split_turn(
        "Hi Jo! I went to a pride parade. It was powerful. What about you? "
        "[image: a photo of a rainbow flag]",
        frozenset({"jo"}),
    )
    assert [s.text for s in split.statements] == [
        "I went to a pride parade. It was powerful.",
        "[image: a photo of a rainbow flag]",
    ]
    assert split.statements[-1].caption
    assert split.question == "What about you?"
    # A bare "Yes!" opening an answer is kept for its question, with what follows.
    answer = split_turn("Yes! I loved the trams.")
    assert [s.text for s in answer.statements] == ["Yes! I loved the trams."]
    assert answer.statements[0].answer_opener


def test_third_person_only_where_the_rewrite_is_safe() -> None:
    assert rewrite_is_safe("I went home and my dog was happy.")
    for text in ("Pottery helps me express myself.", "I'm proud of you.", "We went camping."):
        assert not rewrite_is_safe(text), text
    texts = [f.text for f in facts_of(("Mel", "Pottery helps me express myself."))]
    # No "express Mel": a reflexive has no gender to give, so it is "themself".
    assert texts == ["Pottery helps Mel express themself (8 May 2023)."]


def test_a_narrative_keeps_its_time_for_what_happened_next() -> None:
    race, raised, proud = facts_of(
        (
            "Ann",
            "Last Saturday I ran a charity race. I raised $500 for the shelter. I'm proud of it.",
        )
    )
    assert race.occurred_start == datetime(2023, 5, 6)
    assert raised.occurred_start == datetime(2023, 5, 6)  # past tense: same time
    assert proud.occurred_start == datetime(2023, 5, 8)  # a present feeling: the session


def test_questions_are_never_opinions() -> None:
    facts = facts_of(
        ("Caroline", "Love that purple color! For walking or running?"),
        ("Melanie", "Running. I think it keeps me sane."),
        agent="Melanie",
    )
    assert all("?" not in f.text for f in facts if f.network is Network.OPINION)
    assert any(f.network is Network.OPINION for f in facts)


def test_greetings_wishes_and_thanks_to_the_listener_are_not_memories() -> None:
    facts = facts_of(
        ("Priya", "Hey Tomas, hope all's good! It's great talking to you again."),
        ("Tomas", "Thanks, you're the best! Your support means a lot to me."),
        ("Priya", "Take care! I think the new bakery on Elm Street is overrated."),
        ("Tomas", "It was nice chatting with you. Family dinners mean a lot to me."),
        agent="Priya",
    )
    texts = " | ".join(f.text for f in facts)
    for phatic in ("hope all", "great talking", "the best", "means a lot", "Take care", "chatting"):
        assert phatic not in texts, (phatic, texts)
    opinions = [f.text for f in facts if f.network is Network.OPINION]
    assert any("overrated" in t for t in opinions), opinions  # a real judgement stays
    assert "Family dinners" in texts  # content stays
    # A courtesy phrase followed by content leaves the content: the sentence stays.
    names = frozenset({"tomas"})
    for text in ("Have a great time at the Lisbon concert!", "I love talking about chess."):
        assert not is_phatic(text, names), text
    for text in ("Hey Tomas, hope all's good!", "It was great catching up.", "No worries!"):
        assert is_phatic(text, names), text


# -- entities -------------------------------------------------------------------------


def test_gazetteer_knows_regions_and_big_cities_but_not_ambiguous_names() -> None:
    assert is_region("Sweden") and is_region("ohio") and not is_region("Stockholm")
    assert is_place("Stockholm") and is_place("São Paulo")
    assert not is_place("Florence") and not is_place("Nice") and not is_place("Caroline")


def test_entities_typed_by_evidence() -> None:
    found = mentions(
        ("Tomás", "Sweden was lovely. My wife Ana loved Stockholm and Mel came along."),
        ("Melanie", "I moved to Zurich last year."),
    )
    assert found["Sweden"] == "place"  # a country, even at a sentence's start
    assert found["Stockholm"] == "place"
    assert found["Ana"] == "person"  # "my wife Ana"
    assert found["Mel"] == "person"  # a short form of a speaker's name
    assert found["Zurich"] == "place"


def test_creators_listed_names_and_answers_to_who_are_persons() -> None:
    found = mentions(
        ("Ines", 'I love jazz like Coltrane and Ellington, and Nora Quill\'s "Blue Hour" too.'),
        ("Ravi", "I listen to Okafor a lot. It was Dario Lenz, he wrote the whole album."),
        ("Ines", "Lovely! Who said that line, by the way?"),
        ("Ravi", "It's Tobias Venn!"),
    )
    for name in ("Coltrane", "Ellington", "Nora Quill", "Okafor", "Dario Lenz", "Tobias Venn"):
        assert found[name] == "person", (name, found)


def test_fillers_chat_abbreviations_keywords_and_code_are_never_entities() -> None:
    found = mentions(
        ("Dev", "FYI the migration ran CREATE INDEX CONCURRENTLY on the events table."),
        ("Dev", "Perfect! I finally got some R&R. BTW the `UserService` class is done."),
        ("Ann", "The report from NASA was INTERESTING, Dev."),
    )
    for name in ("FYI", "Perfect", "R&R", "BTW", "CREATE INDEX CONCURRENTLY", "CONCURRENTLY"):
        assert name not in found, name
    assert "UserService" not in found and "INTERESTING" not in found
    assert "NASA" in found  # a real acronym stays


def test_roles_and_abbreviations_of_common_nouns_are_not_entities() -> None:
    found = mentions(
        ("Ola", "Our CFO signed off, and the VP of Engineering wants the API docs as a PDF."),
        ("Ben", "Head of Design liked it. We moved two VMs to Quarry Labs on the Wi-Fi."),
        ("Ola", "President Halvorsen of Quarry Labs called the CEO about it."),
    )
    for name in ("CFO", "VP of Engineering", "API", "PDF", "Head of Design", "VMs", "CEO"):
        assert name not in found, (name, found)
    assert "Quarry Labs" in found
    assert any("Halvorsen" in name for name in found), found  # a title with a name stays


def test_short_first_names_merge_only_as_a_prefix() -> None:
    assert name_similarity("Ana", "Dana Whitfield") == 0.0
    assert name_similarity("Ana", "Dana") == 0.0
    assert name_similarity("Tom", "Tomás Rivera") >= 0.85
    assert name_similarity("Mel", "Melanie") >= 0.85


# -- observations and packing -----------------------------------------------------------


def test_rules_profile_is_bounded_dated_and_about_the_entity() -> None:
    day = datetime(2024, 3, 1)
    things = [
        "ran a marathon in Leeds",
        "won a chess tournament",
        "painted a lake sunrise",
        "cooked dinner for neighbours",
        "bought a used guitar",
        "joined a pottery class",
        "hiked up Snowdon",
        "adopted a grey kitten",
        "published a poem",
        "passed her driving test",
    ]
    facts = [
        Unit(
            str(i),
            (
                f"Priya {things[(i // 20) % 10]} (day {i})."
                if i % 2
                else f"Bob said: the weather on day {i} was grim and grey (1 March 2024)."
            ),
            Network.WORLD,
            occurred_start=day + timedelta(days=i),
        )
        for i in range(200)
    ]
    text = rules_profile(
        Entity("e", "Priya", "person"), facts, limit=12, count_tokens=lambda t: len(t) // 4
    )
    assert len(text) // 4 <= PROFILE_MAX_TOKENS
    assert text.startswith("Priya (person; 200 facts, 1 March 2024 to 16 September 2024).")
    # The entity as subject is preferred over facts that merely mention nearby things.
    assert text.count("Priya ") >= 4 and "Bob said" not in text
    # Spread over time: an early and a late fact.
    numbers = [int(w) for w in text.replace(")", " ").split() if w.isdigit() and int(w) < 200]
    assert min(numbers) < 40 and max(numbers) > 150


def test_pack_skips_an_item_over_its_fair_share() -> None:
    packed = pack([300, 50, 50], 1024, [150, None, None])
    assert packed.taken == [1, 2] and packed.skipped == [0]
    assert pack([300, 50], 1024).taken == [0, 1]


# -- opinion evidence ---------------------------------------------------------------------


def test_the_holder_judging_the_same_thing_again_moves_the_opinion() -> None:
    opinion = "Mel loves pottery, it is so relaxing."
    # Moderately similar, said by the holder: polarity decides.
    same = assess_rules("Mel said: the pottery class was awesome.", opinion, 0.65, False, True)
    assert same.relation is Relation.REINFORCE
    against = assess_rules("Mel said: pottery has been boring lately.", opinion, 0.65, False, True)
    assert against.relation is Relation.WEAKEN
    # The same words from someone else, or below the holder's threshold, say nothing.
    other = assess_rules("Jo said: the pottery class was awesome.", opinion, 0.65, False, False)
    assert other.relation is Relation.NEUTRAL
    far = assess_rules("Mel said: the pottery class was awesome.", opinion, 0.5, False, True)
    assert far.relation is Relation.NEUTRAL
    # Sentiment about another topic is small talk, not evidence.
    chat = assess_rules(
        "Mel said: good to talk to you again!",
        opinion,
        0.65,
        False,
        True,
        holders=frozenset({"mel"}),
    )
    assert chat.relation is Relation.NEUTRAL
    # No sentiment in the evidence: nothing to move.
    flat = assess_rules("Mel went to a pottery class.", opinion, 0.7, False, True)
    assert flat.relation is Relation.NEUTRAL


def test_a_turn_without_a_speaker_keeps_its_words() -> None:
    texts = [f.text for f in facts_of(("", "I went home. [image: a photo of a cat]"))]
    assert texts == ["I went home (8 May 2023).", "[image: a photo of a cat] (8 May 2023)"]
