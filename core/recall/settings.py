"""Recall's tunables: the bank's `recall.*` config laid over recall's own defaults.

Every key, its type, range and default lives in the spec, `core/config.py` (a
person can set each per bank); callers (benchmarks, the studio's sliders) can
override any key for one recall, checked by the same spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.config import DEFAULTS as BANK_DEFAULTS
from core.config import SettingError, setting_value
from core.vocabulary import CHANNELS, LEVELS, LINK_KINDS

__all__ = ["CHANNELS", "LEVELS", "activation_params", "mu", "resolve"]

RECALL_DEFAULTS: dict[str, Any] = {
    k: v for k, v in BANK_DEFAULTS.items() if k.startswith("recall.")
}


def resolve(bank_config: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    settings = dict(RECALL_DEFAULTS)
    for key, value in bank_config.items():
        if key.startswith("recall."):
            settings[key] = value
    for key, value in (overrides or {}).items():
        if key not in RECALL_DEFAULTS:
            raise SettingError(f"unknown recall setting {key!r}")
        settings[key] = setting_value(key, value)  # the spec's check: "false" is False
    return settings


def mu(settings: Mapping[str, Any]) -> dict[str, float]:
    return {kind: float(settings[f"recall.mu_{kind}"]) for kind in LINK_KINDS}


def activation_params(settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keyword arguments of `spread` from recall settings (a bank's config,
    a trace's `settings`, or nothing: the defaults), so recall and the studio
    read one source."""
    cfg = resolve({}, None)
    cfg.update({k: v for k, v in (settings or {}).items() if k in RECALL_DEFAULTS})
    return {
        "decay": float(cfg["recall.activation_decay"]),
        "mu": mu(cfg),
        "threshold": float(cfg["recall.activation_threshold"]),
        "max_steps": int(cfg["recall.activation_steps"]),
        "node_budget": int(cfg["recall.activation_node_budget"]),
        "step_budget": int(cfg["recall.activation_step_budget"]),
    }
