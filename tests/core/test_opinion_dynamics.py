"""Opinion dynamics in rules mode, through the real pipeline and embedder: what a
speaker says later about the same subject moves their opinion; small talk,
the other speaker's answer, and the speaker's own things against the
listener's do not.

Each conversation is one document of dated sessions, as a chat log is
ingested; the failures these guard against were read on real conversations
(every fact carries its date, so facts of one month shared "june"; a question
and its answer counted as the asker's word; "Mel, your painting is great"
moved by "I love painting")."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.retain.opinions import Relation, assess_rules, polarity, shares_topic
from core.types import Document, Network, Turn

START = datetime(2023, 6, 9, 13, 0)
PEOPLE = frozenset({"caroline", "melanie"})


def conversation(title: str, *sessions: list[tuple[str, str]]) -> Document:
    """Sessions a fortnight apart; each a list of (speaker, text) turns."""
    turns = []
    for s, session in enumerate(sessions):
        when = START + timedelta(days=14 * s)
        for i, (speaker, text) in enumerate(session):
            turns.append(
                Turn(f"D{s + 1}:{i + 1}", speaker, text, when + timedelta(minutes=i), f"s{s}", i)
            )
    return Document(id="", title=title, turns=tuple(turns))


def moves(bank, needle: str) -> list[str]:
    """The relations that moved the opinion whose text holds `needle`."""
    [opinion] = [u for u in bank.units(Network.OPINION, limit=None) if needle in u.text]
    return [e.relation for e in bank.opinion_events(opinion.id) if e.relation != "formed"]


def test_the_holder_judging_the_same_thing_again_moves_it(bank) -> None:
    bank.set_profile(agent_name="Melanie")  # only the bank's agent holds opinions
    bank.ingest(
        conversation(
            "pottery",
            [("Melanie", "I love pottery classes, pottery is so relaxing for me.")],
            [("Caroline", "How have you been?"), ("Melanie", "Busy with the kids.")],
            [("Melanie", "The pottery class this week was awesome, pottery keeps me so relaxed.")],
            [("Melanie", "I no longer enjoy pottery classes, pottery has become boring.")],
        ),
        mode="rules",
    )
    assert moves(bank, "I love pottery") == ["reinforce", "contradict"]
    # Judging it again is evidence, not a second belief; taking it back is the
    # revised belief, an opinion of its own.
    opinions = [u.text for u in bank.units(Network.OPINION, limit=None)]
    assert not any("was awesome" in t for t in opinions), opinions
    assert any("no longer enjoy" in t for t in opinions), opinions


def test_small_talk_answers_and_the_listeners_things_move_nothing(bank) -> None:
    bank.set_profile(agent_name="Caroline")
    bank.ingest(
        conversation(
            "chat",
            [
                ("Caroline", "Wow Mel, that painting's amazing!"),
                ("Melanie", "Thanks! It's great talking to you."),
                ("Caroline", "I'm so happy I decided to adopt, adoption is wonderful."),
            ],
            [
                ("Melanie", "Good to talk to you again, it was a great June!"),
                ("Caroline", "I painted this one after visiting the center. I love painting."),
                ("Caroline", "Do you know anyone who has adopted?"),
                (
                    "Melanie",
                    "Yeah, a buddy adopted last year. It was a long process with the adoption "
                    "agency, but now they're super happy.",
                ),
            ],
        ),
        mode="rules",
    )
    assert moves(bank, "adoption is wonderful") == []
    # Judging the chat itself is small talk: never an opinion that could move.
    opinions = [u.text for u in bank.units(Network.OPINION, limit=None)]
    assert not any("great talking" in text for text in opinions), opinions
    # "That painting" is a thing pointed at in the chat, no subject a belief is about.
    assert not any("painting's amazing" in text for text in opinions), opinions


def test_a_shared_date_or_name_is_not_a_shared_subject() -> None:
    opinion = "Melanie said: Sounds like your event was amazing! (9 June 2023)"
    chat = "Melanie just took the kids camping last week, a really nice time (19 June 2023)."
    assert not shares_topic(chat, opinion, frozenset({"melanie"}), participants=PEOPLE)
    again = "Melanie said: Your event last month was so inspiring (12 July 2023)."
    assert shares_topic(again, opinion, frozenset({"melanie"}), participants=PEOPLE)
    # Names in any script are words: "Tomás" is what both are about.
    assert shares_topic("Tomás no longer prefers async reviews.", "Tomás prefers async reviews.")


def test_the_listeners_things_are_not_the_speakers_own() -> None:
    holder = frozenset({"caroline"})
    # (Not "that painting": a thing pointed at in the chat is no shared subject.)
    opinion = "Caroline said: Wow Mel, your paintings are amazing! (15 July 2023)"
    own = "Caroline loves painting, it is so calming (14 August 2023)."
    theirs = "Caroline said: Mel, your new painting is amazing too (14 August 2023)."
    assert not shares_topic(own, opinion, holder, participants=PEOPLE)
    assert shares_topic(theirs, opinion, holder, participants=PEOPLE)


def test_after_a_but_the_judgment_is_what_follows() -> None:
    assert polarity("Sharing our stories isn't always easy, but it's so rewarding") == 1
    assert polarity("I used to hate running, but now I love it") == 1
    assert polarity("The food was great but the service was awful") == -1
    assert polarity("It isn't easy") == -1


def test_actually_takes_a_belief_back_only_when_a_belief_follows() -> None:
    holder = frozenset({"nate"})
    opinion = "What can Nate say, Nate loves turtles (4 November 2022)."
    chat = (
        "Joanna asked: How are the turtles? Nate answered: Great actually! The turtles bring joy."
    )
    assert assess_rules(chat, opinion, 0.77, False, True, holders=holder).relation is (
        Relation.REINFORCE
    )
    back = "Actually Nate says he prefers dogs to turtles now."
    assert assess_rules(back, opinion, 0.77, False, True, holders=holder).relation is (
        Relation.CONTRADICT
    )
    did = "Instead of getting stuck with the turtles, Nate worked hard on the tank."
    assert assess_rules(did, opinion, 0.77, False, True, holders=holder).relation is not (
        Relation.CONTRADICT
    )
