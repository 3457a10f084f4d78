"""The engine's words are listed once (core/vocabulary.py), and every part that
needs a per-word setting or choice has one for each word."""

from __future__ import annotations

import core
from core.cli import build_parser
from core.config import DEFAULTS
from core.recall import linkgraph
from core.recall.settings import activation_params
from core.types import LinkKind, Network
from core.vocabulary import CHANNEL_TITLES, CHANNELS, LEVELS, LINK_KINDS, NETWORKS


def test_the_words_are_the_enums_and_the_public_face_exports_them():
    assert tuple(n.value for n in Network) == NETWORKS
    assert tuple(k.value for k in LinkKind) == LINK_KINDS
    assert set(CHANNEL_TITLES) == set(CHANNELS) and list(LEVELS) == ["low", "mid", "high"]
    for name in ("NETWORKS", "LINK_KINDS", "CHANNELS", "CHANNEL_TITLES", "LEVELS"):
        assert getattr(core, name) is getattr(core.vocabulary, name)


def test_every_link_kind_and_channel_has_its_settings():
    # The graph's μ once drifted from recall's: both read activation_params now.
    assert set(activation_params()["mu"]) == set(LINK_KINDS)
    assert {f"recall.mu_{kind}" for kind in LINK_KINDS} <= set(DEFAULTS)
    assert {f"recall.weight_{name}" for name in CHANNELS} <= set(DEFAULTS)
    assert sorted(linkgraph.KINDS) == sorted(LINK_KINDS)


def test_the_cli_offers_the_vocabulary():
    parser, sub = build_parser()
    recall = sub.choices["recall"]
    choices = {a.dest: a.choices for a in recall._actions if a.choices}
    assert list(choices["channel"]) == list(CHANNELS)
    assert list(choices["level"]) == list(LEVELS)
    assert list(choices["network"]) == list(NETWORKS)
