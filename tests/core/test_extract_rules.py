"""Rules-mode extraction: chunking, narrative facts, networks, entities, time and
causal cues on hand-written exchanges, a transcript file on disk, and the real
LoCoMo dev split."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from core.retain.extract import (
    CAUSAL_RELATIONS,
    ENTITY_TYPES,
    Exchange,
    ExtractedFact,
    chunk_exchanges,
)
from core.retain.importers import load_document, load_documents
from core.retain.rules import (
    RulesExtractor,
    describe_interval,
    opinion_confidence,
    rewrite_pronouns,
)
from core.retain.statements import split_turn
from core.types import Document, ExtractionMode, Network, Turn
from tests.shared_data import LOCOMO_DEV

SESSION = datetime(2023, 5, 8, 13, 56)


def exchange(*turns: tuple[str, str], when: datetime | None = SESSION) -> Exchange:
    return Exchange(
        tuple(
            Turn(f"t{i}", speaker, text, when, "session_1", i)
            for i, (speaker, text) in enumerate(turns)
        ),
        "session_1",
    )


def extract(*turns: tuple[str, str], agent: str = "", known=()) -> list[ExtractedFact]:
    return RulesExtractor().extract(exchange(*turns), agent, list(known))


def names(fact: ExtractedFact) -> list[str]:
    return [m.name for m in fact.entities]


def types(fact: ExtractedFact) -> dict[str, str]:
    return {m.name: m.type for m in fact.entities}


# ---- chunking ------------------------------------------------------------------------


def doc(*turns: Turn) -> Document:
    return Document(id="d", title="t", turns=turns)


def turn(i: int, speaker: str, text: str, session: str = "s1") -> Turn:
    return Turn(f"t{i}", speaker, text, SESSION, session, i)


def test_chunks_split_at_sessions_and_max_turns_and_keep_question_with_answer() -> None:
    turns = [turn(i, "A" if i % 2 == 0 else "B", f"statement {i}.") for i in range(5)]
    turns.append(turn(5, "B", "Where did you go?"))  # a question as the 6th turn ...
    turns.append(turn(6, "A", "To Rome."))  # ... and its answer as the 7th
    turns.append(turn(7, "B", "Nice."))
    turns.append(turn(8, "A", "New session starts.", session="s2"))
    turns.append(turn(9, "B", "   "))  # empty: dropped

    chunks = chunk_exchanges(doc(*turns), max_turns=6)

    assert [c.turn_ids for c in chunks] == [
        ("t0", "t1", "t2", "t3", "t4"),
        ("t5", "t6", "t7"),
        ("t8",),
    ]
    assert [c.session for c in chunks] == ["s1", "s1", "s2"]
    assert all(len(c.turns) <= 6 for c in chunks)
    assert chunks[0].when == SESSION


def test_chunks_without_sessions_split_where_the_day_changes() -> None:
    day1 = Turn("a", "A", "Hi.", datetime(2024, 1, 1, 9), "", 0)
    day1b = Turn("b", "B", "Hello.", datetime(2024, 1, 1, 10), "", 1)
    day2 = Turn("c", "A", "Morning.", datetime(2024, 1, 2, 9), "", 2)
    chunks = chunk_exchanges(doc(day1, day1b, day2))
    assert [c.turn_ids for c in chunks] == [("a", "b"), ("c",)]


def test_chunk_max_turns_must_be_positive() -> None:
    with pytest.raises(ValueError):
        chunk_exchanges(doc(turn(0, "A", "x")), max_turns=0)


# ---- narrative text and pronouns -------------------------------------------------------


def test_first_person_becomes_the_speaker_with_the_verb_agreeing() -> None:
    assert rewrite_pronouns("I love my dog.", "Ann") == "Ann loves Ann's dog."
    assert rewrite_pronouns("I'm tired and I've eaten.", "Ann") == "Ann is tired and Ann has eaten."
    assert rewrite_pronouns("I went home; I really miss it.", "Ann") == (
        "Ann went home; Ann really misses it."
    )
    # The verb after an inverted auxiliary stays: "Should I go" -> "Should Ann go".
    assert rewrite_pronouns("Should I go?", "Ann") == "Should Ann go?"
    # Compounds and other words are left alone.
    assert rewrite_pronouns("Some me-time in Miami.", "Ann") == "Some me-time in Miami."
    # "your"-forms name the addressee when there is one; bare "you" stays.
    assert rewrite_pronouns("Your plan is good, thank you.", "Ann", "Bob") == (
        "Bob's plan is good, thank you."
    )
    assert rewrite_pronouns("Your plan is good.", "Ann") == "Your plan is good."


def test_fact_is_narrative_attributed_dated_and_keeps_the_words() -> None:
    [fact] = extract(
        ("Caroline", "I went to the LGBTQ support group yesterday and it was powerful.")
    )
    assert fact.text == (
        "Caroline went to the LGBTQ support group yesterday and it was powerful (7 May 2023)."
    )
    # A judgment that does not name its speaker is what the speaker thinks; a
    # report is what they said; a request is what they told the listener.
    [fact] = extract(("Caroline", "The transgender stories were so inspiring!"))
    assert fact.text == "Caroline thinks the transgender stories were so inspiring (8 May 2023)."
    assert fact.mode is ExtractionMode.RULES and fact.model == ""
    [fact] = extract(("Bob", "We moved back to Ohio."), ("Ann", "Cool."))
    assert fact.text == "Bob said that they moved back to Ohio (8 May 2023)."
    [fact] = extract(("Ann", "Hi Bob!"), ("Bob", "Take a look at this map."))
    assert fact.text == "Bob told Ann to take a look at this map (8 May 2023)."
    # "you" in a two-person chat is the listener.
    [fact] = extract(("Ann", "Hi Bob!"), ("Bob", "You know, your garden looks amazing."))
    assert fact.text == "Bob thinks Ann's garden looks amazing (8 May 2023)."
    # No transcript frames, and a bare word is no memory.
    assert extract(("Ann", "Hi Bob!"), ("Bob", "Guilty!")) == []


def test_reported_speech_reads_as_a_sentence() -> None:
    """What another speaker said is a clause of the report, not a turn pasted in
    after "said that": its opening word in lower case unless it is a name, an
    announcing heading dropped, the person called by name the listener."""
    [fact] = extract(("Bob", "He's a student at TU Berlin."), ("Ann", "Cool."))
    assert fact.text == "Bob said that he's a student at TU Berlin (8 May 2023)."
    [fact] = extract(("Bob", "Sales events are done."), ("Ann", "Cool."))
    assert fact.text == "Bob said that sales events are done (8 May 2023)."
    [fact] = extract(
        ("Bob", "Big news: Northwind signed the contract."), ("Ann", "Cool."), known=["Northwind"]
    )
    assert fact.text == "Bob said that Northwind signed the contract (8 May 2023)."
    [fact] = extract(("Bob", "One more thing: the crash rate went up."), ("Ann", "Cool."))
    assert fact.text == "Bob said that the crash rate went up (8 May 2023)."
    [fact] = extract(("Bob", "On another note, btw, I just adopted a pup."), ("Ann", "Cool."))
    assert fact.text == "Bob just adopted a pup (8 May 2023)."
    # "So far" is the clause's own adverb, not a discourse marker to strip.
    [fact] = extract(("Bob", "So far I've mostly been fixing bugs."), ("Ann", "Cool."))
    assert fact.text.startswith("So far Bob has mostly been fixing bugs")
    # A name opening the statement is whom it is said to, whoever spoke last.
    [fact] = extract(
        ("Cy", "Hi all."), ("Bob", "Ann, please rerun the index change."), ("Ann", "Sure.")
    )
    assert fact.text == "Bob told Ann to rerun the index change (8 May 2023)."
    [_, fact] = extract(
        ("Ann", "I sent the mockups."), ("Cy", "Hi."), ("Bob", "Ann, your comments were excellent.")
    )
    assert fact.text == "Bob said that Ann's comments were excellent (8 May 2023)."
    # Agreement that adds nothing is no memory; "No need" answers a yes/no question.
    assert extract(("Ann", "Ready?"), ("Bob", "Fair enough.")) == []
    assert extract(("Ann", "Hi Bob!"), ("Bob", "That's fine.")) == []
    assert extract(("Ann", "Hi Bob!"), ("Bob", "Agreed for now.")) == []
    [fact] = extract(("Ann", "Do you want a call about it?"), ("Bob", "No need."))
    assert fact.text.startswith("Bob does not want a call about it")


def test_image_caption_is_a_fact_of_its_own_about_what_the_speaker_shared() -> None:
    painted, shared = extract(
        ("Mel", "I painted this last week! [image: a photo of a sunset over a lake]")
    )
    assert painted.text.startswith("Mel painted this last week!")
    assert shared.text.startswith("Mel shared a photo of a sunset over a lake")
    assert shared.network is Network.WORLD and shared.source_ids == ("t0",)


def test_a_short_answer_is_paired_with_its_question_and_attributed_to_who_answered() -> None:
    facts = extract(
        ("Melanie", "Wow! What kind of jobs are you thinking of?"),
        ("Caroline", "I'm keen on counseling or working in mental health."),
        ("Melanie", "That sounds great."),
    )
    # The reaction "That sounds great." is a filler: no fact of its own.
    [qa] = facts
    assert qa.source_ids == ("t0", "t1")
    # The question reported, then the answer: one narrative sentence.
    assert qa.text == (
        "Melanie asked Caroline what kind of jobs Caroline is thinking of; Caroline is keen"
        " on counseling or working in mental health (8 May 2023)."
    )
    assert {"Melanie", "Caroline"} <= set(names(qa))
    # A yes or a no to a yes/no question asserts the question's statement.
    [qa] = extract(("Ann", "Have you been to Lisbon?"), ("Bob", "Yes! I loved the trams."))
    assert qa.text == "Bob has been to Lisbon: Bob loved the trams (8 May 2023)."
    assert qa.network is Network.WORLD and qa.confidence is None
    [qa] = extract(("Ann", "Do you have pets?"), ("Bob", "Nope."))
    assert qa.text == "Bob does not have pets (8 May 2023)."
    [qa] = extract(("Ann", "Did you go to the concert?"), ("Bob", "Yeah, with my sister."))
    assert qa.text == "Bob went to the concert: with Bob's sister (8 May 2023)."


def test_a_question_of_any_common_form_is_reported_not_quoted() -> None:
    """Issue 29: 'Maya asked Tomás "How is Atlas ingestion going?"; …' is a
    transcript frame. The question is reported in indirect speech whatever its
    subject, and one that only names its topic is asked about it."""

    def asked(question: str, answer: str) -> str:
        [qa] = extract(("Ann", question), ("Bob", answer))
        return qa.text.rsplit(" (", 1)[0]  # without its date

    assert asked("How is the ingestion going?", "The schema is done.") == (
        "Ann asked Bob how the ingestion is going; Bob said that the schema is done"
    )
    assert asked("How did my talk go?", "It went great.") == (
        "Ann asked Bob how Ann's talk went; Bob said that it went great"
    )
    assert asked("Bob, how's Atlas?", "Mostly quiet.") == (
        "Ann asked Bob how Atlas is; Bob said that mostly quiet"
    )
    assert asked("What about hosting?", "Two virtual machines will do.") == (
        "Ann asked Bob about hosting; Bob said that two virtual machines will do"
    )
    assert asked("Atlas: inventory events?", "They landed yesterday.") == (
        "Ann asked Bob about Atlas inventory events; Bob said that they landed yesterday"
    )
    # A person as the subject of a yes/no question: a yes asserts it.
    assert asked("Should I be at the review too?", "Yes.") == "Ann should be at the review too"
    assert asked("Will Cy join us?", "No.") == "Cy will not join us"
    # Tags and bare reactions are no topic: "Really?" is not asked "about really".
    assert "about" not in asked("Really?", "Yes, I moved to Porto last week.")


def test_a_long_answer_stands_alone_and_a_pure_question_is_no_fact() -> None:
    long_answer = "I am keen on counseling " + "and many other things " * 10 + "too."
    facts = extract(("Melanie", "What now?"), ("Caroline", long_answer))
    assert [f.source_ids for f in facts] == [("t1",)]
    assert "?" not in facts[0].text


def test_a_turn_is_split_into_statements_without_greetings_or_fillers() -> None:
    facts = extract(
        (
            "Mel",
            "Hey Caroline! Thanks for sharing. Last Friday I ran a charity race. "
            "It was tough. I raised $500 for the shelter. Wow, awesome! How are you?",
        )
    )
    assert [f.text for f in facts] == [
        "Last Friday Mel ran a charity race. It was tough (5 May 2023).",
        "Mel raised $500 for the shelter (5 May 2023).",
    ]


# ---- networks --------------------------------------------------------------------------


def test_agent_first_person_is_experience_others_are_world() -> None:
    agent_fact, user_fact, agent_plain = extract(
        ("Ava", "I recommended Yosemite to Alice last week."),
        ("Alice", "My brother works at Google in Zurich."),
        ("Ava", "The park opens at nine."),
        agent="Ava",
    )
    assert agent_fact.network is Network.EXPERIENCE
    assert agent_fact.confidence is None
    assert user_fact.network is Network.WORLD
    # The agent's statement without a first person is not its own history.
    assert agent_plain.network is Network.WORLD
    # Without an agent nobody's statements are experience.
    [fact] = extract(("Ava", "I recommended Yosemite to Alice."))
    assert fact.network is Network.WORLD


def test_belief_and_preference_cues_are_opinions_ordered_by_hedging() -> None:
    texts = [
        "I'm absolutely certain the bridge will hold.",
        "I'm sure the bridge will hold.",
        "I love that bridge.",
        "I think the bridge will hold.",
        "I think the bridge might hold.",
        "I'm not sure the bridge will hold.",
    ]
    facts = extract(*[("Bob", t) for t in texts], agent="Bob")
    assert [f.network for f in facts] == [Network.OPINION] * len(texts)
    confidences = [f.confidence for f in facts]
    assert all(c is not None and 0.0 <= c <= 1.0 for c in confidences)
    assert confidences == sorted(confidences, reverse=True)
    assert len(set(confidences)) == len(confidences)
    # The agent's beliefs are opinions, in its own first person, not experience.
    [fact] = extract(("Ava", "I believe Alice will enjoy Yosemite."), agent="Ava")
    assert fact.network is Network.OPINION and fact.confidence == pytest.approx(0.6)
    assert fact.text.startswith("I believe Alice will enjoy Yosemite")
    # Anyone else's belief or preference is a world fact about them.
    facts = extract(*[("Bob", t) for t in texts], agent="Ava")
    assert {f.network for f in facts} == {Network.WORLD}
    assert all(f.confidence is None for f in facts)
    [fact] = extract(("Bob", "I love that bridge."))
    assert fact.network is Network.WORLD and fact.text.startswith("Bob loves that bridge")
    # A life event told with a judgment is a fact of the event, not a belief.
    [fact] = extract(("Ava", "My dad passed away last month and it was so hard."), agent="Ava")
    assert fact.network is Network.EXPERIENCE


def test_nouns_and_questions_are_not_opinions() -> None:
    assert opinion_confidence("They'll get all the love they need.") is None
    assert opinion_confidence("We spent time with loved ones.") is None
    assert opinion_confidence("We went hiking.") is None
    # A question asking for a belief states none; only its answer can.
    [fact] = extract(("Bob", "Do you think it will rain?"), ("Ann", "It rained all day."))
    assert fact.network is Network.WORLD


# ---- entities --------------------------------------------------------------------------


def test_entities_are_speakers_and_capitalised_spans_but_not_pronouns_or_starters() -> None:
    closed, moved = extract(
        ("Bob", "The Acme Analytics office in Denver is closed. I moved to Paris on Monday.")
    )
    found = types(closed) | types(moved)
    assert found["Bob"] == "person"
    assert found["Acme Analytics"] == "org"
    assert found["Denver"] == "place"
    assert found["Paris"] == "place"
    # "I", the sentence-initial "The" and the weekday are no entities.
    assert "I" not in found and "The" not in found and "Monday" not in found
    assert not any(name.startswith("The ") for name in found)


def test_sentence_initial_word_needs_evidence_to_be_a_name() -> None:
    facts = extract(("Bob", "Painting relaxes me. Yesterday was long."))
    assert {n for f in facts for n in names(f)} == {"Bob"}
    # The same word seen capitalised mid-sentence in the exchange is a name.
    facts = extract(("Bob", "Luna is my cat."), ("Ann", "I met Luna last week."))
    assert "Luna" in names(facts[0]) and "Luna" in names(facts[1])
    # A multi-word name keeps its words; an opening interjection does not join it.
    [fact] = extract(("Ann", "Wow Bob, Harry Potter again!"))
    assert "Harry Potter" in names(fact)
    assert "Wow Bob" not in names(fact)


def test_addressed_names_are_persons_and_speakers_stay_persons_later() -> None:
    extractor = RulesExtractor()
    extractor.extract(exchange(("Caroline", "Hi."), ("Melanie", "Hello.")), "", [])
    [fact] = extractor.extract(exchange(("Melanie", "Caroline agrees, Jo.")), "", [])
    found = types(fact)
    assert found["Jo"] == "person"  # addressed by name
    assert found["Caroline"] == "person"  # spoke in an earlier exchange


def test_known_entities_match_case_insensitively_on_whole_words_only() -> None:
    [fact] = extract(
        ("Bob", "we visited the eiffel tower and Ann's bakery."),
        known=["Eiffel Tower", "Ann", "Tower Bridge", "Bak"],
    )
    assert "Eiffel Tower" in names(fact)
    assert "Ann" in names(fact)
    assert "Tower Bridge" not in names(fact)
    assert "Bak" not in names(fact)  # inside "bakery": not a whole word


# ---- time ------------------------------------------------------------------------------


def test_time_expressions_resolve_against_the_session_date() -> None:
    yesterday, last_year, plain, undated = extract(
        ("Ann", "I went to the support group yesterday."),
        ("Bob", "We painted that lake sunrise last year."),
        ("Ann", "The group meets in the library."),
        ("Bob", "Sounds fun, I'll join next time."),
    )
    assert (yesterday.occurred_start, yesterday.occurred_end) == (
        datetime(2023, 5, 7),
        datetime(2023, 5, 8),
    )
    assert "(7 May 2023)" in yesterday.text
    # A year-only expression is the whole year, not its first day.
    assert (last_year.occurred_start, last_year.occurred_end) == (
        datetime(2022, 1, 1),
        datetime(2023, 1, 1),
    )
    assert last_year.text.endswith("(2022).")
    # No expression: the session day.
    assert (plain.occurred_start, plain.occurred_end) == (
        datetime(2023, 5, 8),
        datetime(2023, 5, 9),
    )
    for fact in (yesterday, last_year, plain, undated):
        assert fact.mentioned_at == SESSION


def test_undated_exchange_has_no_times() -> None:
    [fact] = RulesExtractor().extract(
        exchange(("Ann", "I went home yesterday."), when=None), "", []
    )
    assert fact.occurred_start is None and fact.occurred_end is None
    assert fact.mentioned_at is None
    assert fact.text == "Ann went home yesterday."


def test_describe_interval() -> None:
    assert describe_interval(datetime(2023, 5, 7), datetime(2023, 5, 8)) == "7 May 2023"
    assert describe_interval(datetime(2023, 5, 1), datetime(2023, 6, 1)) == "May 2023"
    assert describe_interval(datetime(2022, 1, 1), datetime(2023, 1, 1)) == "2022"
    assert describe_interval(datetime(2023, 5, 1), datetime(2023, 5, 8)) == "1–7 May 2023"
    assert describe_interval(datetime(2023, 5, 8, 6), datetime(2023, 5, 8, 12)) == "8 May 2023"


# ---- causal cues -----------------------------------------------------------------------


def test_cause_and_effect_clauses_split_into_two_linked_facts() -> None:
    effect, cause = extract(
        ("Ann", "I went running this morning because I needed to clear my head."),
    )
    # The clause before "because" is the effect, the one after it the cause.
    assert effect.source_ids == cause.source_ids == ("t0",)
    assert effect.text.startswith("Ann went running this morning")
    assert "because" not in effect.text
    assert cause.text.startswith("Ann needed to clear Ann's head")
    assert [(c.target_index, c.relation) for c in effect.causal] == [(1, "caused_by")]
    assert [(c.target_index, c.relation) for c in cause.causal] == [(0, "causes")]


def test_cue_at_sentence_start_links_the_previous_sentence_as_cause() -> None:
    greeting, lost, moved = extract(
        ("Ann", "The weather in Leeds was grim."),
        ("Bob", "I lost my job last spring. As a result, we moved back to Ohio."),
    )
    assert greeting.causal == ()
    assert lost.text.startswith("Bob lost Bob's job last spring")
    assert moved.text.startswith("Bob said that they moved back to Ohio")
    # Indexes point into the exchange's whole fact list.
    assert [(c.target_index, c.relation) for c in lost.causal] == [(2, "causes")]
    assert [(c.target_index, c.relation) for c in moved.causal] == [(1, "caused_by")]
    assert all(c.relation in CAUSAL_RELATIONS and 0 <= c.strength <= 1 for c in lost.causal)


def test_cue_before_a_noun_phrase_stays_inside_one_fact() -> None:
    [fact] = extract(("Ann", "The match was cancelled due to the heavy rain in Leeds."))
    assert fact.causal == ()
    assert "due to the heavy rain" in fact.text
    [fact] = extract(("Ann", "I stayed home because of my sore knee, sadly."))
    assert fact.causal == ()
    assert "because of Ann's sore knee" in fact.text


# ---- a transcript file on disk ---------------------------------------------------------


def test_transcript_file_end_to_end(tmp_path: Path) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(
        "Session 1 — 8 May 2023\n"
        "Ava: I recommended Yosemite to Alice yesterday.\n"
        "Alice: Where should I stay?\n"
        "Ava: Curry Village is cheap.\n"
        "Session 2 — 20 May 2023\n"
        "Alice: I think Yosemite was the best trip ever.\n",
        encoding="utf-8",
    )
    document = load_document(path)
    extractor = RulesExtractor()
    facts = [
        (ex, fact)
        for ex in chunk_exchanges(document)
        for fact in extractor.extract(ex, "Ava", ["Curry Village"])
    ]
    assert len(facts) == 3
    (_, recommended), (_, qa), (second, opinion) = facts
    assert recommended.network is Network.EXPERIENCE
    assert recommended.occurred_start == datetime(2023, 5, 7)
    # The agent's experience is in its first person.
    assert "I recommended Yosemite to Alice yesterday" in recommended.text
    assert len(qa.source_ids) == 2 and "Curry Village" in names(qa)
    # Alice is not the agent: her belief is a world fact about her.
    assert opinion.network is Network.WORLD
    assert opinion.text.startswith("Alice thinks Yosemite was the best trip ever")
    assert opinion.mentioned_at == datetime(2023, 5, 20)
    assert second.session != facts[0][0].session
    ids = {t.id for t in document.turns}
    assert all(set(f.source_ids) <= ids for _, f in facts)


# ---- the real LoCoMo dev split ---------------------------------------------------------


@pytest.fixture(scope="module")
def locomo() -> list[tuple[Document, list[tuple[Exchange, list[ExtractedFact]]]]]:
    out = []
    for document in load_documents(LOCOMO_DEV):
        extractor = RulesExtractor()
        agent = document.turns[0].speaker  # one speaker as the agent, to exercise experience
        out.append(
            (
                document,
                [(ex, extractor.extract(ex, agent, [])) for ex in chunk_exchanges(document)],
            )
        )
    return out


@pytest.mark.slow
def test_locomo_facts_cite_real_turns_of_their_exchange_and_session(locomo) -> None:
    total = 0
    for document, chunks in locomo:
        turn_ids = {t.id for t in document.turns}
        extracted_turns: set[str] = set()
        for ex, facts in chunks:
            session_time = ex.turns[0].timestamp
            assert all(t.session == ex.session for t in ex.turns)
            for fact in facts:
                total += 1
                assert fact.source_ids, fact
                assert set(fact.source_ids) <= set(ex.turn_ids) <= turn_ids
                assert fact.mentioned_at == session_time
                assert fact.network in (Network.WORLD, Network.EXPERIENCE, Network.OPINION)
                assert (fact.confidence is not None) == (fact.network is Network.OPINION)
                assert fact.text.strip()
                assert fact.entities, fact
                assert all(m.type in ENTITY_TYPES and m.name.strip() for m in fact.entities)
                assert fact.occurred_start is not None and fact.occurred_end is not None
                assert fact.occurred_start < fact.occurred_end
                for relation in fact.causal:
                    assert 0 <= relation.target_index < len(facts)
                    assert relation.relation in CAUSAL_RELATIONS
                extracted_turns.update(fact.source_ids)
        # Every turn with a statement worth keeping is the source of some fact:
        # only greetings, fillers and questions are dropped — and they are few.
        speakers = frozenset(t.speaker.casefold() for t in document.turns)
        worth = {t.id for t in document.turns if split_turn(t.text, speakers).statements}
        # (The extractor also sets aside nicknames it learns: "Wow, Mel, that's awesome!")
        assert len(worth - extracted_turns) <= 0.02 * len(worth)
        assert extracted_turns <= {t.id for t in document.turns}
        assert len(worth) > 0.8 * len(document.turns)
    assert total > 1000


@pytest.mark.slow
def test_locomo_speakers_are_person_entities_of_their_facts(locomo) -> None:
    for document, chunks in locomo:
        speakers = {t.speaker for t in document.turns}
        seen: dict[str, set[str]] = {}
        by_id = {t.id: t for t in document.turns}
        for _, facts in chunks:
            for fact in facts:
                found = types(fact)
                for source in fact.source_ids:
                    assert found.get(by_id[source].speaker) == "person", fact
                for name, kind in found.items():
                    seen.setdefault(name, set()).add(kind)
                    assert name not in {"I", "The", "Hey", "Thanks"}
        # Each speaker is one entity name, always typed person.
        for speaker in speakers:
            assert seen[speaker] == {"person"}


@pytest.mark.slow
def test_locomo_time_and_networks_are_plausible(locomo) -> None:
    networks: dict[Network, int] = {}
    moved = 0
    for _, chunks in locomo:
        for _, facts in chunks:
            for fact in facts:
                networks[fact.network] = networks.get(fact.network, 0) + 1
                day = fact.mentioned_at.replace(hour=0, minute=0)
                if fact.occurred_start != day:
                    moved += 1
                    # Resolved times are near the session, never years into the future.
                    assert fact.occurred_start < fact.mentioned_at + timedelta(days=400)
    assert set(networks) == {Network.WORLD, Network.EXPERIENCE, Network.OPINION}
    assert moved > 50  # "yesterday", "last week" … were resolved, not ignored
