"""Opinion formation: what the model says the reflection leads the agent to believe.

The model answers structured output, a list of {text, confidence, entities,
supporting_ids}. Everything is validated before anything is planned: a reply
with a confidence outside [0, 1], an opinion citing no recalled evidence, or a
copy of the prompt's example costs an attempt, and after the last attempt the
whole formation fails (no partial set of opinions ever reaches the bank).

Planning matches each proposed opinion against the bank's opinions by cosine
(the same vectors retain compares): at or above `SIMILAR_OPINION` it is an
update of that opinion, assessed with retain's rules and moved with retain's
`apply_evidence`; below, a new opinion. Planning reads only; `store.commit`
writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.reflect.disposition import system_prompt
from core.reflect.prompt import evidence_sections
from core.reflect.values import Evidence, FormedOpinion, OpinionAction
from core.retain.entities import fold, list_entities
from core.retain.opinions import OpinionState, apply_evidence, assess_rules, load_opinions
from core.types import BankProfile, Disposition, new_id

if TYPE_CHECKING:
    from core.handle import BankHandle
    from core.providers.llm import LanguageModel

# A proposed opinion at least this close (cosine) to an existing one is an update of it.
SIMILAR_OPINION = 0.8
MAX_OPINIONS = 5
MAX_OPINION_CHARS = 500
MAX_ENTITIES = 10

EXAMPLE_TEXT = "Alice would enjoy a quieter national park more than a crowded one."

FORMATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "opinions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "entities": {"type": "array", "items": {"type": "string"}},
                    "supporting_ids": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["text", "confidence", "entities", "supporting_ids"],
            },
        }
    },
    "required": ["opinions"],
}

FORMATION_TASK = (
    "You have just answered a question from your memory. Now say which opinions (your own "
    "beliefs, judgements or preferences, not restated facts) this reflection leads you to hold, "
    f"at most {MAX_OPINIONS}; none is a fine answer. For each give: text (one self-contained "
    "sentence), confidence (a number from 0 to 1), entities (the names of the people, places or "
    "things it is about) and supporting_ids (the bracketed ids of the evidence that supports it)."
)


@dataclass(frozen=True)
class ProposedOpinion:
    text: str
    confidence: float
    entities: tuple[str, ...]
    supporting_ids: tuple[str, ...]


def formation_prompts(
    profile: BankProfile,
    disposition: Disposition,
    query: str,
    answer: str,
    evidence: Sequence[Evidence],
) -> tuple[str, str]:
    """(system, user) for the formation call."""
    system = f"{system_prompt(profile, disposition)}\n\n{FORMATION_TASK}"
    cited = evidence[0].unit_id if evidence else "0123456789abcdef"
    example = (
        '{"opinions": [{"text": "' + EXAMPLE_TEXT + '", "confidence": 0.7, '
        '"entities": ["Alice"], "supporting_ids": ["' + cited + '"]}]}'
    )
    user = (
        f"Question: {query}\n\nYour answer: {answer}\n\n"
        f"Your memory (evidence):\n\n{evidence_sections(evidence)}\n\n"
        "Which opinions does this reflection lead you to hold? Answer JSON only, shaped like "
        f"this example (do not copy it): {example}"
    )
    return system, user


def _confidence(value: Any, n: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"opinion {n} has no numeric confidence")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"opinion {n} has confidence {value!r}, not a number") from None
    if not 0.0 <= number <= 1.0 or number != number:
        raise ValueError(f"opinion {n} has confidence {value!r}; it must be between 0 and 1")
    return number


def _strings(value: Any, what: str, n: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"opinion {n}: {what} must be a list of strings")
    return tuple(dict.fromkeys(str(v).strip() for v in value if str(v).strip()))


def validator(evidence_ids: Sequence[str]):
    """The `validate` callable for `LanguageModel.structured`."""
    known = set(evidence_ids)

    def validate(value: Any) -> list[ProposedOpinion]:
        items = value.get("opinions") if isinstance(value, dict) else value
        if isinstance(value, dict) and "opinions" not in value:
            raise KeyError("opinions")
        if not isinstance(items, list):
            raise ValueError("'opinions' must be a list")
        out: list[ProposedOpinion] = []
        seen: set[str] = set()
        for n, item in enumerate(items[:MAX_OPINIONS], start=1):
            if not isinstance(item, dict):
                raise ValueError(f"opinion {n} is not an object")
            text = item.get("text")
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"opinion {n} has no text")
            text = " ".join(text.split())
            if len(text) > MAX_OPINION_CHARS:
                raise ValueError(f"opinion {n} is longer than {MAX_OPINION_CHARS} characters")
            confidence = _confidence(item.get("confidence"), n)
            raw_ids = item.get("supporting_ids", item.get("supporting_unit_ids"))
            cited = _strings(raw_ids, "supporting_ids", n)
            supporting = tuple(i.strip("[]") for i in cited if i.strip("[]") in known)
            if not supporting:
                raise ValueError(f"opinion {n} cites none of the recalled evidence")
            entities = _strings(item.get("entities"), "entities", n)[:MAX_ENTITIES]
            if text.casefold() in seen:
                continue
            seen.add(text.casefold())
            out.append(ProposedOpinion(text, confidence, entities, supporting))
        return out

    return validate


def ask_opinions(
    lm: LanguageModel,
    profile: BankProfile,
    disposition: Disposition,
    query: str,
    answer: str,
    evidence: Sequence[Evidence],
) -> list[ProposedOpinion]:
    """The model's proposed opinions; raises LanguageModelError when it gives none usable."""
    system, user = formation_prompts(profile, disposition, query, answer, evidence)
    return lm.structured(
        system,
        user,
        FORMATION_SCHEMA,
        validator([e.unit_id for e in evidence]),
        examples=(EXAMPLE_TEXT,),
    )


