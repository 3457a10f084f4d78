"""Opinion confidence under any sequence of evidence: bounded, recorded, replayable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import Disposition, EngramError, Network
from core.reflect.history import replay
from core.reflect.values import FormedOpinion, OpinionAction, Reflection
from core.retain.opinions import events_of
from core.store.bank_store import utcnow
from core.types import new_id
from tests.support.reflection import add, unit

RELATIONS = ["reinforce", "weaken", "contradict", "neutral"]


def rule(c: float, relation: str, alpha: float) -> float:
    """The reinforcement rule, written out independently of the engine's."""
    if relation == "reinforce":
        return min(c + alpha, 1.0)
    if relation == "weaken":
        return max(c - alpha, 0.0)
    if relation == "contradict":
        return max(c - 2 * alpha, 0.0)
    return c


def reflection(ops, vectors=None) -> Reflection:
    return Reflection(
        id=new_id(),
        query="How do I feel about it?",
        disposition=Disposition(),
        answer="An answer.",
        mode="ollama:test",
        model="test",
        created_at=utcnow(),
        opinions=tuple(ops),
        vectors=vectors or {},
    )


def update(opinion_id: str, relation: str) -> FormedOpinion:
    return FormedOpinion(
        OpinionAction.UPDATED, opinion_id, "It is good.", 0.0, relation=relation, reason="test"
    )


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    start=st.floats(0.0, 1.0),
    alpha=st.sampled_from([0.05, 0.1, 0.25, 0.4]),
    commits=st.lists(
        st.lists(st.sampled_from(RELATIONS), min_size=1, max_size=4), min_size=1, max_size=4
    ),
)
def test_replaying_the_events_gives_the_stored_confidence(bank, start, alpha, commits):
    bank.set_profile(config={"retain.opinion_alpha": alpha})
    opinion_id = new_id()
    vector = np.random.default_rng(0).normal(size=bank.store.dim)
    vector = tuple(float(x) for x in vector / np.linalg.norm(vector))
    formed = FormedOpinion(OpinionAction.FORMED, opinion_id, "It is good.", start, reason="test")
    # The first reflection forms the opinion and already moves it.
    bank.commit_reflection(
        reflection([formed, *(update(opinion_id, r) for r in commits[0])], {opinion_id: vector})
    )
    for relations in commits[1:]:
        bank.commit_reflection(reflection(update(opinion_id, r) for r in relations))

    expected = start
    for relation in (r for relations in commits for r in relations):
        expected = rule(expected, relation, alpha)
    stored = bank.unit(opinion_id).confidence
    assert 0.0 <= stored <= 1.0
    assert stored == pytest.approx(expected, abs=1e-9)

    history = events_of(bank.store.reader(), opinion_id)
    moves = [r for relations in commits for r in relations if r != "neutral"]
    assert [e.relation for e in history] == ["formed", *moves]  # neutral is no step
    replayed = replay(history, alpha)
    assert replayed[-1] == pytest.approx(stored, abs=1e-9)
    assert [e.confidence_after for e in history] == pytest.approx(replayed, abs=1e-9)
    for previous, event in zip(history, history[1:], strict=False):
        assert event.confidence_before == pytest.approx(previous.confidence_after, abs=1e-9)
    # At each event's time the opinion held what the last event up to then made it.
    for event in history:
        last = [e for e in history if e.happened_at <= event.happened_at][-1]
        assert bank.opinion_confidence_at(opinion_id, event.happened_at) == pytest.approx(
            last.confidence_after
        )


def test_history_of_a_fact_that_is_not_an_opinion_is_refused(bank):
    [fact] = add(bank, unit("Alice lives in Denver.", Network.WORLD))
    with pytest.raises(EngramError, match="not an opinion"):
        bank.opinion_history(fact)
    with pytest.raises(EngramError, match="no unit"):
        bank.opinion_history("0" * 16)


def test_an_update_whose_opinion_vanished_is_formed_on_its_own(bank):
    [held] = add(bank, unit("Denver is a fine city.", Network.OPINION, confidence=0.5))
    planned = reflection(
        [
            FormedOpinion(
                OpinionAction.UPDATED,
                held,
                "Denver is a lovely city.",
                0.6,
                relation="reinforce",
                confidence_before=0.5,
                proposed_confidence=0.9,
            )
        ]
    )
    bank.delete_units([held])
    change = bank.commit_reflection(planned)
    [new] = change.added["opinion"]
    assert new != held and bank.unit(new).confidence == 0.9
    assert bank.unit(new).text == "Denver is a lovely city."
    [stored] = bank.reflections()[0].opinions
    assert stored.action is OpinionAction.FORMED and stored.opinion_id == new
    assert "no longer exists" in stored.reason
    assert bank.verify().ok
