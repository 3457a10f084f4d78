"""The recall trace: what each stage of one recall did, typed.

Recall's stages produce these values (`RecallTrace` holds them all); they
become JSON only at the edges (`RecallTrace.to_dict`: the CLI, the HTTP API,
a saved trace), and `RecallTrace.from_dict` reads such JSON back, saved traces
from before included. The JSON layout (version 1; every key always present
but `focus`, lists may be empty):

    version, query, query_chars, budget, level, candidates_per_channel,
    networks, filters {start, end}, now, reference_time, reference_source,
    interval {start, end, text, confidence} | None, settings {recall.*: value},
    channels_requested [name], speakers_named [name], semantic_query (the text
    embedded: the query without the speakers it names, see focus.py),
    channels {name: {ran, ids, scores, ms, note, ...}}   ranked ids + raw scores
    activation {seeds [{node, activation}], steps [{step, node, from, edge,
                weight, activation}], stopped, lit} | None
    fused [{id, rank, score, factor, contributions {channel: {rank, value}}}]
          score = factor · Σ contributions (factor > 1 only for focused units)
    rerank {name, ms, scores [{id, score, fused_rank}], order [id]}
    packing {policy, order [id], tokens {id: n}, packed [id], skipped
             [{id, tokens, left}], tokens_used, budget}
    observations {budget, packed [id], skipped [id], tokens_used[, tokens {id: n}]}
    timings_ms {speakers, parse_time, embed, semantic, lexical, graph, temporal,
                channels, fusion, load, rerank, packing, observations,
                total, total_excluding_embedding}
    notes [str]
    focus {speakers [name], factor, units [id]}   only when the query names a speaker

The activation record stays in that JSON layout even in the typed trace: it
is what the studio's graph replays, and its own re-runs (`core.spread`) are
recorded the same way.

`explain(trace, unit_id)` answers "why is this fact here" from the trace alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from core.recall.fusion import Fused

TRACE_VERSION = 1
PACKING_POLICY = (
    "greedy in reranked order; a fact that does not fit the tokens left is skipped "
    "and packing continues with the next"
)


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


@dataclass
class ChannelResult:
    """One channel's ranked ids with their raw scores (`details`: what else it reports)."""

    name: str
    ids: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    ms: float = 0.0
    note: str = ""
    ran: bool = True
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "ids": list(self.ids),
            "scores": list(self.scores),
            "ms": self.ms,
            "note": self.note,
            **self.details,
        }

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> ChannelResult:
        """A channel as a trace's JSON records it (what `to_dict` wrote)."""
        known = ("ran", "ids", "scores", "ms", "note")
        return cls(
            name,
            [str(i) for i in data.get("ids", [])],
            [float(s) for s in data.get("scores", [])],
            float(data.get("ms", 0.0) or 0.0),
            str(data.get("note", "")),
            bool(data.get("ran", True)),
            {k: v for k, v in data.items() if k not in known},
        )


@dataclass(frozen=True)
class QueryInterval:
    """The time the query names, as the temporal channel searched it."""

    start: datetime | None
    end: datetime | None
    text: str = ""
    confidence: float = 1.0  # how surely it was read (core.timeparse.reading_confidence)

    def describe(self) -> str:
        """ "2023-08-18 to 2023-08-31 (read from 'the last two weeks of August 2023',
        confidence 0.90)": the window, its open side, and how surely it was read."""
        if self.start is None or self.end is None:
            return f"unread ({self.text!r})"
        last = self.end - timedelta(microseconds=1)
        if self.start.year <= 1900:
            span = f"up to {last:%Y-%m-%d}"
        elif self.end.year >= 2100:
            span = f"from {self.start:%Y-%m-%d}"
        elif self.start.date() == last.date():
            span = f"{self.start:%Y-%m-%d}"
        else:
            span = f"{self.start:%Y-%m-%d} to {last:%Y-%m-%d}"
        return f"{span} (read from {self.text!r}, confidence {self.confidence:.2f})"


@dataclass(frozen=True)
class Focus:
    """Speaker focus: the fused scores of `units` (spoken by `speakers`) × `factor`."""

    speakers: tuple[str, ...]
    factor: float
    units: tuple[str, ...]


@dataclass(frozen=True)
class RerankScore:
    id: str
    score: float
    fused_rank: int


@dataclass
class RerankTrace:
    """Which reranker ran, its score for every candidate, and the order it made."""

    name: str = ""
    ms: float = 0.0
    scores: list[RerankScore] = field(default_factory=list)
    order: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SkippedFact:
    """A fact packing tried and left out: it needed `tokens`, only `left` remained."""

    id: str
    tokens: int
    left: int


@dataclass
class PackingTrace:
    budget: int = 0
    policy: str = PACKING_POLICY
    order: list[str] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    packed: list[str] = field(default_factory=list)
    skipped: list[SkippedFact] = field(default_factory=list)
    tokens_used: int = 0


@dataclass
class ObservationsTrace:
    """The entity profiles packed under their own budget."""

    budget: int = 0
    packed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    tokens_used: int = 0
    tokens: dict[str, int] | None = None  # None: no observation was tried


