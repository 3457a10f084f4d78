"""Bank configuration: every tunable with its default, in one place.

A bank stores only the values a person changed; `bank_config` lays them over
these defaults, so the settings pane can show each default beside its value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

DEFAULTS: dict[str, Any] = {
    # retain
    "retain.opinion_alpha": 0.1,
    "retain.entity_name_weight": 0.6,
    "retain.entity_cooccurrence_weight": 0.25,
    "retain.entity_time_weight": 0.15,
    "retain.entity_merge_threshold": 0.75,
    "retain.entity_links_per_entity": 20,
    "retain.temporal_window_hours": 72.0,
    "retain.temporal_decay_hours": 24.0,
    "retain.semantic_top_k": 5,
    "retain.semantic_threshold": 0.7,
    "retain.duplicate_similarity": 0.95,
    "retain.duplicate_window_hours": 24.0,
    # recall
    "recall.rrf_k": 60,
    "recall.activation_decay": 0.8,
    "recall.activation_threshold": 0.05,
    # Spreading is a process (see recall/activation.py): each step lights at
    # most `activation_step_budget` new nodes, strongest first, so the node
    # budget fills over several steps rather than in the first.
    "recall.activation_steps": 8,
    "recall.activation_step_budget": 40,
    "recall.seed_similarity_floor": 0.3,
    "recall.mu_causal": 1.0,
    "recall.mu_entity": 0.9,
    "recall.mu_temporal": 0.8,
    "recall.mu_semantic": 0.6,
    # How many of the best semantic and lexical hits, fused (those above the
    # similarity floor), seed the graph.
    "recall.activation_seeds": 10,
    # Lit nodes at most, seeds included.
    "recall.activation_node_budget": 200,
    # Whether the graph channel's ranking lists its seeds too (they are
    # semantic or lexical hits already; listing them again would vote for them twice).
    "recall.graph_include_seeds": False,
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
    # Packing: one observation (an entity profile) takes at most this share of
    # a budget; a longer one is skipped so it cannot crowd the facts out.
    "recall.observation_max_share": 0.15,
    # Channel weights in fusion (RRF numerators).
    "recall.weight_semantic": 1.0,
    "recall.weight_lexical": 1.0,
    # The graph is an indirect signal (neighbours of the best hits): on the
    # LoCoMo development split a full vote crowded direct hits out of small
    # budgets; a quarter vote lifted multi-hop and temporal questions.
    "recall.weight_graph": 0.25,
    "recall.weight_temporal": 1.0,
    # Fused scores of facts spoken by a speaker the query names are multiplied
    # by 1 + this (0 = off); see core/recall/focus.py.
    "recall.speaker_focus": 1.0,
    # Embed the query without the speaker names it holds (they say who, not what).
    "recall.embed_without_speakers": True,
    # retain (entity resolution, links, opinions, observations)
    # A candidate entity is scored only when its name is at least this similar.
    "retain.entity_candidate_floor": 0.7,
    # Time proximity exp(-gap / scale): a month apart scores 1/e.
    "retain.entity_time_scale_days": 30.0,
    # Temporal links kept per new unit (the nearest in time within the window).
    "retain.temporal_links_per_unit": 10,
    # An opinion is related to a fact above this cosine, or above the lower one
    # when they also share an entity other than the speakers.
    "retain.opinion_related_similarity": 0.7,
    "retain.opinion_entity_similarity": 0.5,
    # …or above this one when the fact is spoken by the opinion's own holder.
    "retain.opinion_holder_similarity": 0.6,
    # Opinions assessed per new fact (each is a model call in llm mode).
    "retain.opinion_candidates": 3,
    # Facts quoted in a rules-mode observation profile.
    "retain.observation_max_facts": 12,
}


def bank_config(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The defaults with `overrides` laid over them; an unknown key or a value of
    the wrong kind raises (KeyError, ValueError, TypeError)."""
    config = dict(DEFAULTS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULTS:
            raise KeyError(f"unknown setting {key!r}")
        config[key] = setting_value(key, value)
    return config


def setting_value(key: str, value: Any) -> Any:
    """`value` as the kind of setting `key` is; ValueError/TypeError if it is not one."""
    kind = type(DEFAULTS[key])
    if kind is bool:
        # bool("false") is True: only real truth values (or 0/1, "true"/"false") pass.
        if isinstance(value, bool | int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise TypeError(f"setting {key!r} must be true or false, got {value!r}")
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError(f"setting {key!r} must be a number, got {value!r}")
        number = kind(value)
        if not math.isfinite(number):
            raise ValueError(f"setting {key!r} must be a finite number, got {value!r}")
        return number
    if not isinstance(value, str):
        raise TypeError(f"setting {key!r} must be text, got {value!r}")
    return value


def stored_config(overrides: Any) -> tuple[dict[str, Any], list[str]]:
    """A stored bank's config, never failing: what it holds that this version does not
    know (a newer version's key, a damaged value) is set aside and named in the
    warnings, so the profile can still be read, and fixed by saving it again."""
    warnings: list[str] = []
    if overrides is None:
        return dict(DEFAULTS), warnings
    if not isinstance(overrides, Mapping):
        return dict(DEFAULTS), [f"the stored config is not a table of settings ({overrides!r})"]
    config = dict(DEFAULTS)
    for key, value in overrides.items():
        if key not in DEFAULTS:
            warnings.append(f"unknown setting {key!r} ignored (saving the profile drops it)")
            continue
        try:
            config[key] = setting_value(key, value)
        except (TypeError, ValueError) as error:
            warnings.append(f"{error}; the default {DEFAULTS[key]!r} is used")
    return config, warnings
