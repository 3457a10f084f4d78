"""The configuration spec: every setting's type, range, default and help, once.

Two kinds of settings, each a pydantic model:

- a bank's tunables (`RetainSettings`, `RecallSettings`), keyed `retain.*`
  and `recall.*`; a bank stores only the values a person changed, and
  `bank_config` lays them over the defaults;
- the engine's (`EngineFields`): the language model every bank shares, kept in
  `settings.json` (core/settings.py).

The settings pane, `engram config` and the HTTP API read `SPEC` (one `Setting`
per key) and validate through `setting_value`, so a value is accepted or refused
with the same words everywhere. Lax where text must be read (the CLI, a JSON
body): "false" is False, "60" is 60; never lossy: 60.7 is not an int.

Imports pydantic: `engram --help` and `engram banks` must not load this module
(core/settings.py and core/vocabulary.py stay light).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from annotated_types import Ge, Gt, Le
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from core.types import InvalidInputError


class SettingError(InvalidInputError, ValueError):
    """A setting refused: an unknown key, or a value of the wrong type or out of range.

    A ValueError too, so callers that caught the old KeyError/ValueError/TypeError
    keep working."""


def _not_a_truth_value(value: Any) -> Any:
    # pydantic reads True as 1 for an int; a switch is never a count.
    if isinstance(value, bool):
        raise ValueError("expected a number, got a truth value")
    return value


Count = Annotated[int, BeforeValidator(_not_a_truth_value)]
Number = Annotated[float, BeforeValidator(_not_a_truth_value)]


def _field(default: Any, help: str, **bounds: float) -> Any:
    return Field(default, description=help, **bounds)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class RetainSettings(_Section):
    """`retain.*`: how facts become units, links, entities and opinions."""

    opinion_alpha: Number = _field(
        0.1, "How far one piece of evidence moves an opinion's confidence (α).", ge=0, le=1
    )
    entity_name_weight: Number = _field(
        0.6, "Weight of name similarity when resolving entities.", ge=0, le=1
    )
    entity_cooccurrence_weight: Number = _field(
        0.25, "Weight of shared neighbours when resolving entities.", ge=0, le=1
    )
    entity_time_weight: Number = _field(
        0.15, "Weight of time proximity when resolving entities.", ge=0, le=1
    )
    entity_merge_threshold: Number = _field(
        0.75, "Score above which two names are one entity.", ge=0, le=1
    )
    entity_links_per_entity: Count = _field(
        20, "Entity links laid per entity (most recent first).", ge=0
    )
    temporal_window_hours: Number = _field(
        72.0, "Facts closer than this in time get a temporal link.", ge=0
    )
    temporal_decay_hours: Number = _field(
        24.0, "How fast a temporal link's weight decays with the gap (hours to 1/e).", gt=0
    )
    semantic_top_k: Count = _field(5, "Semantic links laid per new fact.", ge=0)
    semantic_threshold: Number = _field(
        0.7, "Cosine similarity a semantic link needs.", ge=-1, le=1
    )
    # Above 1 no cosine reaches it: merging is off (the crash tests use 1.01).
    duplicate_similarity: Number = _field(
        0.95, "Cosine above which a new fact merges into an old one (above 1: never).", ge=0, le=2
    )
    duplicate_window_hours: Number = _field(
        24.0, "Time window for merging near-identical facts.", ge=0
    )
    entity_candidate_floor: Number = _field(
        0.7, "Name similarity a candidate entity needs to be scored at all.", ge=0, le=1
    )
    entity_time_scale_days: Number = _field(
        30.0,
        "Time proximity exp(−gap / scale) when resolving entities: a scale apart is 1/e.",
        gt=0,
    )
    temporal_links_per_unit: Count = _field(
        10, "Temporal links kept per new fact (the nearest in time within the window).", ge=0
    )
    opinion_related_similarity: Number = _field(
        0.7, "Cosine above which a fact bears on an opinion.", ge=-1, le=1
    )
    opinion_entity_similarity: Number = _field(
        0.5, "…or above this when they also share an entity other than the speakers.", ge=-1, le=1
    )
    opinion_holder_similarity: Number = _field(
        0.6, "…or above this when the fact is spoken by the opinion's own holder.", ge=-1, le=1
    )
    opinion_candidates: Count = _field(
        3, "Opinions assessed per new fact (each is a model call in llm mode).", ge=0
    )
    observation_max_facts: Count = _field(
        12, "Facts quoted in a rules-mode observation profile.", ge=1
    )


class RecallSettings(_Section):
    """`recall.*`: the four channels, fusion, reranking and packing."""

    rrf_k: Count = _field(60, "Reciprocal Rank Fusion constant k: 1 / (k + rank).", ge=0)
    activation_decay: Number = _field(0.8, "Spreading activation decay δ per step.", ge=0, le=1)
    activation_threshold: Number = _field(
        0.05, "Activation below which spreading stops.", ge=0, le=1
    )
    # Spreading is a process (see recall/activation.py): each step lights at
    # most `activation_step_budget` new nodes, strongest first, so the node
    # budget fills over several steps rather than in the first.
    activation_steps: Count = _field(8, "Maximum spreading activation steps.", ge=0)
    activation_step_budget: Count = _field(
        40, "New nodes one spreading step may light (0: no limit).", ge=0
    )
    seed_similarity_floor: Number = _field(
        0.3, "Similarity a semantic hit needs to seed activation.", ge=-1, le=1
    )
    mu_causal: Number = _field(1.0, "μ: how much a causal link passes on.", ge=0, le=2)
    mu_entity: Number = _field(0.9, "μ: how much an entity link passes on.", ge=0, le=2)
    mu_temporal: Number = _field(0.8, "μ: how much a temporal link passes on.", ge=0, le=2)
    mu_semantic: Number = _field(0.6, "μ: how much a semantic link passes on.", ge=0, le=2)
    activation_seeds: Count = _field(
        10, "Best semantic and lexical hits, fused, that seed the graph.", ge=0
    )
    activation_node_budget: Count = _field(
        200, "Nodes spreading may light at most, seeds included.", ge=1
    )
    # The seeds are semantic or lexical hits already: listing them again
    # would vote for them twice.
    graph_include_seeds: bool = _field(
        False, "Whether the graph channel's ranking lists its seeds too."
    )
    entity_fan: bool = _field(
        True, "Weigh entity links by how specific their entity is (the fan effect)."
    )
    graph_relevance: Number = _field(
        1.0,
        "g in graph score = activation · ((1 − g) + g · similarity to the query).",
        ge=0,
        le=1,
    )
    cross_encoder_path: str = _field(
        "", "A local cross-encoder folder; empty: the heuristic reranker."
    )
    rerank_time_weight: Number = _field(
        0.5, "Heuristic reranker: weight of the query's time window.", ge=0
    )
    rerank_recency_weight: Number = _field(0.05, "Heuristic reranker: weight of recency.", ge=0)
    rerank_half_life_days: Number = _field(
        180.0, "Heuristic reranker: days after which recency counts half.", gt=0
    )
    temporal_similarity_weight: Number = _field(
        0.5, "Temporal channel: weight of query similarity against time proximity.", ge=0, le=1
    )
    diversity: Number = _field(
        0.0, "Maximal marginal relevance after rerank: λ (0: off).", ge=0, le=1
    )
    diversity_candidates: Count = _field(
        200, "How many of the best candidates diversity reorders.", ge=1
    )
    source_diversity_window: Count = _field(
        1,
        "Packing: facts whose source turns are covered already move down within "
        "this many places (1: off).",
        ge=1,
    )
    observation_max_share: Number = _field(
        0.15, "Packing: the share of a budget one entity profile may take.", ge=0, le=1
    )
    weight_semantic: Number = _field(1.0, "Fusion weight of the semantic channel.", ge=0)
    weight_lexical: Number = _field(1.0, "Fusion weight of the lexical (BM25) channel.", ge=0)
    # The graph is an indirect signal (neighbours of the best hits): on the
    # LoCoMo development split a full vote crowded direct hits out of small
    # budgets; a quarter vote lifted multi-hop and temporal questions.
    weight_graph: Number = _field(0.25, "Fusion weight of the graph channel.", ge=0)
    weight_temporal: Number = _field(1.0, "Fusion weight of the temporal channel.", ge=0)
    speaker_focus: Number = _field(
        1.0, "Facts spoken by a speaker the query names score × (1 + this) (0: off).", ge=0
    )
    embed_without_speakers: bool = _field(
        True, "Embed the query without the speaker names it holds (they say who, not what)."
    )


class JournalSettings(_Section):
    """`journal.*`: the activity journal (who did what; every recall with its trace)."""

    record: bool = _field(
        True, "Journal every operation: who asked, how it went, and each recall's trace."
    )
    keep_days: Number = _field(30.0, "Days journal entries are kept (0: no age limit).", ge=0)
    keep_mb: Number = _field(
        100.0, "Megabytes the journal's entries may take; the oldest go first (0: no limit).", ge=0
    )


class EngineFields(_Section):
    """The engine's settings (settings.json): the language model every bank shares."""

    ollama_host: str = _field("http://127.0.0.1:11434", "The Ollama server's address.")
    ollama_model: str = _field(
        "", "The Ollama model to use; empty: no language model, offline rules everywhere."
    )
    ollama_timeout: Number = _field(
        60.0,
        "Seconds the model may stay silent before a call fails (replies stream, so a "
        "slow model that keeps writing is never cut).",
        gt=0,
        le=86400,
    )
    llm_provider: str = Field(
        "ollama",
        pattern="^(ollama|openai)$",
        description="How to speak to the server at ollama_host: ollama (its own API) or openai (an "
        "OpenAI-compatible server: llama.cpp's llama-server, LM Studio, vLLM, Ollama's /v1).",
    )