def _entity_index(bank: BankHandle) -> dict[str, str]:
    index: dict[str, str] = {}
    for entity in list_entities(bank.store.reader()):
        for name in (entity.name, *entity.aliases):
            index.setdefault(fold(name), entity.id)
    return index


def plan_opinions(
    bank: BankHandle, proposals: Sequence[ProposedOpinion], query: str
) -> tuple[list[FormedOpinion], dict[str, tuple[float, ...]]]:
    """Decide for each proposal: a new opinion, or an update of an existing similar one.

    Returns the plan and the vectors of the new opinions (by id). Reads the
    bank; writes nothing. Proposals are applied in order to a working copy of
    the opinions, so two proposals about the same belief move it twice."""
    if not proposals:
        return [], {}
    alpha = float(bank.config["retain.opinion_alpha"])
    states: dict[str, OpinionState] = load_opinions(bank.store.reader())
    vectors = np.asarray(bank.embedder.embed([p.text for p in proposals]), np.float32)
    entities = _entity_index(bank)
    planned: list[FormedOpinion] = []
    new_vectors: dict[str, tuple[float, ...]] = {}
    for proposal, vector in zip(proposals, vectors, strict=True):
        entity_ids = tuple(
            dict.fromkeys(entities[fold(n)] for n in proposal.entities if fold(n) in entities)
        )
        best, similarity = _most_similar(list(states.values()), vector)
        if best is not None and similarity >= SIMILAR_OPINION:
            assessment = assess_rules(proposal.text, best.text, similarity)
            before = best.confidence
            best.confidence = apply_evidence(before, assessment.relation, alpha)
            planned.append(
                FormedOpinion(
                    action=OpinionAction.UPDATED,
                    opinion_id=best.id,
                    text=proposal.text,
                    confidence=best.confidence,
                    supporting_ids=proposal.supporting_ids,
                    entities=proposal.entities,
                    entity_ids=entity_ids,
                    relation=assessment.relation.value,
                    confidence_before=before,
                    similarity=round(similarity, 4),
                    existing_text=best.text,
                    proposed_confidence=proposal.confidence,
                    reason=f"reflection on {query!r}: {assessment.reason}",
                )
            )
            continue
        opinion_id = new_id()
        new_vectors[opinion_id] = tuple(float(x) for x in vector)
        states[opinion_id] = OpinionState(
            id=opinion_id,
            text=proposal.text,
            confidence=proposal.confidence,
            vector=vector,
            entity_ids=frozenset(entity_ids),
            new=True,
        )
        planned.append(
            FormedOpinion(
                action=OpinionAction.FORMED,
                opinion_id=opinion_id,
                text=proposal.text,
                confidence=proposal.confidence,
                supporting_ids=proposal.supporting_ids,
                entities=proposal.entities,
                entity_ids=entity_ids,
                proposed_confidence=proposal.confidence,
                reason=f"formed by a reflection on {query!r}",
            )
        )
    return planned, new_vectors


def _most_similar(
    states: Sequence[OpinionState], vector: np.ndarray
) -> tuple[OpinionState | None, float]:
    if not states:
        return None, 0.0
    sims = np.stack([s.vector for s in states]) @ vector
    i = int(np.argmax(sims))
    return states[i], float(sims[i])
