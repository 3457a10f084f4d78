"""One time base: what reflection forms and moves is stamped with the bank's own
time (its evidence's, or the reflection's reference time), and the prompt dates
beliefs by that time too — never by the wall clock of the write."""

from __future__ import annotations

from datetime import datetime

import pytest

from core import Network
from core.retain.opinions import OpinionEvent, write_events
from core.store.bank_store import utcnow
from tests.support.reflection import Router, add, opinion, unit, use_fake, user_of

QUERY = "Where should Alice go hiking next?"
HELD = "Yosemite is a great park for Alice."
WALL_CLOCK_YEAR = utcnow().year


def _bank_from_2023(bank):
    hiked, told, held = add(
        bank,
        unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2023, 5, 1), sources=("t1",)),
        unit("I told Alice about Half Dome.", Network.EXPERIENCE, when=datetime(2023, 5, 2)),
        unit(HELD, Network.OPINION, confidence=0.6),
    )
    # Formed by retain from a 2023 turn: its history is on the conversation's time line.
    with bank.store.transaction() as tx:
        write_events(
            tx.con,
            [
                OpinionEvent(
                    "e0",
                    held,
                    datetime(2023, 4, 30, 18, 0),
                    "formed",
                    None,
                    0.6,
                    None,
                    "formed from t0",
                )
            ],
        )
    return hiked, told, held


def test_opinions_formed_and_moved_by_reflection_carry_the_evidence_time(engine, bank, fake_ollama):
    hiked, told, held = _bank_from_2023(bank)
    router = Router(
        opinions=[
            opinion(HELD, 0.9, [hiked], ["Alice"]),
            opinion("Alice likes long granite climbs.", 0.7, [hiked, told], ["Alice"]),
        ]
    )
    fake_ollama.responder = router
    use_fake(engine, fake_ollama)

    r = bank.reflect(QUERY)

    updated, formed = r.opinions
    history = bank.opinion_history(held)
    assert [s.event.happened_at for s in history.steps] == [
        datetime(2023, 4, 30, 18, 0),
        datetime(2023, 5, 1),  # the evidence's time, not today
    ]
    [born] = bank.opinion_history(formed.opinion_id).steps
    assert born.event.happened_at == datetime(2023, 5, 2)  # the newest of its evidence
    assert bank.unit(formed.opinion_id).mentioned_at == datetime(2023, 5, 2)
    # The prompt dated the held opinion by its last step, not by the write's wall clock.
    line = next(line for line in user_of(router.answer_bodies[0]).splitlines() if held in line)
    assert "as of 2023-04-30 18:00" in line
    assert str(WALL_CLOCK_YEAR) not in line
    # Wall-clock times stay where they mean "when the user did it".
    assert r.created_at.year == WALL_CLOCK_YEAR


@pytest.mark.slow
def test_undated_evidence_takes_the_reflections_reference_time(engine, bank, fake_ollama):
    (fact,) = add(bank, unit("Alice owns hiking poles."))  # no time of its own
    fake_ollama.responder = Router(opinions=[opinion("Alice hikes often.", 0.6, [fact])])
    use_fake(engine, fake_ollama)
    r = bank.reflect("Does Alice hike?", now=datetime(2023, 6, 1, 12, 0))
    [formed] = r.opinions
    [born] = bank.opinion_history(formed.opinion_id).steps
    assert born.event.happened_at == datetime(2023, 6, 1, 12, 0)