BANK_SECTIONS: dict[str, type[_Section]] = {
    "retain": RetainSettings,
    "recall": RecallSettings,
    "journal": JournalSettings,
}
# Names a bank once stored that no version reads any more: dropped with a note.
RETIRED: dict[str, str] = {
    "reranker_model_path": "the cross-encoder is set per bank (recall.cross_encoder_path)",
}


@dataclass(frozen=True)
class Setting:
    """One key of the spec, as the pane, the CLI and the API show it."""

    key: str  # "recall.rrf_k"; an engine setting has no section: "ollama_timeout"
    kind: type  # bool, int, float or str
    default: Any
    help: str
    minimum: float | None = None  # inclusive unless `exclusive_minimum`
    maximum: float | None = None
    exclusive_minimum: bool = False

    @property
    def type_name(self) -> str:
        return {bool: "true/false", int: "integer", float: "number", str: "text"}[self.kind]

    @property
    def range_text(self) -> str:
        """'0 ≤ x ≤ 1', 'x > 0', … or '' when any value of the kind is fine."""
        low = (
            ""
            if self.minimum is None
            else f"{_num(self.minimum)} {'<' if self.exclusive_minimum else '≤'} "
        )
        high = "" if self.maximum is None else f" ≤ {_num(self.maximum)}"
        if not low and not high:
            return ""
        if low and not high:
            return f"x {'>' if self.exclusive_minimum else '≥'} {_num(self.minimum)}"
        return f"{low}x{high}"

    def describe(self) -> str:
        """The help with the kind, range and default: a tooltip or `engram config keys`."""
        limits = f", {self.range_text}" if self.range_text else ""
        return f"{self.help} ({self.type_name}{limits}; default {self.default!r})"


