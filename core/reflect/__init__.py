"""Reflect: answers shaped by a disposition Θ, and the opinions they form.

`reflect(bank, query, Θ)` recalls, verbalises Θ into the system prompt
(`system_prompt`), answers with the language model (or extractively without
one), forms or updates opinions and keeps the reflection; `compare` runs
several Θ on the same evidence without committing; `history` follows an
opinion's confidence through its events.
"""

from core.reflect.disposition import system_prompt, verbalise
from core.reflect.history import changed_between, confidence_at, opinions, replay, trajectory
from core.reflect.keeping import get_reflection, list_reflections
from core.reflect.reflect import commit_reflection, compare, reflect
from core.reflect.values import (
    OFFLINE_MODE,
    Comparison,
    Evidence,
    FormedOpinion,
    LeftOut,
    OpinionAction,
    OpinionChange,
    OpinionTrajectory,
    Reflection,
    ReflectionError,
    TrajectoryStep,
)

__all__ = [
    "OFFLINE_MODE",
    "Comparison",
    "Evidence",
    "FormedOpinion",
    "LeftOut",
    "OpinionAction",
    "OpinionChange",
    "OpinionTrajectory",
    "Reflection",
    "ReflectionError",
    "TrajectoryStep",
    "changed_between",
    "commit_reflection",
    "compare",
    "confidence_at",
    "get_reflection",
    "list_reflections",
    "opinions",
    "reflect",
    "replay",
    "system_prompt",
    "trajectory",
    "verbalise",
]
