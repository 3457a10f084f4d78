"""LLM-mode extraction: one structured call per exchange -> 2–5 narrative facts.

The model is asked with a JSON schema as Ollama's `format`, at low
temperature, with a system prompt that explains the three fact networks, what
a self-contained narrative fact is, how to resolve relative time against the
session date and whose first-person statements are the agent's experience.
The prompt's worked example is passed as `examples`, so a reply that copies it
is rejected and asked again (core.providers.llm does the asking, parsing,
repair and bounded retries).

`validate` is strict about what would corrupt the bank and lenient about what
can be fixed: a fact without text or with a network outside world |
experience | opinion is dropped; unknown turn ids are dropped (none left ->
all the exchange's turns); causal targets out of range are dropped; dates that
do not parse become null; confidence is clamped and kept for opinions only.
No usable fact at all is a bad answer, which costs one attempt. When every
attempt fails, `extract` raises ExtractionError and the caller writes nothing
of that exchange.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any

from core.providers.llm import LanguageModel, LanguageModelError
from core.retain.extract import (
    CAUSAL_RELATIONS,
    ENTITY_TYPES,
    CausalRelation,
    EntityMention,
    Exchange,
    ExtractedFact,
    ExtractionError,
)
from core.retain.facts import MAX_UNIT_CHARS
from core.retain.llm_checks import CheckedFacts, check_facts
from core.retain.networks import BankAgent, network_guide
from core.retain.statements import split_turn
from core.text import clean_name, clean_text
from core.timeparse import naive_utc, resolve
from core.types import ExtractionMode, Network

__all__ = [
    "EXAMPLE_TEXTS",
    "FACT_SCHEMA",
    "MAX_FACTS",
    "MAX_TEMPERATURE",
    "LlmExtractor",
    "build_prompt",
    "build_system_prompt",
    "validate_facts",
]

log = logging.getLogger(__name__)

MAX_FACTS = 5
# Extraction wants the most likely reading, not variety: a hotter configured
# model is asked through a copy clamped to this.
MAX_TEMPERATURE = 0.2
# A model's entity name longer than an entity name may be (curate.entities.MAX_NAME).
MAX_ENTITY_NAME = 200
# A causal relation the model gave without a strength.
DEFAULT_STRENGTH = 0.5
# An opinion the model gave without a confidence.
DEFAULT_CONFIDENCE = 0.5
# How many of the bank's known names (those that occur in the exchange) the prompt lists.
MAX_KNOWN_IN_PROMPT = 30

_NETWORKS = {n.value: n for n in (Network.WORLD, Network.EXPERIENCE, Network.OPINION)}

FACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "minItems": 0,  # small talk has no facts (see validate_facts)
            "maxItems": MAX_FACTS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "network": {"type": "string", "enum": list(_NETWORKS)},
                    "occurred_start": {"type": ["string", "null"]},
                    "occurred_end": {"type": ["string", "null"]},
                    "entities": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "type": {"type": "string", "enum": list(ENTITY_TYPES)},
                            },
                            "required": ["name", "type"],
                        },
                    },
                    "causal": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "target_index": {"type": "integer", "minimum": 0},
                                "relation": {"type": "string", "enum": list(CAUSAL_RELATIONS)},
                                "strength": {"type": "number", "minimum": 0, "maximum": 1},
                            },
                            "required": ["target_index", "relation", "strength"],
                        },
                    },
                    "source_ids": {"type": "array", "items": {"type": "string"}},
                    "confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                },
                "required": [
                    "text",
                    "network",
                    "occurred_start",
                    "occurred_end",
                    "entities",
                    "causal",
                    "source_ids",
                    "confidence",
                ],
            },
        }
    },
    "required": ["facts"],
}

# ---- the prompt ------------------------------------------------------------------

# Deliberately unlike any real conversation, so a copy of it is recognisably a copy.
_EXAMPLE_TURNS = (
    "Session date: 2021-03-14 (Sunday). The agent is Sam.\n"
    "[x1] Priya: My neighbour moved to Lisbon last week, so I adopted her greyhound Biscuit.\n"
    "[x2] Sam: I'm sure greyhounds make gentle pets. I told Priya they need two walks a day."
)
_EXAMPLE_FACTS: list[dict[str, Any]] = [
    {
        "text": "Priya's neighbour moved to Lisbon in the week of 1 March 2021.",
        "network": "world",
        "occurred_start": "2021-03-01",
        "occurred_end": "2021-03-08",
        "entities": [{"name": "Priya", "type": "person"}, {"name": "Lisbon", "type": "place"}],
        "causal": [{"target_index": 1, "relation": "causes", "strength": 0.9}],
        "source_ids": ["x1"],
        "confidence": None,
    },
    {
        "text": "Priya adopted her neighbour's greyhound Biscuit in March 2021 because the "
        "neighbour moved to Lisbon.",
        "network": "world",
        "occurred_start": "2021-03-01",
        "occurred_end": "2021-03-15",
        "entities": [{"name": "Priya", "type": "person"}, {"name": "Biscuit", "type": "other"}],
        "causal": [{"target_index": 0, "relation": "caused_by", "strength": 0.9}],
        "source_ids": ["x1"],
        "confidence": None,
    },
    {
        "text": "I told Priya on 14 March 2021 that greyhounds need two walks a day.",
        "network": "experience",
        "occurred_start": "2021-03-14",
        "occurred_end": "2021-03-15",
        "entities": [{"name": "Sam", "type": "person"}, {"name": "Priya", "type": "person"}],
        "causal": [],
        "source_ids": ["x2"],
        "confidence": None,
    },
    {
        "text": "I am sure that greyhounds make gentle pets.",
        "network": "opinion",
        "occurred_start": None,
        "occurred_end": None,
        "entities": [{"name": "Sam", "type": "person"}],
        "causal": [],
        "source_ids": ["x2"],
        "confidence": 0.8,
    },
]
# A reply that copies the example back, its facts or its turns (a 135M model
# gave the example conversation as a fact), is a copy.
_EXAMPLE_TURN_TEXTS = tuple(
    line.split("] ", 1)[1] for line in _EXAMPLE_TURNS.splitlines() if line.startswith("[")
)
EXAMPLE_TEXTS: tuple[str, ...] = (
    *(f["text"] for f in _EXAMPLE_FACTS),
    *_EXAMPLE_TURN_TEXTS,
    *(text.split(": ", 1)[1] for text in _EXAMPLE_TURN_TEXTS),
)


def build_system_prompt(agent_name: str) -> str:
    agent = agent_name.strip()
    if agent:
        who = (
            f'The agent whose memory this is is "{agent}". In {agent}\'s own turns "I" means '
            f"{agent}: what {agent} did, said, saw or felt is experience, and only what "
            f"{agent} believes is opinion."
        )
    else:
        who = "None of the speakers is the agent whose memory this is."
    example = json.dumps({"facts": _EXAMPLE_FACTS}, ensure_ascii=False)
    return (
        "You turn a conversation into facts for an AI agent's long-term memory.\n"
        f"{who}\n\n"
        "Write 2 to 5 facts for the exchange (fewer only when it says almost nothing; none, "
        "[], only when it is nothing but greetings, thanks and small talk). Each fact "
        "is one or two sentences that stand on their own, read without the conversation: who "
        "did or said what, when, where and why. Use names instead of I, you, he, she or they. "
        "Keep the specifics word for word: names, numbers, titles, places, image descriptions.\n\n"
        "network, one of:\n"
        f"{network_guide(BankAgent(agent))}\n"
        "Never use observation: observations are written later, not extracted.\n\n"
        "Time: resolve relative expressions (yesterday, last week, next month, in June) against "
        "the session date given with the exchange. occurred_start and occurred_end are ISO "
        "dates (YYYY-MM-DD), the end exclusive: one day D is D to the day after D. Use null "
        "when the fact has no time of its own.\n"
        "entities: every person, organisation, place, product or concept named in the fact, "
        f"with its type ({', '.join(ENTITY_TYPES)}).\n"
        "causal: when one of your facts causes, is caused by, enables or prevents another of "
        "your facts, give target_index (0-based position in your list), relation "
        f"({', '.join(CAUSAL_RELATIONS)}) and strength 0 to 1; otherwise [].\n"
        "source_ids: the ids in brackets of the turns the fact comes from.\n\n"
        "Example (do not copy it; it is not part of the conversation):\n"
        f"{_EXAMPLE_TURNS}\n"
        f"{example}\n\n"
        "Answer with the JSON object only."
    )


def _when(dt: datetime) -> str:
    text = f"{dt:%Y-%m-%d} ({dt:%A})"
    return text if (dt.hour, dt.minute) == (0, 0) else f"{text}, {dt:%H:%M}"


def build_prompt(exchange: Exchange, agent_name: str, known_entities: Sequence[str] = ()) -> str:
    """The user message: the session date, the agent, known names and the turns with ids."""
    lines: list[str] = []
    when = exchange.when
    lines.append(f"Session date: {_when(when)}." if when else "Session date: unknown.")
    if agent_name.strip():
        lines.append(f"The agent is {agent_name.strip()}.")
    text = " ".join(t.text for t in exchange.turns).casefold()
    known = [n for n in known_entities if n.strip() and n.casefold() in text]
    if known:
        lines.append("Known names: " + ", ".join(known[:MAX_KNOWN_IN_PROMPT]) + ".")
    lines.append("")
    dates = {t.timestamp for t in exchange.turns}
    for turn in exchange.turns:
        # Turns of one exchange usually share the session time; say it per turn when not.
        stamp = f" ({_when(turn.timestamp)})" if len(dates) > 1 and turn.timestamp else ""
        lines.append(f"[{turn.id}]{stamp} {turn.speaker}: {turn.text.strip()}")
    return "\n".join(lines)


# ---- validation ------------------------------------------------------------------

_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _parse_time(value: Any, reference: datetime | None) -> tuple[datetime, datetime, str] | None:
    """(start, end, kind): an ISO date is a whole day ("date"), an ISO datetime an instant
    ("instant"), anything else a phrase timeparse resolves against the session ("phrase")."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if _DATE_ONLY.match(text):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            return None
        start = datetime(day.year, day.month, day.day)
        return start, start + timedelta(days=1), "date"
    try:
        instant = naive_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    else:
        return instant, instant, "instant"
    if reference is None:
        return None
    interval = resolve(text, reference)
    if interval is None or interval.is_open:
        return None
    return interval.start, interval.end, "phrase"