@dataclass
class RecallTrace:
    """Everything one recall did, stage by stage (see the module's docstring)."""

    query: str = ""
    query_chars: int = 0
    budget: int = 0
    level: str = ""
    candidates_per_channel: int = 0
    networks: list[str] = field(default_factory=list)
    start: datetime | None = None  # the caller's occurrence filter
    end: datetime | None = None
    now: datetime | None = None
    reference_time: datetime | None = None
    reference_source: str = ""
    interval: QueryInterval | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    channels_requested: list[str] = field(default_factory=list)
    speakers_named: list[str] = field(default_factory=list)
    semantic_query: str = ""
    channels: dict[str, ChannelResult] = field(default_factory=dict)
    activation: dict[str, Any] | None = None  # the JSON activation record (see above)
    focus: Focus | None = None
    fused: list[Fused] = field(default_factory=list)
    rerank: RerankTrace = field(default_factory=RerankTrace)
    packing: PackingTrace = field(default_factory=PackingTrace)
    observations: ObservationsTrace = field(default_factory=ObservationsTrace)
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    version: int = TRACE_VERSION

    # -- the JSON edge ---------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The trace as plain JSON data (the layout in the module's docstring)."""
        interval = self.interval
        observations: dict[str, Any] = {
            "budget": self.observations.budget,
            "packed": list(self.observations.packed),
            "skipped": list(self.observations.skipped),
            "tokens_used": self.observations.tokens_used,
        }
        if self.observations.tokens is not None:
            observations["tokens"] = dict(self.observations.tokens)
        data: dict[str, Any] = {
            "version": self.version,
            "query": self.query,
            "query_chars": self.query_chars,
            "budget": self.budget,
            "level": self.level,
            "candidates_per_channel": self.candidates_per_channel,
            "networks": list(self.networks),
            "filters": {"start": iso(self.start), "end": iso(self.end)},
            "now": iso(self.now),
            "reference_time": iso(self.reference_time),
            "reference_source": self.reference_source,
            "interval": None
            if interval is None
            else {
                "start": iso(interval.start),
                "end": iso(interval.end),
                "text": interval.text,
                "confidence": interval.confidence,
            },
            "settings": dict(self.settings),
            "channels_requested": list(self.channels_requested),
            "speakers_named": list(self.speakers_named),
            "semantic_query": self.semantic_query,
            "channels": {name: c.to_dict() for name, c in self.channels.items()},
            "activation": self.activation,
            "fused": [f.to_dict() for f in self.fused],
            "rerank": {
                "name": self.rerank.name,
                "ms": self.rerank.ms,
                "scores": [
                    {"id": r.id, "score": r.score, "fused_rank": r.fused_rank}
                    for r in self.rerank.scores
                ],
                "order": list(self.rerank.order),
            },
            "packing": {
                "policy": self.packing.policy,
                "order": list(self.packing.order),
                "tokens": dict(self.packing.tokens),
                "packed": list(self.packing.packed),
                "skipped": [
                    {"id": s.id, "tokens": s.tokens, "left": s.left} for s in self.packing.skipped
                ],
                "tokens_used": self.packing.tokens_used,
                "budget": self.packing.budget,
            },
            "observations": observations,
            "timings_ms": dict(self.timings_ms),
            "notes": list(self.notes),
        }
        if self.focus is not None:
            data["focus"] = {
                "speakers": list(self.focus.speakers),
                "factor": self.focus.factor,
                "units": list(self.focus.units),
            }
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecallTrace:
        """A trace read back from its JSON (a saved trace; missing keys take defaults)."""
        filters = data.get("filters") or {}
        interval = data.get("interval")
        focus = data.get("focus")
        rerank = data.get("rerank") or {}
        packing = data.get("packing") or {}
        observations = data.get("observations") or {}
        return cls(
            query=str(data.get("query", "")),
            query_chars=int(data.get("query_chars", 0) or 0),
            budget=int(data.get("budget", 0) or 0),
            level=str(data.get("level", "")),
            candidates_per_channel=int(data.get("candidates_per_channel", 0) or 0),
            networks=[str(n) for n in data.get("networks", [])],
            start=_time(filters.get("start")),
            end=_time(filters.get("end")),
            now=_time(data.get("now")),
            reference_time=_time(data.get("reference_time")),
            reference_source=str(data.get("reference_source", "")),
            interval=None
            if not interval
            else QueryInterval(
                _time(interval.get("start")),
                _time(interval.get("end")),
                interval.get("text", ""),
                float(interval.get("confidence", 1.0)),
            ),
            settings=dict(data.get("settings") or {}),
            channels_requested=[str(c) for c in data.get("channels_requested", [])],
            speakers_named=[str(n) for n in data.get("speakers_named", [])],
            semantic_query=str(data.get("semantic_query", "")),
            channels={
                name: ChannelResult.from_dict(name, channel)
                for name, channel in (data.get("channels") or {}).items()
            },
            activation=data.get("activation"),
            focus=None
            if not focus
            else Focus(
                tuple(focus.get("speakers", [])),
                float(focus.get("factor", 1.0)),
                tuple(focus.get("units", [])),
            ),
            fused=[Fused.from_dict(f) for f in data.get("fused", [])],
            rerank=RerankTrace(
                str(rerank.get("name", "")),
                float(rerank.get("ms", 0.0) or 0.0),
                [
                    RerankScore(str(r["id"]), float(r["score"]), int(r.get("fused_rank", 0)))
                    for r in rerank.get("scores", [])
                ],
                [str(i) for i in rerank.get("order", [])],
            ),
            packing=PackingTrace(
                budget=int(packing.get("budget", data.get("budget", 0)) or 0),
                policy=str(packing.get("policy", PACKING_POLICY)),
                order=[str(i) for i in packing.get("order", [])],
                tokens={str(k): int(v) for k, v in (packing.get("tokens") or {}).items()},
                packed=[str(i) for i in packing.get("packed", [])],
                skipped=[
                    SkippedFact(str(s["id"]), int(s.get("tokens", 0)), int(s.get("left", 0)))
                    for s in packing.get("skipped", [])
                ],
                tokens_used=int(packing.get("tokens_used", 0) or 0),
            ),
            observations=ObservationsTrace(
                budget=int(observations.get("budget", 0) or 0),
                packed=[str(i) for i in observations.get("packed", [])],
                skipped=[str(i) for i in observations.get("skipped", [])],
                tokens_used=int(observations.get("tokens_used", 0) or 0),
                tokens=None
                if observations.get("tokens") is None
                else {str(k): int(v) for k, v in observations["tokens"].items()},
            ),
            timings_ms={str(k): float(v) for k, v in (data.get("timings_ms") or {}).items()},
            notes=[str(n) for n in data.get("notes", [])],
            version=int(data.get("version", TRACE_VERSION) or TRACE_VERSION),
        )


