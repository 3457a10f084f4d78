"""The extractive reflection: evidence selected and ordered by Θ, no model, no opinions."""

from __future__ import annotations

from datetime import datetime

import pytest

from core import Disposition, Network
from core.reflect.offline import MAX_ITEMS
from core.reflect.values import OFFLINE_MODE
from tests.support.reflection import add, add_entity, state, unit

QUERY = "Where should Alice go hiking this summer?"


@pytest.fixture
def memories(bank):
    alice = add_entity(bank, "Alice")
    names = [
        "wants",
        "neighbour",
        "boots",
        "paraphrase",
        "worried",
        "list",
        "weak_opinion",
        "strong_opinion",
        "yosemite",
        "snack",
    ]
    ids = add(
        bank,
        unit(
            "Alice wants to go hiking in the Alps this summer.",
            when=datetime(2024, 3, 2),
            sources=("t1", "t2"),
            entities=(alice,),
        ),
        unit("A neighbour claimed the Dolomites trails are overrated.", sources=("t3",)),
        unit(
            "Alice bought new boots for mountain trips.",
            when=datetime(2024, 2, 10),
            sources=("t4",),
            entities=(alice,),
        ),
        unit(
            "She is keen on trekking through mountains during the warm months.",
            sources=("t5", "t6"),
        ),
        unit(
            "I felt worried that Alice was stressed about her job before the trip.",
            Network.EXPERIENCE,
            when=datetime(2024, 3, 5),
            sources=("t7",),
        ),
        unit("I sent Alice a list of alpine trails.", Network.EXPERIENCE, sources=("t8",)),
        unit("Alice would enjoy the Alps more than Yosemite.", Network.OPINION, confidence=0.3),
        unit("Hiking in the mountains is good for Alice.", Network.OPINION, confidence=0.9),
        unit(
            "Alice went hiking in Yosemite last summer.",
            when=datetime(2023, 7, 14),
            sources=("t9", "t10"),
            entities=(alice,),
        ),
        unit("Alice's favourite hiking snack is trail mix.", sources=("t11", "t12")),
    )
    return dict(zip(names, ids, strict=True))


def rank(reflection, unit_id: str) -> float:
    ids = reflection.evidence_ids
    return ids.index(unit_id) if unit_id in ids else float("inf")


def reasons(reflection) -> dict[str, str]:
    return {x.unit_id: x.reason for x in reflection.left_out}


def test_it_says_it_is_extractive_and_forms_no_opinions(engine, bank, memories):
    before = state(bank)
    r = bank.reflect(QUERY, Disposition())
    assert r.mode == OFFLINE_MODE and r.model == "" and r.offline
    assert r.opinions == ()
    assert r.answer.startswith("Extractive reflection (no language model was used)")
    assert "forms no opinions" in r.answer
    assert any("no language model is chosen" in note for note in r.notes)
    assert 0 < len(r.evidence) <= MAX_ITEMS
    # Every selected memory is listed, in order, with its date.
    lines = [line for line in r.answer.splitlines() if line[:1].isdigit()]
    assert len(lines) == len(r.evidence)
    for line, e in zip(lines, r.evidence, strict=True):
        assert e.text in line and e.date in line
    assert "[what I know, 2024-03-02]" in r.answer
    for x in r.left_out:  # and what it left out, quoted (not a bare id), with why
        quoted = bank.unit(x.unit_id).text[:40]
        assert any(
            quoted in line and line.endswith(f" — {x.reason}") for line in r.answer.splitlines()
        )
        assert x.unit_id not in r.answer
    after = state(bank)
    assert after["units"] == before["units"] and after["events"] == before["events"]
    [kept] = bank.reflections()
    assert kept.mode == OFFLINE_MODE and kept.evidence_ids == r.evidence_ids
    assert kept.answer == r.answer


def test_skepticism_raises_the_bar_for_weak_opinions_and_single_sources(bank, memories):
    trusting = bank.reflect(QUERY, Disposition(skepticism=1), commit=False)
    skeptic = bank.reflect(QUERY, Disposition(skepticism=5), commit=False)
    assert set(trusting.evidence_ids) != set(skeptic.evidence_ids)

    left = reasons(skeptic)
    assert "below the bar" in left[memories["weak_opinion"]]
    assert "single-source" in left[memories["neighbour"]]
    # A single-source claim another memory corroborates (same entity) is not dropped for it.
    assert "single-source" not in left.get(memories["boots"], "")
    assert memories["strong_opinion"] in skeptic.evidence_ids
    assert memories["weak_opinion"] not in reasons(trusting)
    assert "single-source" not in reasons(trusting).get(memories["neighbour"], "")
    assert rank(trusting, memories["weak_opinion"]) < float("inf")


def test_literalism_prefers_exact_wording_over_paraphrase(bank, memories):
    loose = bank.reflect(QUERY, Disposition(literalism=1), commit=False)
    literal = bank.reflect(QUERY, Disposition(literalism=5), commit=False)
    assert loose.evidence_ids != literal.evidence_ids
    assert "paraphrase only" in reasons(literal)[memories["paraphrase"]]
    assert memories["paraphrase"] not in literal.evidence_ids
    assert "paraphrase" not in reasons(loose).get(memories["paraphrase"], "")
    # The fact that shares most words with the question leads under literalism 5.
    assert literal.evidence_ids[0] == memories["wants"]


def test_empathy_moves_experience_and_feelings_up(bank, memories):
    detached = bank.reflect(QUERY, Disposition(empathy=1), commit=False)
    warm = bank.reflect(QUERY, Disposition(empathy=5), commit=False)
    assert detached.evidence_ids != warm.evidence_ids
    assert rank(warm, memories["worried"]) < rank(detached, memories["worried"])
    assert rank(warm, memories["worried"]) <= 1
    assert rank(warm, memories["list"]) < rank(detached, memories["list"])


def test_bias_weighs_opinions_against_facts(bank, memories):
    factual = bank.reflect(QUERY, Disposition(bias=0.0), commit=False)
    opinionated = bank.reflect(QUERY, Disposition(bias=1.0), commit=False)
    assert factual.evidence_ids != opinionated.evidence_ids
    strong = memories["strong_opinion"]
    assert rank(opinionated, strong) < rank(factual, strong)