def _occurred(
    raw_start: Any, raw_end: Any, reference: datetime | None
) -> tuple[datetime | None, datetime | None]:
    start = _parse_time(raw_start, reference)
    end = _parse_time(raw_end, reference)
    if start is None and end is None:
        return None, None
    if start is None or end is None:
        only = start or end
        assert only is not None
        return only[0], only[1]
    first = start[0]
    # The prompt asks for an exclusive ISO end ("2021-03-08" ends on the 7th), but a
    # single day given twice means that whole day, and a phrase means through it.
    last = end[0] if end[2] == "date" and end[0] > first else end[1]
    if last < first:
        first, last = min(start[0], end[0]), max(start[1], end[1])
    return first, last


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().rstrip("%")) / (100 if value.strip().endswith("%") else 1)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def _index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _entities(raw: Any) -> list[EntityMention]:
    if not isinstance(raw, list):
        return []
    out: list[EntityMention] = []
    seen: set[str] = set()
    for item in raw:
        if isinstance(item, str):
            name, kind = item, "other"
        elif isinstance(item, dict):
            name, kind = item.get("name"), item.get("type")
        else:
            continue
        if not isinstance(name, str):
            continue
        # A model's name may carry NUL, U+202E and the like: lists would lie about it.
        name = clean_name(name)[:MAX_ENTITY_NAME]
        if not name:
            continue
        kind = kind.strip().casefold() if isinstance(kind, str) else "other"
        if name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(EntityMention(name, kind if kind in ENTITY_TYPES else "other"))
    return out


