"""Opinions formed and updated by reflection, their events, and failures that leave no trace."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from core import Disposition, Network, ReflectionError
from core.reflect.formation import EXAMPLE_TEXT
from core.reflect.values import OFFLINE_MODE, OpinionAction
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.support.reflection import (
    Router,
    add,
    add_entity,
    cited_ids,
    events,
    opinion,
    rows,
    state,
    unit,
    use_fake,
)

QUERY = "Where should Alice go hiking next?"
GREAT = "Yosemite is a great park for Alice."


@pytest.fixture
def trail(bank):
    """A small bank about Alice and Yosemite, with one opinion at 0.6."""
    alice = add_entity(bank, "Alice", ("Ali",))
    hiked, told, held = add(
        bank,
        unit(
            "Alice hiked the Mist Trail in Yosemite and loved it.",
            when=datetime(2024, 5, 1),
            sources=("t1", "t2"),
            entities=(alice,),
        ),
        unit(
            "I recommended Yosemite to Alice for her spring hiking trip.",
            Network.EXPERIENCE,
            when=datetime(2024, 4, 20),
            sources=("t3",),
            entities=(alice,),
        ),
        unit(GREAT, Network.OPINION, confidence=0.6, entities=(alice,)),
    )
    ids = {"hiked": hiked, "told": told, "opinion": held}
    ids["alice"] = alice
    return ids


@pytest.mark.slow
def test_reflect_forms_a_new_opinion_and_updates_a_similar_one(engine, bank, fake_ollama, trail):
    hiked = trail["hiked"]
    router = Router(
        opinions=[
            opinion(GREAT, 0.9, [hiked], ["Alice"]),
            opinion("Alice prefers trails with waterfalls.", 0.75, [hiked, "feed" * 4], ["ali"]),
        ]
    )
    fake_ollama.responder = router
    use_fake(engine, fake_ollama)
    alpha = bank.config["retain.opinion_alpha"]

    r = bank.reflect(QUERY)

    assert r.committed and r.mode == "ollama:llama3.2" and r.model == "llama3.2"
    assert r.opinion_error is None
    # Formation saw the evidence with its ids, and the answer it is about.
    [body] = router.opinion_bodies
    assert {hiked, trail["told"], trail["opinion"]} <= set(cited_ids(body))
    assert r.answer in body["messages"][-1]["content"]
    updated, formed = r.opinions
    # The restated opinion moved through the reinforcement rule, with an event.
    assert updated.action is OpinionAction.UPDATED and updated.opinion_id == trail["opinion"]
    assert updated.relation == "reinforce" and updated.similarity == pytest.approx(1.0, abs=1e-3)
    assert updated.confidence_before == 0.6
    assert updated.confidence == pytest.approx(0.6 + alpha)
    assert bank.unit(trail["opinion"]).confidence == pytest.approx(0.6 + alpha)
    assert events(bank, trail["opinion"]) == [
        ("reinforce", 0.6, pytest.approx(0.6 + alpha), trail["hiked"])
    ]
    # The new one is an opinion unit with its stated confidence, a formed event,
    # the resolved entity (by alias) and the source turns of its evidence.
    assert formed.action is OpinionAction.FORMED
    assert formed.supporting_ids == (trail["hiked"],)  # the unknown id is dropped
    new = bank.unit(formed.opinion_id)
    assert new.network is Network.OPINION and new.confidence == 0.75
    assert new.text == "Alice prefers trails with waterfalls."
    assert new.entity_ids == (trail["alice"],)
    assert new.source_ids == ("t1", "t2")
    assert new.model == "llama3.2"
    assert events(bank, formed.opinion_id) == [("formed", None, 0.75, trail["hiked"])]
    assert {o.id for o in bank.opinions("Alice")} == {trail["opinion"], formed.opinion_id}
    assert bank.verify().ok  # the new opinion is indexed like any unit

    # The reflection is kept and browsable, with its event ids.
    [kept] = bank.reflections()
    assert kept.id == r.id and kept.query == QUERY and kept.answer == r.answer
    assert kept.disposition == bank.profile().disposition
    assert kept.evidence_ids == r.evidence_ids
    assert {hiked, trail["told"], trail["opinion"]} <= set(kept.evidence_ids)
    assert kept.mode == "ollama:llama3.2" and kept.committed
    assert [o.event_id for o in kept.opinions] == [o.event_id for o in r.opinions]
    assert all(o.event_id for o in kept.opinions)
    assert bank.reflection(r.id).opinions == r.opinions


@pytest.mark.slow
def test_contradiction_lowers_twice_alpha_and_confidence_stays_in_bounds(
    engine, bank, fake_ollama, trail
):
    bank.set_profile(config={"retain.opinion_alpha": 0.25})
    [high] = add(
        bank, unit("Bob is a reliable hiking partner for Alice.", Network.OPINION, confidence=0.9)
    )
    say = {"text": []}
    fake_ollama.responder = Router(
        opinions=lambda body: [opinion(t, 0.8, [cited_ids(body)[0]]) for t in say["text"]]
    )
    use_fake(engine, fake_ollama)

    say["text"] = ["Yosemite is a terrible park for Alice.", "Bob is a reliable hiking partner."]
    first = bank.reflect(QUERY)
    contradiction, reinforcement = first.opinions
    assert contradiction.relation == "contradict" and contradiction.opinion_id == trail["opinion"]
    assert bank.unit(trail["opinion"]).confidence == pytest.approx(0.1)  # 0.6 - 2 x 0.25
    assert bank.unit(trail["opinion"]).text == GREAT  # the belief is weakened, not rewritten
    assert reinforcement.relation == "reinforce" and reinforcement.opinion_id == high
    assert bank.unit(high).confidence == 1.0  # 0.9 + 0.25, clamped

    second = bank.reflect(QUERY)
    assert [o.confidence for o in second.opinions] == [0.0, 1.0]
    assert bank.unit(trail["opinion"]).confidence == 0.0
    assert [e[0] for e in events(bank, trail["opinion"])] == ["contradict", "contradict"]
    assert events(bank, high)[-1][1:3] == (1.0, 1.0)
    for (confidence,) in rows(bank, "SELECT confidence FROM units WHERE network = 'opinion'"):
        assert 0.0 <= confidence <= 1.0


@pytest.mark.parametrize(
    "bad, reason",
    [
        (
            [{"text": "Alice likes lakes.", "confidence": 7, "entities": [], "supporting_ids": []}],
            "confidence 7",
        ),
        ("not json at all", "not valid JSON"),
        ({"thoughts": "none"}, "missing field 'opinions'"),
        ("example", "copied the prompt's example"),
        ("uncited", "cites none of the recalled evidence"),
        ("second-bad", "opinion 2 has confidence 1.5"),
    ],
)
def test_garbage_opinions_form_nothing_and_say_why(engine, bank, fake_ollama, trail, bad, reason):
    def formation(body):
        cited = cited_ids(body)[0]
        if bad == "example":
            return [opinion(EXAMPLE_TEXT, 0.7, [cited], ["Alice"])]
        if bad == "uncited":
            return [opinion("Alice likes lakes.", 0.7, ["0000000000000000"])]
        if bad == "second-bad":  # the first is fine: still nothing of it may land
            return [opinion("Alice likes lakes.", 0.7, [cited]), opinion("Bob too.", 1.5, [cited])]
        return Reply.text(bad) if isinstance(bad, str) else Reply.json(bad)

    router = Router(opinions=formation)
    fake_ollama.responder = router
    use_fake(engine, fake_ollama)
    before = state(bank)

    r = bank.reflect(QUERY)

    assert r.answer and r.opinions == () and reason in r.opinion_error
    assert "no opinions formed" in r.opinion_error
    assert len(router.opinion_bodies) == 3  # asked again, within bounds
    after = state(bank)
    assert after["units"] == before["units"] and after["events"] == before["events"]
    # The answer itself is kept, saying why it formed no opinions.
    [kept] = bank.reflections()
    assert kept.opinions == () and reason in kept.opinion_error


def test_a_failing_answer_raises_and_writes_nothing(engine, bank, fake_ollama, trail):
    fake_ollama.responder = Router(answer=lambda body: Reply.http_error(500, "model crashed"))
    use_fake(engine, fake_ollama)
    before = state(bank)
    with pytest.raises(ReflectionError, match="HTTP 500: model crashed") as caught:
        bank.reflect(QUERY)
    assert caught.value.kind == "http"
    assert state(bank) == before


def test_an_unreachable_model_gives_the_extractive_reflection_and_says_so(engine, bank, trail):
    with FakeOllama() as gone:
        pass
    use_fake(engine, gone)  # stopped: nothing listens on its port any more
    r = bank.reflect(QUERY)
    assert r.mode == OFFLINE_MODE and r.opinions == ()
    assert any("not reachable" in note for note in r.notes)
    assert r.answer.startswith("Extractive reflection")
    assert bank.reflections()[0].mode == OFFLINE_MODE


def test_dry_run_plans_opinions_and_a_later_commit_applies_them(engine, bank, fake_ollama, trail):
    fake_ollama.responder = Router(
        opinions=lambda body: [
            opinion(GREAT, 0.9, [trail["hiked"]]),
            opinion("Alice should see Glacier Point at sunset.", 0.55, [trail["told"]]),
        ]
    )
    use_fake(engine, fake_ollama)
    before = state(bank)
    r = bank.reflect(QUERY, Disposition(empathy=5), commit=False)
    assert not r.committed and state(bank) == before
    new = r.formed[0].opinion_id

    change = bank.commit_reflection(r)

    assert change.added["reflection"] == {r.id}
    assert change.added["opinion"] == {new} and change.updated["opinion"] == {trail["opinion"]}
    assert bank.unit(new).confidence == 0.55
    assert bank.reflection(r.id).disposition == Disposition(empathy=5)
    with pytest.raises(ReflectionError, match="committed once"):
        bank.commit_reflection(r)
    assert len(bank.reflections()) == 1


@pytest.mark.slow
def test_a_reflection_kept_without_its_opinions_can_apply_them_once_later(
    engine, bank, fake_ollama, trail
):
    fake_ollama.responder = Router(opinions=[opinion(GREAT, 0.9, [trail["hiked"]])])
    use_fake(engine, fake_ollama)
    r = bank.reflect(QUERY, commit=False)
    before = state(bank)

    change = bank.commit_reflection(r, apply_opinions=False)

    assert change.added["reflection"] == {r.id} and not change.touches("opinion")
    [kept] = bank.reflections()
    assert not kept.committed and kept.opinions == r.opinions  # the plan, not applied
    assert state(bank)["units"] == before["units"] and state(bank)["events"] == before["events"]

    change = bank.commit_reflection(r)
    assert change.updated["reflection"] == {r.id}
    assert change.updated["opinion"] == {trail["opinion"]}
    assert bank.reflection(r.id).committed and len(bank.reflections()) == 1
    assert [e[0] for e in events(bank, trail["opinion"])] == ["reinforce"]
    with pytest.raises(ReflectionError, match="committed once"):
        bank.commit_reflection(r)
    with pytest.raises(ReflectionError, match="no reflection"):
        bank.reflection("0" * 16)


@pytest.mark.slow
def test_history_trajectory_range_and_past_confidence(engine, bank, fake_ollama, trail):
    texts = iter(
        [
            ["Yosemite is a wonderful park for Alice."],
            ["Yosemite is a terrible park for Alice."],
        ]
    )
    fake_ollama.responder = Router(
        opinions=lambda body: [opinion(t, 0.7, [trail["hiked"]]) for t in next(texts)]
    )
    use_fake(engine, fake_ollama)
    first = bank.reflect(QUERY)
    second = bank.reflect(QUERY)

    t = bank.opinion_history(trail["opinion"])
    assert [s.event.relation for s in t.steps] == ["reinforce", "contradict"]
    assert [s.reflection_id for s in t.steps] == [first.id, second.id]
    assert all(s.evidence.id == trail["hiked"] for s in t.steps)
    assert "similarity" in t.steps[0].event.reason and QUERY in t.steps[0].event.reason
    assert [c for _, c in t.points] == [pytest.approx(0.7), pytest.approx(0.5)]
    assert t.texts == [GREAT]

    at_first, at_second = (s.happened_at for s in t.steps)
    # Both steps are stamped with their evidence's time (the hike), not the wall clock.
    assert at_first == at_second == datetime(2024, 5, 1)
    # Added by hand today, without a formed event: before its steps it has no
    # confidence on the bank's time line; after them it holds the last one.
    assert bank.opinion_confidence_at(trail["opinion"], at_first - timedelta(seconds=1)) is None
    assert bank.opinion_confidence_at(trail["opinion"], at_second) == pytest.approx(0.5)
    assert bank.opinion_confidence_at(
        trail["opinion"], at_second + timedelta(days=1)
    ) == pytest.approx(bank.unit(trail["opinion"]).confidence)

    changed = bank.opinions_changed(at_second, at_second + timedelta(seconds=1))
    assert [c.opinion.id for c in changed] == [trail["opinion"]]
    assert [e.relation for e in changed[0].events] == ["reinforce", "contradict"]
    assert changed[0].confidence_before == pytest.approx(0.6)
    assert bank.opinions_changed(end=at_first - timedelta(seconds=1)) == []
    assert len(bank.opinions_changed()[0].events) == 2
    assert bank.reflections(opinion_id=trail["opinion"])[0].id == second.id
