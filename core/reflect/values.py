"""What reflect hands back: reflections, comparisons, opinions formed, trajectories.

Plain frozen dataclasses, safe to hand to the studio's threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from core.types import Disposition, EngramError, Unit

if TYPE_CHECKING:
    from core.recall.result import RecallResult
    from core.retain.opinions import OpinionEvent

OFFLINE_MODE = "offline extractive"


def llm_mode(model: str) -> str:
    return f"ollama:{model}"


class ReflectionError(EngramError):
    """A reflection could not be made or committed; the message says why.

    `kind` is the language model's failure kind ("unreachable", "timeout",
    "http", "model", "config", "invalid"), "commit" for a refused commit or
    "missing" for an unknown reflection id."""

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


class OpinionAction(StrEnum):
    FORMED = "formed"  # a new opinion unit
    UPDATED = "updated"  # an existing similar opinion moved through apply_evidence


@dataclass(frozen=True)
class FormedOpinion:
    """One opinion a reflection forms, or the update it makes to an existing one.

    Before commit this is a plan: `confidence_before` / `confidence` are what the
    bank held at planning time and what the step would make of it. `commit`
    re-applies the same relation to the confidence the opinion has then, and
    fills `event_id` and the final numbers."""

    action: OpinionAction
    opinion_id: str  # assigned at planning for a new opinion, so ids are known before commit
    text: str  # the opinion as the reflection states it
    confidence: float  # new: the stated confidence; update: the confidence after the step
    supporting_ids: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()  # names as the model gave them
    entity_ids: tuple[str, ...] = ()  # those names resolved to the bank's entities
    relation: str | None = None  # updates: reinforce | weaken | contradict | neutral
    confidence_before: float | None = None
    similarity: float | None = None  # cosine to the existing opinion it updates
    existing_text: str | None = None  # the text of the existing opinion it updates
    proposed_confidence: float | None = None  # updates: what the model stated
    reason: str = ""
    event_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["action"] = self.action.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FormedOpinion:
        values = dict(data)
        values["action"] = OpinionAction(values["action"])
        for key in ("supporting_ids", "entities", "entity_ids"):
            values[key] = tuple(values.get(key) or ())
        return cls(**values)


@dataclass(frozen=True)
class Evidence:
    """One recalled unit as the reflection saw it."""

    unit_id: str
    network: str
    text: str
    date: str  # as written in the prompt
    confidence: float | None = None
    score: float = 0.0
    source_count: int = 0
    entity_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class LeftOut:
    """Offline reflection: a recalled unit the disposition did not select, and why."""

    unit_id: str
    reason: str


@dataclass(frozen=True)
class Reflection:
    """One answer to one query under one Θ, and the opinions it forms.

    `evidence` is every recalled unit the answer was based on (offline: the
    selected ones, in the order Θ put them; `left_out` names the rest)."""

    id: str
    query: str
    disposition: Disposition
    answer: str
    mode: str  # "ollama:<model>" or "offline extractive"
    model: str
    created_at: datetime
    evidence: tuple[Evidence, ...] = ()
    opinions: tuple[FormedOpinion, ...] = ()
    committed: bool = False
    system_prompt: str = ""
    prompt: str = ""
    budget_tokens: int = 0
    # Why no opinions were formed although a model answered (garbage, timeout).
    opinion_error: str | None = None
    # Compare only: this disposition produced no answer at all; cannot be committed.
    error: str | None = None
    notes: tuple[str, ...] = ()  # e.g. why the offline path was taken
    left_out: tuple[LeftOut, ...] = ()
    # The bank's own time of this reflection: the reference time it was asked
    # at, else the latest time of its evidence. Opinions it forms or moves are
    # stamped with it (or with their own evidence's time), never the wall clock,
    # so the opinion timeline stays on the conversation's time line.
    as_of: datetime | None = field(default=None, compare=False)
    recall: RecallResult | None = field(default=None, compare=False, repr=False)
    # The embedding of each planned new opinion's text (by opinion id), so a
    # commit does not embed again what planning already did.
    vectors: Mapping[str, tuple[float, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def evidence_ids(self) -> list[str]:
        return [e.unit_id for e in self.evidence]

    @property
    def offline(self) -> bool:
        return self.mode == OFFLINE_MODE

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def formed(self) -> list[FormedOpinion]:
        return [o for o in self.opinions if o.action is OpinionAction.FORMED]

    @property
    def updated(self) -> list[FormedOpinion]:
        return [o for o in self.opinions if o.action is OpinionAction.UPDATED]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "query": self.query,
            "disposition": self.disposition.to_dict(),
            "answer": self.answer,
            "mode": self.mode,
            "model": self.model,
            "created_at": self.created_at.isoformat(),
            "committed": self.committed,
            "evidence": [asdict(e) for e in self.evidence],
            "opinions": [o.to_dict() for o in self.opinions],
            "opinion_error": self.opinion_error,
            "error": self.error,
            "notes": list(self.notes),
            "left_out": [asdict(x) for x in self.left_out],
            "budget_tokens": self.budget_tokens,
            "system_prompt": self.system_prompt,
        }


@dataclass(frozen=True)
class Comparison:
    """The same recalled evidence answered under several dispositions; nothing committed."""

    query: str
    reflections: tuple[Reflection, ...]
    recall: RecallResult | None = field(default=None, compare=False, repr=False)

    @property
    def answers(self) -> list[str]:
        return [r.answer for r in self.reflections]

    @property
    def mixed(self) -> bool:
        """Some answers were composed by the model and others are extractive lists
        (the model failed for them): not comparable side by side as they are."""
        answered = [r for r in self.reflections if r.ok]
        return len({r.offline for r in answered}) > 1

    @property
    def warning(self) -> str:
        """What a person must know before comparing the columns ("" when nothing)."""
        if not self.mixed:
            return ""
        composed = [str(i) for i, r in enumerate(self.reflections, 1) if r.ok and not r.offline]
        listed = [str(i) for i, r in enumerate(self.reflections, 1) if r.ok and r.offline]
        model = next(r.model for r in self.reflections if r.ok and not r.offline)
        return (
            f"not a like-for-like comparison: answer{'s' if len(composed) > 1 else ''} "
            f"{', '.join(composed)} {'were' if len(composed) > 1 else 'was'} composed by "
            f"{model}, answer{'s' if len(listed) > 1 else ''} {', '.join(listed)} "
            f"{'are' if len(listed) > 1 else 'is'} an extractive list (the model failed for "
            f"{'them' if len(listed) > 1 else 'it'}): the differences are not the profiles'"
        )

    def __len__(self) -> int:
        return len(self.reflections)

    def __getitem__(self, index: int) -> Reflection:
        return self.reflections[index]


@dataclass(frozen=True)
class TrajectoryStep:
    """One event of an opinion's history with the evidence unit behind it (if still stored)."""

    event: OpinionEvent
    evidence: Unit | None = None
    reflection_id: str | None = None  # the reflection that caused it, if one did

    @property
    def happened_at(self) -> datetime:
        return self.event.happened_at

    @property
    def confidence(self) -> float:
        return self.event.confidence_after


@dataclass(frozen=True)
class OpinionTrajectory:
    """An opinion's confidence over time, each step with its evidence and reason."""

    opinion: Unit
    steps: tuple[TrajectoryStep, ...]

    @property
    def points(self) -> list[tuple[datetime, float]]:
        return [(s.happened_at, s.confidence) for s in self.steps]

    @property
    def texts(self) -> list[str]:
        """Every text the opinion has had, oldest first, ending with the current one."""
        out: list[str] = []
        for step in self.steps:
            old = step.event.old_text
            if old and (not out or out[-1] != old):
                out.append(old)
        if not out or out[-1] != self.opinion.text:
            out.append(self.opinion.text)
        return out


@dataclass(frozen=True)
class OpinionChange:
    """An opinion that changed within a time range, with the events that changed it."""

    opinion: Unit
    events: tuple[OpinionEvent, ...]

    @property
    def confidence_before(self) -> float | None:
        return self.events[0].confidence_before if self.events else None

    @property
    def confidence_after(self) -> float | None:
        return self.events[-1].confidence_after if self.events else None