def _relation(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    relation = re.sub(r"[\s-]+", "_", value.strip().casefold())
    return relation if relation in CAUSAL_RELATIONS else None


def _source_ids(raw: Any, exchange: Exchange) -> tuple[str, ...]:
    valid = exchange.turn_ids
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, str | int) else []
    wanted = {str(item).strip().strip("[]") for item in items if isinstance(item, str | int)}
    kept = tuple(tid for tid in valid if tid in wanted)
    return kept or valid


def _mentions_of_speakers(text: str, exchange: Exchange) -> list[EntityMention]:
    """The exchange's speakers the fact names: persons, even when the model forgot them."""
    out: list[EntityMention] = []
    for speaker in dict.fromkeys(t.speaker for t in exchange.turns):
        if re.search(rf"(?<!\w){re.escape(speaker)}(?!\w)", text, re.IGNORECASE):
            out.append(EntityMention(speaker, "person"))
    return out


def _memorable_statement(exchange: Exchange) -> str | None:
    """The first statement of the exchange worth a memory (not a greeting, thanks,
    filler or question), as rules mode would keep it; None for pure small talk."""
    names = frozenset(w.casefold() for t in exchange.turns for w in t.speaker.split())
    for turn in exchange.turns:
        statements = split_turn(turn.text, names).statements
        if statements:
            return statements[0].text
    return None


