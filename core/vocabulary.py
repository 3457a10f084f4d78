"""The engine's words, each listed once: the four networks, the link kinds,
recall's channels and its budget levels, the kinds of operation the journal records.

The CLI, the server, recall and the studio all read these (through `core`'s
public face), so a new channel or link kind is added here and nowhere else.
Import-light: `engram --help` builds its choices from this module.
"""

from __future__ import annotations

from core.types import LinkKind, Network

# In the order the studio lists and colours them.
NETWORKS: tuple[str, ...] = tuple(network.value for network in Network)
LINK_KINDS: tuple[str, ...] = tuple(kind.value for kind in LinkKind)

# Recall's four channels, in the order fusion lists them, with a title for people.
CHANNEL_TITLES: dict[str, str] = {
    "semantic": "Semantic (vectors)",
    "lexical": "Lexical (BM25)",
    "graph": "Graph (activation)",
    "temporal": "Temporal",
}
CHANNELS: tuple[str, ...] = tuple(CHANNEL_TITLES)

# What the activity journal calls each kind of operation (its filters' choices).
ACTIVITY_KINDS: tuple[str, ...] = ("recall", "retain", "reflect", "curate")

# Candidates each channel returns, by budget level.
LEVELS: dict[str, int] = {"low": 20, "mid": 50, "high": 150}

# Why a spreading activation stopped (the trace's `stopped` code), in words for people.
STOP_REASONS: dict[str, str] = {
    "node_budget": "the node budget was reached",
    "steps": "the wave limit was reached",
    "threshold": "no link carried enough energy further",
    "exhausted": "no links left to follow",
    "no_seeds": "no seeds",
}