def as_trace(trace: RecallTrace | Mapping[str, Any]) -> RecallTrace:
    """`trace` typed: a RecallTrace as it is, JSON (a saved trace) read back."""
    return trace if isinstance(trace, RecallTrace) else RecallTrace.from_dict(trace)


def activation_path(trace: RecallTrace | Mapping[str, Any], unit_id: str) -> list[dict[str, Any]]:
    """The activation steps that lit `unit_id`, from its seed to it (empty if not lit)."""
    activation = as_trace(trace).activation or {}
    last: dict[str, dict[str, Any]] = {}
    for step in activation.get("steps", []):
        last[step["node"]] = step  # a node keeps its latest (highest) activation
    seeds = {s["node"] for s in activation.get("seeds", [])}
    path: list[dict[str, Any]] = []
    node = unit_id
    while node in last and node not in seeds and len(path) <= len(last):
        step = last[node]
        path.append(step)
        node = step["from"]
    return list(reversed(path))


def explain(trace: RecallTrace | Mapping[str, Any], unit_id: str) -> dict[str, Any]:
    """Everything the trace says about one unit, as JSON data: where each channel
    ranked it, how it was lit, its fused and reranked scores, the packing decision."""
    trace = as_trace(trace)
    channels = {
        name: {"rank": ch.ids.index(unit_id) + 1, "score": ch.scores[ch.ids.index(unit_id)]}
        for name, ch in trace.channels.items()
        if unit_id in ch.ids
    }
    fused = next((f for f in trace.fused if f.id == unit_id), None)
    rerank = next((r for r in trace.rerank.scores if r.id == unit_id), None)
    skipped = next((s for s in trace.packing.skipped if s.id == unit_id), None)
    return {
        "id": unit_id,
        "channels": channels,
        "activation_path": activation_path(trace, unit_id),
        "fused": None if fused is None else fused.to_dict(),
        "rerank": None
        if rerank is None
        else {"id": rerank.id, "score": rerank.score, "fused_rank": rerank.fused_rank},
        "tokens": trace.packing.tokens.get(unit_id),
        "packed": unit_id in trace.packing.packed,
        "skipped": None
        if skipped is None
        else {"id": skipped.id, "tokens": skipped.tokens, "left": skipped.left},
    }


def replay_activation(activation: dict[str, Any] | None) -> list[dict[str, float]]:
    """Every node's activation after each step of a recorded spreading (index 0:
    the seeds), rebuilt from the trace alone: what the studio animates. A node
    keeps the highest activation it reached, as in `spread`."""
    if not activation:
        return []
    current = {s["node"]: float(s["activation"]) for s in activation.get("seeds", [])}
    levels = [dict(current)]
    by_step: dict[int, list[dict[str, Any]]] = {}
    for step in activation.get("steps", []):
        by_step.setdefault(int(step["step"]), []).append(step)
    last = max(by_step, default=0)
    for wave in activation.get("waves", []):
        last = max(last, int(wave["step"]))
    for t in range(1, last + 1):
        for step in by_step.get(t, []):
            node, a = step["node"], float(step["activation"])
            current[node] = max(current.get(node, 0.0), a)
        levels.append(dict(current))
    return levels