def validate_facts(value: Any, exchange: Exchange, model: str = "") -> list[ExtractedFact]:
    """The model's parsed answer as facts of `exchange`; ValueError when none is usable."""
    if isinstance(value, dict):
        items = value.get("facts")
        if items is None:
            raise KeyError("facts")
    else:
        items = value  # a bare list of facts
    if not isinstance(items, list):
        raise ValueError("'facts' must be a list")
    if not items:
        # "Nothing to keep" is a fair answer to small talk, and a lazy one to an
        # exchange that says something: the rules' own test of what is worth a
        # memory decides, so a model cannot drop a chunk silently.
        said = _memorable_statement(exchange)
        if said is None:
            return []
        raise ValueError(f"no facts, but the exchange states something: {said[:120]!r}")

    reference = exchange.when
    by_id = {t.id: t for t in exchange.turns}
    kept: list[tuple[int, dict[str, Any], Network, str]] = []
    for position, item in enumerate(items[: MAX_FACTS * 2]):
        if not isinstance(item, dict):
            continue
        text = item.get("text")
        network = item.get("network")
        if not isinstance(text, str) or not text.strip():
            continue
        text = " ".join(clean_text(text).split())
        if len(text) > MAX_UNIT_CHARS:
            # A fact is a sentence or two; this is a runaway answer, not memory.
            log.warning("dropped a %s-character fact from the model's answer", f"{len(text):,}")
            continue
        network = _NETWORKS.get(network.strip().casefold()) if isinstance(network, str) else None
        if network is None:
            continue
        kept.append((position, item, network, text))
        if len(kept) == MAX_FACTS:
            break
    if not kept:
        raise ValueError(
            "no usable fact (each needs a text of at most"
            f" {MAX_UNIT_CHARS:,} characters and a network: world, experience or opinion)"
        )

    new_index = {position: i for i, (position, *_rest) in enumerate(kept)}
    facts: list[ExtractedFact] = []
    for i, (_position, item, network, text) in enumerate(kept):
        source_ids = _source_ids(item.get("source_ids"), exchange)
        mentioned_at = next(
            (by_id[s].timestamp for s in source_ids if by_id[s].timestamp is not None), reference
        )
        start, end = _occurred(item.get("occurred_start"), item.get("occurred_end"), reference)

        causal: list[CausalRelation] = []
        raw_causal = item.get("causal")
        for link in raw_causal if isinstance(raw_causal, list) else []:
            if not isinstance(link, dict):
                continue
            target = _index(link.get("target_index"))
            relation = _relation(link.get("relation"))
            if target is None or relation is None or target not in new_index:
                continue
            if new_index[target] == i:
                continue
            strength = _number(link.get("strength"))
            causal.append(
                CausalRelation(
                    new_index[target],
                    relation,
                    _clamp(strength) if strength is not None else DEFAULT_STRENGTH,
                )
            )

        confidence: float | None = None
        if network is Network.OPINION:
            number = _number(item.get("confidence"))
            confidence = _clamp(number) if number is not None else DEFAULT_CONFIDENCE

        entities = _entities(item.get("entities"))
        named = {e.name.casefold() for e in entities}
        entities += [
            m for m in _mentions_of_speakers(text, exchange) if m.name.casefold() not in named
        ]

        facts.append(
            ExtractedFact(
                text=text,
                network=network,
                occurred_start=start,
                occurred_end=end,
                mentioned_at=mentioned_at,
                entities=tuple(entities),
                causal=tuple(causal),
                source_ids=source_ids,
                confidence=confidence,
                mode=ExtractionMode.LLM,
                model=model,
            )
        )
    return facts