def spec_table() -> dict[str, dict[str, Any]]:
    """The bank settings' spec as JSON: `engram config keys --json` and the API."""
    return {
        key: {
            "type": s.type_name,
            "default": s.default,
            "minimum": s.minimum,
            "maximum": s.maximum,
            "exclusive_minimum": s.exclusive_minimum,
            "help": s.help,
        }
        for key, s in SPEC.items()
    }


def _num(value: float) -> str:
    return f"{value:g}"


def _settings_of(model: type[_Section], prefix: str) -> dict[str, Setting]:
    out: dict[str, Setting] = {}
    for name, field in model.model_fields.items():
        bounds = {type(m): m for m in field.metadata}
        kind = field.annotation
        kind = getattr(kind, "__origin__", kind)  # Annotated[int, …] -> int
        low = bounds.get(Ge) or bounds.get(Gt)
        out[prefix + name] = Setting(
            key=prefix + name,
            kind=kind,
            default=field.default,
            help=field.description or "",
            minimum=None if low is None else getattr(low, "ge", getattr(low, "gt", None)),
            maximum=None if Le not in bounds else bounds[Le].le,
            exclusive_minimum=Gt in bounds,
        )
    return out


SPEC: dict[str, Setting] = {
    key: setting
    for section, model in BANK_SECTIONS.items()
    for key, setting in _settings_of(model, section + ".").items()
}
ENGINE_SPEC: dict[str, Setting] = _settings_of(EngineFields, "")
DEFAULTS: dict[str, Any] = {key: setting.default for key, setting in SPEC.items()}


