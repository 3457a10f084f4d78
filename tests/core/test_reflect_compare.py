"""compare: several Θ on the same evidence, one after another, nothing committed until one is kept."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import pytest

from core import Disposition, InvalidInputError, Network, ReflectionError
from core.reflect.disposition import SKEPTICISM
from core.reflect.values import OpinionAction
from tests.fakes.ollama_server import Reply
from tests.support.reflection import (
    Router,
    add,
    cited_ids,
    events,
    opinion,
    state,
    system_of,
    unit,
    use_fake,
    user_of,
)

QUERY = "Should Alice go back to Yosemite?"
GREAT = "Yosemite is a great park for Alice."
THETAS = [Disposition(skepticism=1), Disposition(skepticism=3), Disposition(skepticism=5)]


def level(body) -> int:
    """The skepticism level whose sentence the system prompt carries."""
    system = system_of(body)
    return next(n for n, sentence in SKEPTICISM.items() if sentence in system)


@pytest.fixture
def park(bank):
    hiked, told, held = add(
        bank,
        unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)),
        unit("I told Alice that Yosemite gets crowded in summer.", Network.EXPERIENCE),
        unit(GREAT, Network.OPINION, confidence=0.6),
    )
    return {"hiked": hiked, "told": told, "opinion": held}


@pytest.mark.slow
def test_compare_answers_each_theta_in_turn_on_the_same_evidence(engine, bank, fake_ollama, park):
    # A local model answers one request at a time; requests sent together would
    # wait in its queue with their silence timers running (issue 30: 6 of 8 calls
    # cut at 60 s on a CPU model). So no two model calls may overlap.
    lock = threading.Lock()
    active = [0, 0]  # now, most at once

    def answer(body):
        with lock:
            active[0] += 1
            active[1] = max(active[1], active[0])
        try:
            # Long enough for requests sent together to overlap here.
            time.sleep(0.2)
            return f"Answer at skepticism {level(body)}."
        finally:
            with lock:
                active[0] -= 1

    def formation(body):
        n = level(body)
        return [
            opinion(GREAT, 0.8, [park["hiked"]]),
            opinion(
                f"Alice would enjoy a quiet trail, by the light of view {n}.",
                0.5 + n / 10,
                [cited_ids(body)[0]],
            ),
        ]

    router = Router(answer=answer, opinions=formation)
    fake_ollama.responder = router
    use_fake(engine, fake_ollama)
    before = state(bank)

    comparison = bank.compare(QUERY, THETAS)

    assert active[1] == 1
    assert not comparison.mixed and comparison.warning == ""
    assert [r.answer for r in comparison.reflections] == [
        "Answer at skepticism 1.",
        "Answer at skepticism 3.",
        "Answer at skepticism 5.",
    ]
    assert [r.disposition for r in comparison.reflections] == THETAS
    # The same recalled evidence, recalled once, under three different system prompts.
    assert len({user_of(b) for b in router.answer_bodies}) == 1
    assert len({system_of(b) for b in router.answer_bodies}) == 3
    assert len({tuple(r.evidence_ids) for r in comparison.reflections}) == 1
    assert all(r.recall is comparison.recall for r in comparison.reflections)
    # Each comes with the opinions it would form, and nothing is committed.
    for r in comparison.reflections:
        assert not r.committed and r.mode == "ollama:llama3.2"
        update, new = r.opinions
        assert update.action is OpinionAction.UPDATED and update.opinion_id == park["opinion"]
        assert update.confidence_before == 0.6
        assert new.action is OpinionAction.FORMED
    assert state(bank) == before


@pytest.mark.slow
def test_committing_one_applies_exactly_its_opinions(engine, bank, fake_ollama, park):
    def formation(body):
        n = level(body)
        return [
            opinion(GREAT, 0.8, [park["hiked"]]),
            opinion(
                f"Crowds would spoil Yosemite for Alice, says view {n}.", n / 5, [park["told"]]
            ),
        ]

    fake_ollama.responder = Router(answer=lambda b: f"View {level(b)}.", opinions=formation)
    use_fake(engine, fake_ollama)
    comparison = bank.compare(QUERY, THETAS[:2])
    first, second = comparison.reflections
    before = state(bank)

    change = bank.commit_reflection(second)

    kept = second.formed[0].opinion_id
    assert change.added["opinion"] == {kept}
    assert change.updated["opinion"] == {park["opinion"]}
    assert change.added["reflection"] == {second.id}
    assert bank.unit(kept).text == "Crowds would spoil Yosemite for Alice, says view 3."
    assert bank.unit(kept).confidence == pytest.approx(0.6)
    assert bank.unit(park["opinion"]).confidence == pytest.approx(0.7)
    assert events(bank, park["opinion"]) == [("reinforce", 0.6, pytest.approx(0.7), park["hiked"])]
    # Nothing of the other reflection landed.
    opinions = {u.id for u in bank.units(Network.OPINION, limit=None)}
    assert opinions == {park["opinion"], kept}
    assert first.formed[0].opinion_id not in opinions
    assert len(state(bank)["units"]) == len(before["units"]) + 1
    assert [r.id for r in bank.reflections()] == [second.id]

    # The other can still be kept later: its update applies to the opinion as it is now.
    bank.commit_reflection(first)
    assert bank.unit(park["opinion"]).confidence == pytest.approx(0.8)
    assert [e[1:3] for e in events(bank, park["opinion"])] == [
        (0.6, pytest.approx(0.7)),
        (pytest.approx(0.7), pytest.approx(0.8)),
    ]
    with pytest.raises(ReflectionError, match="committed once"):
        bank.commit_reflection(first)


@pytest.mark.slow
def test_a_disposition_the_model_fails_for_does_not_sink_the_others(
    engine, bank, fake_ollama, park
):
    def answer(body):
        if level(body) == 5:
            return Reply.http_error(500, "out of memory")
        return "Fine."

    fake_ollama.responder = Router(answer=answer, opinions=[])
    use_fake(engine, fake_ollama)
    before = state(bank)
    ok, failed = bank.compare(QUERY, [THETAS[0], THETAS[2]]).reflections
    assert ok.ok and ok.answer == "Fine." and ok.opinions == ()
    assert not failed.ok and "out of memory" in failed.error and failed.answer == ""
    with pytest.raises(ReflectionError, match="no answer to keep"):
        bank.commit_reflection(failed)
    assert state(bank) == before


def test_compare_takes_two_to_four_dispositions(bank, park):
    with pytest.raises(InvalidInputError, match="2 to 4"):
        bank.compare(QUERY, [Disposition()])
    with pytest.raises(InvalidInputError, match="2 to 4"):
        bank.compare(QUERY, [Disposition()] * 5)


def test_offline_compare_selects_per_disposition_and_commits_nothing(engine, bank, park):
    before = state(bank)
    low, high = bank.compare(QUERY, [Disposition(skepticism=1), Disposition(skepticism=5)])
    assert low.offline and high.offline
    assert state(bank) == before
    # Skepticism 5 leaves out the uncorroborated single-source world fact.
    assert park["hiked"] in low.evidence_ids and park["hiked"] not in high.evidence_ids
    bank.commit_reflection(high)
    assert bank.reflections()[0].mode == "offline extractive"
    assert state(bank)["units"] == before["units"]


@pytest.mark.slow
def test_a_comparison_of_composed_and_extractive_answers_says_so(engine, bank, fake_ollama, park):
    """Issue 30: one disposition silently became an extractive list while the
    other was composed, and the side-by-side compared the two."""

    def answer(body):
        if level(body) == 5:
            # Every attempt cut at the token limit: that column falls back.
            return Reply.text("A long answer that never ends", done_reason="length")
        return "Composed."

    fake_ollama.responder = Router(answer=answer, opinions=[])
    use_fake(engine, fake_ollama)
    comparison = bank.compare(QUERY, [THETAS[0], THETAS[2]])
    composed, listed = comparison.reflections
    assert not composed.offline and listed.offline
    assert comparison.mixed
    assert comparison.warning.startswith("not a like-for-like comparison: answer 1 was composed")
    assert "answer 2 is an extractive list" in comparison.warning


@pytest.mark.slow
def test_once_the_model_is_gone_the_other_columns_do_not_wait_for_it(
    engine, bank, fake_ollama, park
):
    router = Router(answer=lambda body: Reply.dies(shutdown_server=True), opinions=[])
    fake_ollama.responder = router
    use_fake(engine, fake_ollama)
    comparison = bank.compare(QUERY, THETAS)
    assert all(r.offline for r in comparison.reflections) and not comparison.mixed
    assert len(router.answer_bodies) == 1
    assert all("failed" in " ".join(r.notes) for r in comparison.reflections)
