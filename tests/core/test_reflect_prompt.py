"""The system prompt a disposition produces, and the prompt that reaches the model."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from core import BankProfile, Disposition, Network, system_prompt
from core.reflect.disposition import EMPATHY, LITERALISM, SKEPTICISM, verbalise
from tests.support.reflection import Router, add, system_of, unit, use_fake, user_of

PROFILE = BankProfile(name="Trail notes", background="I help Alice plan her hiking trips.")
TRAITS = {"skepticism": SKEPTICISM, "literalism": LITERALISM, "empathy": EMPATHY}


@pytest.mark.parametrize("trait", sorted(TRAITS))
def test_every_level_of_a_trait_has_its_own_sentence_in_the_prompt(trait):
    prompts = []
    for level in range(1, 6):
        d = replace(Disposition(), **{trait: level})
        prompt = system_prompt(PROFILE, d)
        assert TRAITS[trait][level] in prompt
        assert f"{trait.capitalize()} {level}/5" in prompt
        prompts.append(prompt)
    assert len(set(prompts)) == 5
    assert len(set(TRAITS[trait].values())) == 5


def test_the_three_traits_never_share_a_sentence():
    sentences = [s for table in TRAITS.values() for s in table.values()]
    assert len(set(sentences)) == 15


def test_bias_sets_how_far_the_disposition_may_lean_the_answer():
    prompts = {b: system_prompt(PROFILE, Disposition(bias=b)) for b in (0.0, 0.3, 0.5, 0.7, 1.0)}
    assert len(set(prompts.values())) == 5
    assert "neutral" in prompts[0.0] and "fact-first" in prompts[0.0]
    assert "strongly opinionated" in verbalise(Disposition(bias=1.0)).split("):")[1]
    assert "1.00" in prompts[1.0] and "0.30" in prompts[0.3]
    # β is quoted, so even within a band two values read differently.
    assert system_prompt(PROFILE, Disposition(bias=0.0)) != system_prompt(
        PROFILE, Disposition(bias=0.1)
    )


def test_prompt_names_the_bank_its_background_and_agent():
    prompt = system_prompt(replace(PROFILE, agent_name="Sam"), Disposition())
    assert '"Trail notes"' in prompt
    assert "I help Alice plan her hiking trips." in prompt
    assert prompt.startswith("You are Sam")


def test_without_a_disposition_the_banks_own_is_used():
    profile = replace(PROFILE, disposition=Disposition(skepticism=5, empathy=1))
    assert system_prompt(profile) == system_prompt(profile, Disposition(skepticism=5, empathy=1))
    assert SKEPTICISM[5] in system_prompt(profile)


@pytest.mark.slow
def test_the_prompt_on_the_wire_carries_theta_and_every_recalled_fact_with_its_date(
    engine, bank, fake_ollama
):
    bank.set_profile(background="I help Alice plan her hiking trips.")
    add(
        bank,
        unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)),
        unit(
            "I recommended Yosemite to Alice for her hiking trip.",
            Network.EXPERIENCE,
            when=datetime(2024, 4, 20, 14, 30),
        ),
        unit("Alice thinks hiking in Yosemite is the best."),
        unit("Yosemite is a great hiking park for Alice.", Network.OPINION, confidence=0.65),
        unit("Alice is an avid hiker who visits Yosemite every spring.", Network.OBSERVATION),
    )
    router = Router(answer="She should hike in Yosemite again.")
    fake_ollama.responder = router
    use_fake(engine, fake_ollama)
    theta = Disposition(skepticism=5, literalism=1, empathy=4, bias=0.9)

    r = bank.reflect("Where should Alice go hiking?", theta, commit=False)

    assert r.mode == "ollama:llama3.2" and r.answer == "She should hike in Yosemite again."
    [body] = router.answer_bodies
    system, user = system_of(body), user_of(body)
    assert system == system_prompt(bank.profile(), theta)
    for sentence in (SKEPTICISM[5], LITERALISM[1], EMPATHY[4]):
        assert sentence in system
    assert '"test"' in system and "plan her hiking trips" in system
    assert "Where should Alice go hiking?" in user
    # Every recalled fact is in the prompt, in its network's section, with its date.
    recalled = {i.unit_id for i in r.recall.items} | {i.unit_id for i in r.recall.observations}
    assert recalled == set(r.evidence_ids) and len(recalled) == 5
    units = {u.id: u for u in bank.units(limit=None)}
    for unit_id in recalled:
        u = units[unit_id]
        line = next(line for line in user.splitlines() if unit_id in line)
        assert u.text in line
        if u.occurred_start is not None:
            expected = u.occurred_start.strftime(
                "%Y-%m-%d" if u.occurred_start.hour == 0 else "%Y-%m-%d %H:%M"
            )
            assert f"({expected})" in line
        elif u.network in (Network.OPINION, Network.OBSERVATION):
            # Beliefs and profiles are dated on the bank's time line (these were
            # added by hand, with no bank time: when they were recorded).
            assert u.mentioned_at is None
            assert f"(recorded {u.created_at:%Y-%m-%d %H:%M}" in line
        else:  # an undated fact: since it entered memory
            assert f"(recorded {u.created_at:%Y-%m-%d %H:%M})" in line
    assert "(2024-04-20 14:30)" in user and "(2024-05-01)" in user
    assert "confidence 0.65" in user
    sections = [
        "## What I did (experience)",
        "## What I know (world)",
        "## What I believe (opinions)",
        "## Profiles of the people and things involved (observations)",
    ]
    positions = [user.index(s) for s in sections]
    assert positions == sorted(positions)
    experience = user[positions[0] : positions[1]]
    assert "I recommended Yosemite" in experience and "Mist Trail" not in experience

    # Another Θ, another system prompt; the same evidence.
    bank.reflect("Where should Alice go hiking?", Disposition(), commit=False)
    assert system_of(router.answer_bodies[1]) != system
    assert user_of(router.answer_bodies[1]) == user