@cache
def _adapter(model: type[_Section], name: str) -> TypeAdapter:
    field = model.model_fields[name]
    return TypeAdapter(Annotated[field.annotation, field], config=ConfigDict(allow_inf_nan=False))


def _model_and_name(key: str) -> tuple[type[_Section], str]:
    section, _, name = key.partition(".")
    model = BANK_SECTIONS.get(section) if name else EngineFields
    name = name or key
    if model is None or name not in model.model_fields:
        raise SettingError(f"unknown setting {key!r}{_suggestion(key)}")
    return model, name


def _suggestion(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(key, [*SPEC, *ENGINE_SPEC], n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def setting_value(key: str, value: Any) -> Any:
    """`value` as setting `key` takes it; SettingError naming the key if it cannot be."""
    model, name = _model_and_name(key)
    try:
        checked = _adapter(model, name).validate_python(value)
    except ValidationError as error:
        problem = error.errors()[0]["msg"].replace("Value error, ", "")
        problem = problem.replace("Input should be", "must be")
        raise SettingError(f"setting {key!r} = {value!r}: {problem}") from None
    if isinstance(checked, float) and not math.isfinite(checked):  # belt and braces
        raise SettingError(f"setting {key!r} must be a finite number, got {value!r}")
    return checked


def parse_setting(key: str, text: str) -> Any:
    """A value typed as text (the CLI, a table cell): "false", "60", "0.5", a path."""
    setting = SPEC.get(key) or ENGINE_SPEC.get(key)
    if setting is None:
        raise SettingError(f"unknown setting {key!r}{_suggestion(key)}")
    return setting_value(key, text if setting.kind is str else text.strip())


def bank_config(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The defaults with `overrides` laid over them; SettingError for an unknown
    key or a bad value, naming the key."""
    config = dict(DEFAULTS)
    for key, value in (overrides or {}).items():
        if key not in SPEC:
            raise SettingError(f"unknown setting {key!r}{_suggestion(key)}")
        config[key] = setting_value(key, value)
    return config


def checked_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Settings to save, each as its key takes it (None: back to the default), so
    what a JSON body or a command line said ("false", "60") is stored typed."""
    if not isinstance(changes, Mapping):
        raise SettingError(
            f"config must be a table of settings (key: value), not {type(changes).__name__}"
        )
    return {
        key: None if value is None else bank_config({key: value})[key]
        for key, value in changes.items()
    }


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
        if key not in SPEC:
            why = RETIRED.get(key)
            reason = f"retired: {why}" if why else "saving the profile drops it"
            warnings.append(f"unknown setting {key!r} ignored ({reason})")
            continue
        try:
            config[key] = setting_value(key, value)
        except SettingError as error:
            warnings.append(f"{error}; the default {DEFAULTS[key]!r} is used")
    return config, warnings


def engine_values(stored: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Engine settings read from settings.json or the environment: the valid ones,
    and a note for each key that was dropped (retired, unknown or damaged)."""
    values: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in stored.items():
        if key in RETIRED:
            notes.append(f"{key!r} in settings.json is no longer used: {RETIRED[key]}")
        elif key not in ENGINE_SPEC:
            notes.append(f"unknown engine setting {key!r} in settings.json ignored")
        else:
            try:
                values[key] = setting_value(key, value)
            except SettingError as error:
                notes.append(f"{error}; the default {ENGINE_SPEC[key].default!r} is used")
    return values, notes
