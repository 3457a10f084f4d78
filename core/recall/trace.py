"""The recall trace: plain JSON-serialisable data the studio draws from.

Layout (every key always present but `focus`; lists may be empty):

    version, query, query_chars, budget, level, candidates_per_channel,
    networks, filters {start, end}, now, reference_time, reference_source,
    interval {start, end, text} | None, settings {recall.*: value},
    channels_requested [name], speakers_named [name], semantic_query (the text
    embedded: the query without the speakers it names, see focus.py),
    channels {name: {ran, ids, scores, ms, note, ...}}   ranked ids + raw scores
    activation {seeds [{node, activation}], steps [{step, node, from, edge,
                weight, activation}], stopped, lit} | None
    focus {speakers [name], factor, units [id]}   only when the query names a speaker
    fused [{id, rank, score, factor, contributions {channel: {rank, value}}}]
          score = factor · Σ contributions (factor > 1 only for focused units)
    rerank {name, ms, scores [{id, score, fused_rank}], order [id]}
    packing {policy, order [id], tokens {id: n}, packed [id], skipped
             [{id, tokens, left}], tokens_used, budget}
    observations {budget, packed [id], skipped [id], tokens_used}
    timings_ms {speakers, parse_time, embed, semantic, lexical, graph, temporal,
                channels, fusion, load, rerank, packing, observations,
                total, total_excluding_embedding}
    notes [str]

`explain(trace, unit_id)` answers "why is this fact here" from the trace alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

TRACE_VERSION = 1
PACKING_POLICY = (
    "greedy in reranked order; a fact that does not fit the tokens left is skipped "
    "and packing continues with the next"
)


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def new_trace(**fields: Any) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "version": TRACE_VERSION,
        "query": "",
        "query_chars": 0,
        "budget": 0,
        "level": "",
        "candidates_per_channel": 0,
        "networks": [],
        "filters": {"start": None, "end": None},
        "now": None,
        "reference_time": None,
        "reference_source": "",
        "interval": None,
        "settings": {},
        "channels_requested": [],
        "speakers_named": [],
        "semantic_query": "",
        "channels": {},
        "activation": None,
        "fused": [],
        "rerank": {"name": "", "ms": 0.0, "scores": [], "order": []},
        "packing": {
            "policy": PACKING_POLICY,
            "order": [],
            "tokens": {},
            "packed": [],
            "skipped": [],
            "tokens_used": 0,
            "budget": 0,
        },
        "observations": {"budget": 0, "packed": [], "skipped": [], "tokens_used": 0},
        "timings_ms": {},
        "notes": [],
    }
    trace.update(fields)
    return trace


def activation_path(trace: dict[str, Any], unit_id: str) -> list[dict[str, Any]]:
    """The activation steps that lit `unit_id`, from its seed to it (empty if not lit)."""
    activation = trace.get("activation") or {}
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


def explain(trace: dict[str, Any], unit_id: str) -> dict[str, Any]:
    """Everything the trace says about one unit: where each channel ranked it,
    how it was lit, its fused and reranked scores, and the packing decision."""
    channels = {
        name: {
            "rank": ch["ids"].index(unit_id) + 1,
            "score": ch["scores"][ch["ids"].index(unit_id)],
        }
        for name, ch in trace["channels"].items()
        if unit_id in ch["ids"]
    }
    fused = next((f for f in trace["fused"] if f["id"] == unit_id), None)
    rerank = next((r for r in trace["rerank"]["scores"] if r["id"] == unit_id), None)
    packing = trace["packing"]
    skipped = next((s for s in packing["skipped"] if s["id"] == unit_id), None)
    return {
        "id": unit_id,
        "channels": channels,
        "activation_path": activation_path(trace, unit_id),
        "fused": fused,
        "rerank": rerank,
        "tokens": packing["tokens"].get(unit_id),
        "packed": unit_id in packing["packed"],
        "skipped": skipped,
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
