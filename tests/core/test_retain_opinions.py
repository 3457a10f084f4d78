"""Opinions under new evidence (rules mode) and observations regenerated from the queue."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from core.retain.observations import (
    compose_profile,
    observation_sources,
    rules_profile,
    third_person,
)
from core.retain.opinions import Relation, apply_evidence, assess_rules, polarity
from core.types import Document, Entity, Network, Turn, Unit

DAY = datetime(2024, 3, 1, 10, 0)


@pytest.mark.parametrize(
    ("relation", "before", "after"),
    [
        ("reinforce", 0.5, 0.6),
        ("reinforce", 0.95, 1.0),
        ("weaken", 0.5, 0.4),
        ("weaken", 0.05, 0.0),
        ("contradict", 0.5, 0.3),
        ("contradict", 0.15, 0.0),
        ("neutral", 0.42, 0.42),
        (Relation.REINFORCE, 1.0, 1.0),
    ],
)
def test_apply_evidence(relation, before: float, after: float) -> None:
    assert apply_evidence(before, relation, 0.1) == pytest.approx(after)


def test_apply_evidence_rejects_unknown_relations() -> None:
    with pytest.raises(ValueError):
        apply_evidence(0.5, "formed", 0.1)


def test_polarity_and_rules_assessment() -> None:
    assert polarity("Alice loves hiking") == 1
    assert polarity("Alice hates hiking") == -1
    assert polarity("Alice does not like hiking anymore") == -1
    assert polarity("Alice no longer loves hiking") == -1
    assert polarity("Alice went hiking") == 0
    love, hate = "Alice loves hiking in Yosemite.", "Alice hates hiking in Yosemite now."
    assert assess_rules(hate, love, 0.89).relation is Relation.CONTRADICT
    assert assess_rules(hate, love, 0.89, shared_entity=False).relation is Relation.CONTRADICT
    assert assess_rules("Alice really enjoys hiking.", love, 0.8).relation is Relation.REINFORCE
    assert assess_rules(hate, love, 0.8, shared_entity=False).relation is Relation.NEUTRAL
    assert assess_rules(hate, love, 0.5).relation is Relation.NEUTRAL
    maybe = assess_rules("Maybe Alice goes hiking in Yosemite.", love, 0.8)
    assert maybe.relation is Relation.WEAKEN and "hedged" in maybe.reason


def one(title: str, day: datetime, speaker: str, text: str) -> Document:
    return Document(id="", title=title, turns=(Turn(f"{title}0", speaker, text, day, "s1", 0),))


@pytest.mark.slow
def test_opinion_trajectory_with_events(bank) -> None:
    bank.set_profile(agent_name="Alice")
    formed = bank.ingest(one("d1", DAY, "Alice", "I love hiking in Yosemite."), mode="rules")
    assert formed.facts == {"opinion": 1} and formed.opinions_formed == 1
    [opinion] = bank.units(Network.OPINION, limit=None)
    c0 = opinion.confidence
    assert 0 < c0 < 1

    # Stated again (near-identical, weeks later): the same opinion, reinforced.
    again = bank.ingest(
        one("d2", DAY + timedelta(days=20), "Alice", "I really love hiking in Yosemite."),
        mode="rules",
    )
    assert again.duplicates_merged == 1 and bank.count(Network.OPINION) == 1
    c1 = bank.unit(opinion.id).confidence
    # α weighed by independence: the holder saying it again counts half.
    assert c1 == pytest.approx(min(c0 + 0.1 * 0.5, 1.0))

    # Contradicted: a new opinion forms, and the old one drops by 2α.
    contra = bank.ingest(
        one("d3", DAY + timedelta(days=40), "Alice", "I hate hiking in Yosemite now."),
        mode="rules",
    )
    assert contra.opinions_formed == 1 and contra.opinions_updated == 1
    c2 = bank.unit(opinion.id).confidence
    step = bank.opinion_events(opinion.id)[-1]
    assert 0 < step.strength <= 1 and step.independence == 0.5
    assert c2 == pytest.approx(max(c1 - 0.2 * step.strength * 0.5, 0.0))
    assert bank.unit(opinion.id).text == opinion.text  # rules never rewrite

    events = bank.opinion_events(opinion.id)
    assert [e.relation for e in events] == ["formed", "reinforce", "contradict"]
    assert [e.confidence_after for e in events] == pytest.approx([c0, c1, c2])
    assert [e.confidence_before for e in events[1:]] == pytest.approx([c0, c1])
    assert events[0].confidence_before is None and events[0].new_text == opinion.text
    assert events[0].reason == "formed from what Alice said"  # a person, not a turn id
    assert [e.happened_at for e in events] == [
        DAY,
        DAY + timedelta(days=20),
        DAY + timedelta(days=40),
    ]
    hate = bank.unit(events[2].evidence_id)
    # The revised belief is an opinion of its own, in the holder's first person.
    assert hate.network is Network.OPINION and "I hate hiking" in hate.text
    assert "opposite polarity" in events[2].reason
    assert events[1].evidence_id == opinion.id  # the restatement was merged into it
    assert set(bank.unit(opinion.id).source_ids) == {"d10", "d20"}

    # Unrelated evidence leaves opinions alone.
    quiet = bank.ingest(
        one("d4", DAY + timedelta(days=41), "Bob", "The train to Porto leaves at nine."),
        mode="rules",
    )
    assert quiet.opinion_events == 0 and bank.unit(opinion.id).confidence == pytest.approx(c2)
    assert bank.verify().ok


def test_alpha_comes_from_the_bank_config(bank) -> None:
    bank.set_profile(agent_name="Alice", config={"retain.opinion_alpha": 0.25})
    bank.ingest(one("d1", DAY, "Alice", "I love hiking in Yosemite."), mode="rules")
    [opinion] = bank.units(Network.OPINION, limit=None)
    bank.ingest(
        one("d2", DAY + timedelta(days=3), "Alice", "I hate hiking in Yosemite now."), mode="rules"
    )
    step = bank.opinion_events(opinion.id)[-1]
    assert bank.unit(opinion.id).confidence == pytest.approx(
        max(opinion.confidence - 0.5 * step.weight, 0.0)
    )


# -- observations ---------------------------------------------------------------------


def test_third_person_and_rules_profile() -> None:
    assert (
        third_person("Alice: I love my dog.", verbatim=True)
        == "Alice said: Alice loves Alice's dog."
    )
    assert (
        third_person("I recommended Yosemite to Alice.", "Bob")
        == "Bob recommended Yosemite to Alice."
    )
    assert third_person("Alice said: I went home.") == "Alice said: I went home."
    from core.types import Unit

    # A profile keeps the lasting facts and the life events, not passing moments,
    # and names exactly the facts it used.
    trivia = [
        "Deborah shared a photo of a sunset over the beach.",
        "Deborah is really excited!",
        "Deborah shared a photo of a bowl of soup.",
        "Deborah is so happy today!",
    ]
    lasting = [
        "Deborah teaches yoga at a studio by the beach.",
        "Deborah's mother passed away last year.",
        "Deborah has two cats, Luna and Max.",
    ]
    texts = trivia[:2] + lasting[:1] + trivia[2:] + lasting[1:] + [
        "Deborah taught a yoga class for seniors at the studio.",
        "Deborah adopted a third cat from the shelter.",
    ]
    facts = [
        Unit(str(i), text, Network.WORLD, occurred_start=DAY + timedelta(days=7 * i))
        for i, text in enumerate(texts)
    ]
    composed = compose_profile(Entity("e", "Deborah", "person"), facts, limit=4)
    assert composed.text.startswith("Deborah (person; 9 facts, 1 March 2024 to 26 April 2024).")
    for text in lasting:
        assert text.rstrip(".") in composed.text, composed.text
    assert not any(t.rstrip("!.") in composed.text for t in trivia), composed.text
    assert {u.text for u in composed.used} <= set(texts) and len(composed.used) == 4
    # In time order, each with its date.
    assert composed.text.index("teaches yoga") < composed.text.index("has two cats")
    assert "teaches yoga at a studio by the beach (15 March 2024)." in composed.text
    assert rules_profile(Entity("e", "Deborah", "person"), facts, limit=4) == composed.text


def test_a_profile_states_the_answer_of_a_question_and_answer_fact() -> None:
    fact = Unit(
        "q",
        'Maya asked me "Any news from Northwind on the Atlas contract?"; Northwind signed'
        " the Atlas extension this morning (30 July 2025).",
        Network.WORLD,
    )
    composed = compose_profile(Entity("e", "Northwind", "org"), [fact])
    assert composed.text.endswith("Northwind signed the Atlas extension this morning (30 July 2025).")
    assert "asked" not in composed.text


@pytest.mark.slow
def test_observations_are_queued_generated_and_replaced(bank) -> None:
    bank.set_profile(agent_name="Bob")
    chat = Document(
        id="",
        title="c1",
        turns=(
            Turn("t0", "Alice", "My sister Priya works at Northwind in Lisbon.", DAY, "s1", 0),
            Turn("t1", "Bob", "I met Priya at the Lisbon office last year.", DAY, "s1", 1),
            Turn("t2", "Alice", "Priya loves the view from that office.", DAY, "s1", 2),
        ),
    )
    report = bank.ingest(chat, mode="verbatim")
    assert report.jobs_queued == len(bank.entities()) == bank.pending_jobs()
    assert bank.count(Network.OBSERVATION) == 0, "retain never waits for observations"
    # Queuing twice does not duplicate jobs.
    from core.retain.observations import queue_observation_jobs
    from core.store.bank_store import utcnow

    with bank.store.transaction() as tx:
        assert queue_observation_jobs(tx.con, [e.id for e in bank.entities()], utcnow()) == []

    jobs = bank.process_jobs(limit=2)
    assert jobs.processed == 2 and bank.pending_jobs() == report.jobs_queued - 2
    jobs = bank.process_jobs()
    assert bank.pending_jobs() == 0 and not jobs.failed

    priya = next(e for e in bank.entities() if e.name == "Priya")
    observation = bank.observation(priya.id)
    assert observation.network is Network.OBSERVATION and observation.entity_ids == (priya.id,)
    assert observation.source_ids == ("t0", "t1", "t2")
    assert "Bob said: Bob met Priya" in observation.text, "third person, the agent named"
    # Its sources are the facts it quotes (here all three: they fit).
    assert set(observation_sources(bank.store.reader(), observation.id)) == {
        u.id for u in bank.units([Network.WORLD, Network.EXPERIENCE], entity=priya.id, limit=None)
    }
    # Observations are not linked as facts, nor mentioned as evidence.
    assert not bank.links(observation.id)

    # New facts about Priya: her observation is regenerated in place.
    later = Document(
        id="",
        title="c2",
        turns=(
            Turn("u0", "Alice", "Priya moved to Porto in June.", DAY + timedelta(days=5), "s1", 0),
        ),
    )
    bank.ingest(later, mode="verbatim")
    assert bank.pending_jobs() >= 1
    bank.process_jobs()
    updated = bank.observation(priya.id)
    assert updated.id == observation.id and "Porto" in updated.text
    assert updated.source_ids == ("t0", "t1", "t2", "u0")
    assert bank.count(Network.OBSERVATION) == len(
        [
            e
            for e in bank.entities()
            if bank.units([Network.WORLD, Network.EXPERIENCE], entity=e.id, limit=1)
        ]
    )
    # When the facts go, the observation goes with them.
    bank.delete_units(
        [
            u.id
            for u in bank.units(entity=priya.id, limit=None)
            if u.network is not Network.OBSERVATION
        ]
    )
    with bank.store.transaction() as tx:
        queue_observation_jobs(tx.con, [priya.id], utcnow())  # curation may have queued it
    assert bank.pending_jobs() >= 1
    assert bank.process_jobs().observations_removed >= 1
    assert bank.observation(priya.id) is None
    assert bank.count(Network.OBSERVATION) == 0
    assert bank.verify().ok


@pytest.mark.slow
def test_confidence_moves_by_the_evidence_weight_not_by_a_count(bank) -> None:
    """Issue 29: another person's view is evidence for the agent's belief (a world
    fact "Bob thinks …": the frame names the speaker, not the listener), weighed
    by how plainly it bears on it; saying it again in the same conversation is
    not a second piece of evidence, and a remark about another "it" is none."""
    bank.set_profile(agent_name="Alice")
    bank.ingest(one("d1", DAY, "Alice", "I think the Porto office is perfect for the team."))
    [opinion] = bank.units(Network.OPINION, limit=None)
    c0 = opinion.confidence
    said = [
        "The Porto office is perfect for the team.",
        "We had lunch.",
        "The Porto office would be perfect for the whole team.",
    ]
    turns = tuple(
        Turn(f"d2{i}", "Bob", text, DAY + timedelta(days=1, minutes=i), "s1", i)
        for i, text in enumerate(said)
    )
    bank.ingest(Document(id="", title="d2", turns=turns), mode="rules")
    [step] = [e for e in bank.opinion_events(opinion.id) if e.relation != "formed"]
    assert step.relation == "reinforce" and step.independence == 1.0
    assert 0.5 < step.strength < 1.0  # similar, not the same words: less than a full step
    [view] = [u for u in bank.units(Network.WORLD, limit=None) if "Porto" in u.text]
    assert view.text.startswith("Bob thinks the Porto office is perfect")
    assert step.evidence_id == view.id
    after = bank.unit(opinion.id).confidence
    assert after == pytest.approx(apply_evidence(c0, "reinforce", 0.1, step.strength))

    # "It sounds peaceful" is about something else: the opinion does not move.
    quiet = bank.ingest(one("d3", DAY + timedelta(days=2), "Bob", "It sounds peaceful!"))
    assert quiet.opinion_events == 0
    assert bank.unit(opinion.id).confidence == pytest.approx(after)