# ---- the extractor ---------------------------------------------------------------


class LlmExtractor:
    """Extraction through a local language model; see the module docstring."""

    mode = ExtractionMode.LLM

    def __init__(self, lm: LanguageModel) -> None:
        settings = lm.settings
        if settings.temperature > MAX_TEMPERATURE:
            lm = LanguageModel(replace(settings, temperature=MAX_TEMPERATURE))
            self._owned: LanguageModel | None = lm
        else:
            self._owned = None
        self.lm = lm
        self.model = lm.name
        # What the checks (llm_checks) did to each accepted answer, for the report.
        self._checks: list[CheckedFacts] = []

    def take_checks(self) -> list[CheckedFacts]:
        """The checks of the answers accepted since the last call."""
        checks, self._checks = self._checks, []
        return checks

    def close(self) -> None:
        """Close the clamped copy of the model, if one was made (the caller owns `lm`)."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def extract(
        self,
        exchange: Exchange,
        agent_name: str,
        known_entities: Sequence[str],
        *,
        on_tokens: Callable[[int], None] | None = None,
    ) -> list[ExtractedFact]:
        """The exchange's facts. `on_tokens(n)` follows the streamed reply (an
        exception it raises, a cancel, abandons the call)."""
        if not exchange.turns:
            return []

        def validate(value: Any) -> CheckedFacts:
            facts = validate_facts(value, exchange, self.model)
            checked = check_facts(facts, exchange, agent_name, known_entities)
            if facts and not checked.facts:
                said = _memorable_statement(exchange)
                if said is not None:
                    # Worth asking again: say what was wrong with each fact.
                    reasons = "; ".join(dict.fromkeys(v.reason for v in checked.dropped))
                    raise ValueError(f"no fact survived the checks ({reasons})")
            return checked

        try:
            checked = self.lm.structured(
                build_system_prompt(agent_name),
                build_prompt(exchange, agent_name, known_entities),
                FACT_SCHEMA,
                validate,
                examples=EXAMPLE_TEXTS,
                on_tokens=on_tokens,
            )
        except LanguageModelError as exc:
            first, last = exchange.turns[0].id, exchange.turns[-1].id
            span = first if first == last else f"{first}–{last}"
            where = f" of {exchange.session}" if exchange.session else ""
            raise ExtractionError(
                f"could not extract facts from turns {span}{where}: {exc}", kind=exc.kind
            ) from exc
        self._checks.append(checked)
        return checked.facts
