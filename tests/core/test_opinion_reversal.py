"""Rules-mode assessment: evidence that takes a belief back contradicts it."""

from __future__ import annotations

import pytest

from core.retain.opinions import Relation, assess_rules

OPINION_BEACON = "Juniper is fairly sure the Beacon launch will slip past June 16."
OPINION_TOMAS = "Juniper thinks Tomás prefers async reviews."


@pytest.mark.parametrize(
    ("opinion", "evidence"),
    [
        (
            OPINION_BEACON,
            "Juniper was fairly sure the Beacon launch would slip, but with both approvals "
            "in hand Juniper now thinks it will launch on time.",
        ),
        (OPINION_BEACON, "Beacon launched on time after all."),
        (OPINION_TOMAS, "Actually Tomás said he prefers live pairing now."),
        (OPINION_TOMAS, "Tomás no longer prefers async reviews."),
    ],
)
def test_a_reversal_contradicts(opinion, evidence):
    assert assess_rules(evidence, opinion, similarity=0.9).relation == Relation.CONTRADICT


def test_a_restatement_still_reinforces():
    evidence = "Tomás prefers async reviews, as Juniper thought."
    assert assess_rules(evidence, OPINION_TOMAS, similarity=0.9).relation == Relation.REINFORCE


def test_a_distant_reversal_stays_neutral():
    evidence = "Actually the coffee machine is broken."
    assert assess_rules(evidence, OPINION_TOMAS, similarity=0.2).relation == Relation.NEUTRAL
