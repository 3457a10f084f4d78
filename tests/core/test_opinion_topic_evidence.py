"""Rules opinion dynamics: what counts as evidence on the same subject (made-up names).

One shared topic word between two chat reactions is mostly a coincidence: a
move needs two, all of a short opinion's topic, a shared entity or a near
restatement."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.retain.opinions import Relation, assess_rules
from core.types import Document, Network, Turn

HOLDER = frozenset({"oriel"})
PEOPLE = frozenset({"oriel", "brannoc"})


def relation(evidence: str, opinion: str, similarity: float, shared_entity: bool = False):
    return assess_rules(
        evidence, opinion, similarity, shared_entity, True, holders=HOLDER, participants=PEOPLE
    ).relation


def test_reactions_sharing_one_word_do_not_move_an_opinion() -> None:
    opinion = "Oriel said: Like in sports, that's when the win feels great! (6 May 2023)"
    evidence = "Oriel said: It's awesome to see how sports can unite people (7 June 2023)."
    assert relation(evidence, opinion, 0.77) is Relation.NEUTRAL
    # A judgment word is what is said of a thing, not which thing.
    assert relation(
        "Oriel said: Wow, sounds delicious!", "Oriel said: That looks delicious!", 0.89
    ) is (Relation.NEUTRAL)
    # A state ("tired") sharing one word with a judgment does not weaken it.
    opinion = "Oriel said: Relaxing with them is a great way to chill (8 March 2022)."
    evidence = "Oriel said: They look tired from the walk, so they're relaxing in the tank."
    assert relation(evidence, opinion, 0.68) is Relation.NEUTRAL
    # A short reaction is no evidence about a longer opinion by its one word.
    opinion = "Oriel said: Presenting can be tough, but awesome work! (31 August 2023)"
    assert relation("Oriel said: Nice work! (16 November 2023)", opinion, 0.79) is Relation.NEUTRAL
    # "That movie" is a thing pointed at in the chat: another movie is another thing.
    opinion = "Oriel said: Yep, that movie is awesome (21 January 2022)."
    evidence = "Oriel is writing another movie script! It's a love story (7 November 2022)."
    assert relation(evidence, opinion, 0.7) is Relation.NEUTRAL


def test_real_evidence_still_moves_an_opinion() -> None:
    opinion = "Oriel said: Learning to play this is awesome, such a beautiful instrument."
    evidence = "Oriel said: Learning an instrument is really cool (6 December 2023)."
    assert relation(evidence, opinion, 0.86) is Relation.REINFORCE
    # All of a short opinion's topic is enough.
    short = "Oriel loves turtles (4 November 2022)."
    assert relation("Oriel said: The turtles are great, they bring joy.", short, 0.77) is (
        Relation.REINFORCE
    )
    # So is one word with an entity in common.
    opinion = "Oriel thinks the Quillfield trail is great for running."
    evidence = "Oriel said: The Quillfield trail was awful after the rain."
    assert relation(evidence, opinion, 0.8, shared_entity=True) is not Relation.NEUTRAL


def test_a_repeated_reaction_without_a_subject_does_not_reinforce(bank) -> None:
    def said(title: str, day: datetime, text: str) -> Document:
        turn = Turn(f"{title}0", "Oriel", text, day, "s1", 0)
        return Document(id="", title=title, turns=(turn,))

    bank.set_profile(agent_name="Oriel")
    day = datetime(2023, 5, 4, 10, 0)
    bank.ingest(said("a", day, "Wow, that's a great pic!"), mode="rules")
    # A reaction about nothing named is no belief to hold: the agent's history.
    assert bank.count(Network.OPINION) == 0 and bank.count(Network.EXPERIENCE) == 1
    again = bank.ingest(
        said("b", day + timedelta(days=3), "Wow, that's a great pic!"), mode="rules"
    )
    assert again.opinion_events == 0 and bank.count(Network.OPINION) == 0
    # An opinion about something, stated again, is reinforced.
    bank.ingest(said("c", day, "I think Quillfield pottery is great."), mode="rules")
    [held] = [u for u in bank.units(Network.OPINION, limit=None) if "Quillfield" in u.text]
    bank.ingest(
        said("d", day + timedelta(days=3), "I think Quillfield pottery is great."), mode="rules"
    )
    assert bank.unit(held.id).confidence > held.confidence
