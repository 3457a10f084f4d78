"""The evidence part of a reflection prompt: four sections, every fact with its date.

Experience is what the agent did, world what it knows, opinions what it
believes (each with confidence and date), observations the entity profiles.
Each line carries the unit id in brackets so the model can cite it when it
forms opinions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from core.reflect.values import Evidence
from core.types import Network, Unit

SECTIONS: tuple[tuple[str, str], ...] = (
    (Network.EXPERIENCE.value, "What I did (experience)"),
    (Network.WORLD.value, "What I know (world)"),
    (Network.OPINION.value, "What I believe (opinions)"),
    (Network.OBSERVATION.value, "Profiles of the people and things involved (observations)"),
)

UNKNOWN_DATE = "date unknown"


def format_time(value: datetime) -> str:
    if value.hour == value.minute == value.second == 0:
        return value.strftime("%Y-%m-%d")
    return value.strftime("%Y-%m-%d %H:%M")


def bank_time(unit: Unit) -> datetime | None:
    """When the bank learned what `unit` says, on the conversation's own time line:
    when it was mentioned, else when it happened. None for a unit with neither
    (added by hand): its created_at is when a person did that, not bank time."""
    return unit.mentioned_at or unit.occurred_start


def date_of(unit: Unit, as_of: datetime | None = None) -> str:
    """When a fact happened, as the prompt shows it.

    Occurrence interval first; else when it was mentioned; else when it was
    recorded. Opinions and observations are dated by the bank's time of their
    last revision (`as_of`: an opinion's latest event), else of what they were
    formed from; never by `updated_at`, which is the wall clock of the write."""
    if unit.network in (Network.OPINION, Network.OBSERVATION):
        when = as_of or unit.mentioned_at or unit.occurred_end or unit.occurred_start
        if when is not None:
            return f"as of {format_time(when)}"
        return f"recorded {format_time(unit.created_at)}" if unit.created_at else UNKNOWN_DATE
    start, end = unit.occurred_start, unit.occurred_end
    if start is not None:
        if end is not None and format_time(end) != format_time(start):
            return f"{format_time(start)} to {format_time(end)}"
        return format_time(start)
    if unit.mentioned_at is not None:
        return f"mentioned {format_time(unit.mentioned_at)}"
    # Undated facts are at least known since they entered memory.
    if unit.created_at is not None:
        return f"recorded {format_time(unit.created_at)}"
    return UNKNOWN_DATE


def evidence_from(
    items: Iterable, units: dict[str, Unit], as_of: Mapping[str, datetime] | None = None
) -> list[Evidence]:
    """Recall items (in recall order) joined with their stored units; units no
    longer stored (deleted meanwhile) are skipped. `as_of`: the bank time of each
    opinion's latest event."""
    as_of = as_of or {}
    out: list[Evidence] = []
    seen: set[str] = set()
    for item in items:
        unit = units.get(item.unit_id)
        if unit is None or item.unit_id in seen:
            continue
        seen.add(item.unit_id)
        out.append(
            Evidence(
                unit_id=unit.id,
                network=unit.network.value,
                text=unit.text,
                date=date_of(unit, as_of.get(unit.id)),
                confidence=unit.confidence,
                score=float(item.score),
                source_count=len(unit.source_ids),
                entity_ids=unit.entity_ids,
            )
        )
    return out


def evidence_line(e: Evidence) -> str:
    if e.network == Network.OPINION.value:
        confidence = f"confidence {e.confidence:.2f}" if e.confidence is not None else "unrated"
        return f"- [{e.unit_id}] ({e.date}, {confidence}) {e.text}"
    return f"- [{e.unit_id}] ({e.date}) {e.text}"


def evidence_sections(evidence: Sequence[Evidence]) -> str:
    blocks: list[str] = []
    for network, title in SECTIONS:
        lines = [evidence_line(e) for e in evidence if e.network == network]
        blocks.append(f"## {title}\n" + ("\n".join(lines) if lines else "(nothing recalled)"))
    return "\n\n".join(blocks)


def answer_prompt(
    query: str,
    evidence: Sequence[Evidence],
    now: datetime | None = None,
    context: str | None = None,
    max_tokens: int | None = None,
) -> str:
    """The user message of the answer call; `context` is the asker's situation,
    `max_tokens` the longest answer wanted."""
    head = f"Question: {query}"
    if context and context.strip():
        head += f"\nThe asker's situation: {context.strip()}"
    if now is not None:
        head += f"\nToday is {format_time(now)}."
    length = "in a few sentences"
    if max_tokens is not None:
        # ~0.75 words a token: the model cannot count tokens, words it can.
        length += f" (at most {max(1, int(max_tokens * 0.75))} words)"
    return (
        f"{head}\n\nYour memory (evidence):\n\n{evidence_sections(evidence)}\n\n"
        f"Answer the question from this evidence {length}, in the first person."
    )
