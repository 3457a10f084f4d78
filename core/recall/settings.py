"""Recall's tunables: the bank's `recall.*` config laid over recall's own defaults.

`core/config.py` holds the keys a person can set per bank (RRF k, activation
δ, threshold, steps, seed floor, μ per link kind). The rest live here with
their defaults until they are promoted to bank settings; callers (benchmarks,
the studio's sliders) can override any key for one recall.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.config import DEFAULTS as BANK_DEFAULTS

# Candidates each channel returns, by budget level.
LEVELS: dict[str, int] = {"low": 20, "mid": 50, "high": 150}

CHANNELS = ("semantic", "lexical", "graph", "temporal")

RECALL_DEFAULTS: dict[str, Any] = {
    **{k: v for k, v in BANK_DEFAULTS.items() if k.startswith("recall.")},
    # How many of the best semantic hits (above the similarity floor) seed the graph.
    "recall.activation_seeds": 5,
    # Lit nodes at most, seeds included.
    "recall.activation_node_budget": 200,
    # Whether the graph channel's ranking lists its seeds too (they are
    # semantic hits already; listing them again would vote for them twice).
    "recall.graph_include_seeds": False,
    # The graph channel lists only units the semantic channel did not return.
    "recall.graph_beyond_semantic": False,
    # Entity links weighted by their entity's specificity (the fan effect).
    "recall.entity_fan": True,
    # Graph score = activation · ((1 − g) + g · similarity to the query).
    "recall.graph_relevance": 1.0,
    # A local cross-encoder folder; empty = the heuristic reranker.
    "recall.cross_encoder_path": "",
    # Heuristic reranker weights (see rerank.HeuristicReranker).
    "recall.rerank_time_weight": 0.5,
    "recall.rerank_recency_weight": 0.05,
    "recall.rerank_half_life_days": 180.0,
    # Temporal channel: weight of query similarity against midpoint proximity.
    "recall.temporal_similarity_weight": 0.5,
    # Maximal marginal relevance after rerank: λ (0 = off) and how many of
    # the best candidates it reorders (see diversity.py).
    "recall.diversity": 0.0,
    "recall.diversity_candidates": 200,
    # Packing: within this many places, facts whose source turns are all
    # covered already move below facts that bring new ones (1 = off).
    "recall.source_diversity_window": 1,
    # Channel weights in fusion (RRF numerators).
    "recall.weight_semantic": 1.0,
    "recall.weight_lexical": 1.0,
    # The graph is an indirect signal (neighbours of the best hits): on the
    # LoCoMo development split a full vote crowded direct hits out of small
    # budgets; a quarter vote lifted multi-hop and temporal questions.
    "recall.weight_graph": 0.25,
    "recall.weight_temporal": 1.0,
}


def resolve(bank_config: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    settings = dict(RECALL_DEFAULTS)
    for key, value in bank_config.items():
        if key.startswith("recall."):
            settings[key] = value
    for key, value in (overrides or {}).items():
        if key not in RECALL_DEFAULTS:
            raise KeyError(f"unknown recall setting {key!r}")
        settings[key] = type(RECALL_DEFAULTS[key])(value)
    return settings


def mu(settings: Mapping[str, Any]) -> dict[str, float]:
    return {
        kind: float(settings[f"recall.mu_{kind}"])
        for kind in ("causal", "entity", "temporal", "semantic")
    }
