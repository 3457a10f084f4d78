"""Fact extraction, the first half of retain: what both extractors hand back.

An extractor turns one *exchange* (a few consecutive turns of one session) into
narrative facts with their network, time, entity mentions, causal relations to
other facts of the same exchange, and the ids of the turns they came from. It
never touches a store: resolving entities, laying links and writing units is
the caller's job (retain's second half).

Two extractors share this value type: `RulesExtractor` (core/retain/rules.py,
deterministic, no model) and `LlmExtractor` (core/retain/llm_extract.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from core.types import FACT_NETWORKS, Document, EngramError, ExtractionMode, Network, Turn

__all__ = [
    "CAUSAL_RELATIONS",
    "ENTITY_TYPES",
    "FACT_NETWORKS",
    "CausalRelation",
    "EntityMention",
    "Exchange",
    "ExtractedFact",
    "ExtractionError",
    "Extractor",
    "PIECE_CHARS",
    "chunk_exchanges",
    "is_question",
    "pieces_of",
]

ENTITY_TYPES: tuple[str, ...] = ("person", "org", "place", "product", "concept", "other")
CAUSAL_RELATIONS: tuple[str, ...] = ("causes", "caused_by", "enables", "prevents")


class ExtractionError(EngramError):
    """A chunk could not be turned into facts; the caller writes nothing of it.

    `kind` is the language model's failure kind when there is one ("unreachable",
    "timeout", "http", "model", "config", "invalid"), so a caller can tell a dead
    server (stop, or fall back to rules) from one bad chunk (report it, go on).
    """

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class EntityMention:
    """A name as it appears in a fact; resolution to a canonical entity comes later."""

    name: str
    type: str = "other"  # one of ENTITY_TYPES


@dataclass(frozen=True)
class CausalRelation:
    """This fact `relation` the fact at `target_index` of the same exchange's fact list.

    A relation found by the rules is given from both ends (`causes` on the cause,
    `caused_by` on the effect); a linker wanting one edge per pair keeps one side.
    """

    target_index: int
    relation: str  # one of CAUSAL_RELATIONS
    strength: float = 0.5


@dataclass(frozen=True)
class ExtractedFact:
    text: str
    network: Network  # WORLD | EXPERIENCE | OPINION only
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime | None  # the session time of its turns
    entities: tuple[EntityMention, ...]
    causal: tuple[CausalRelation, ...]
    source_ids: tuple[str, ...]  # ids of the exchange's turns it came from
    confidence: float | None  # opinions only, in [0, 1]
    mode: ExtractionMode
    model: str = ""


@dataclass(frozen=True)
class Exchange:
    """Consecutive turns of one session, extracted together."""

    turns: tuple[Turn, ...]
    session: str

    @property
    def turn_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.turns)

    @property
    def when(self) -> datetime | None:
        """The session time: the first timestamp among the turns."""
        for turn in self.turns:
            if turn.timestamp is not None:
                return turn.timestamp
        return None


class Extractor(Protocol):
    mode: ExtractionMode
    model: str

    def extract(
        self, exchange: Exchange, agent_name: str, known_entities: Sequence[str]
    ) -> list[ExtractedFact]: ...


def is_question(text: str) -> bool:
    """The turn ends by asking something (an image caption after it does not count)."""
    body = text
    cut = body.rfind("[image")
    if cut > 0 and body.rstrip().endswith("]"):
        body = body[:cut]
    return body.rstrip().endswith("?")


def _session_key(turn: Turn) -> str:
    # Formats without sessions still split where the day changes: a chat that
    # resumes the next morning is a new exchange.
    if turn.session:
        return turn.session
    return turn.timestamp.date().isoformat() if turn.timestamp is not None else ""


# A turn longer than this is extracted in pieces of about this size, each an
# exchange of its own (as a file's lines become turns): an extractor reads its
# whole exchange for every fact it makes, so one 100,000-character message cost
# time quadratic in its length (and one prompt of all of it, in llm mode).
PIECE_CHARS = 2_000
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def pieces_of(turn: Turn, size: int = PIECE_CHARS) -> list[Turn]:
    """`turn` itself if it fits in `size` characters; else its text cut at
    sentence ends into pieces of at most `size` (a longer sentence at spaces, a
    longer word anywhere), each a Turn with the turn's id, speaker and time."""
    text = turn.text.strip()
    if len(text) <= size:
        return [turn]
    pieces: list[str] = []
    current = ""
    for part in _parts(text, size):
        if current and len(current) + 1 + len(part) > size:
            pieces.append(current)
            current = part
        else:
            current = f"{current} {part}" if current else part
    if current:
        pieces.append(current)
    return [replace(turn, text=piece) for piece in pieces]


def _parts(text: str, size: int):
    """The sentences of `text`, none longer than `size`."""
    for sentence in _SENTENCE_END.split(text):
        if len(sentence) <= size:
            yield sentence
            continue
        words = ""
        for word in sentence.split():
            while len(word) > size:
                if words:
                    yield words
                    words = ""
                yield word[:size]
                word = word[size:]
            if words and len(words) + 1 + len(word) > size:
                yield words
                words = word
            else:
                words = f"{words} {word}" if words else word
        if words:
            yield words


def chunk_exchanges(doc: Document, max_turns: int = 6) -> list[Exchange]:
    """Group consecutive turns of one session into exchanges of at most `max_turns`.

    A question and the next turn by someone else (its answer) are kept in one
    exchange, so a split never separates them. Empty turns are dropped. A turn
    longer than `PIECE_CHARS` is cut into pieces (`pieces_of`), one exchange
    each, so extraction's cost stays linear in the text's length.
    """
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    exchanges: list[Exchange] = []
    run: list[Turn] = []
    key: str | None = None

    def flush() -> None:
        if run:
            exchanges.append(Exchange(tuple(run), run[0].session))
            run.clear()

    turns = [t for t in doc.turns if t.text.strip()]
    # Units of one turn, or two for a question and its answer.
    i = 0
    while i < len(turns):
        turn = turns[i]
        if len(turn.text) > PIECE_CHARS:
            flush()
            exchanges.extend(Exchange((piece,), turn.session) for piece in pieces_of(turn))
            key = None
            i += 1
            continue
        unit = [turn]
        nxt = turns[i + 1] if i + 1 < len(turns) else None
        if (
            max_turns >= 2
            and nxt is not None
            and len(nxt.text) <= PIECE_CHARS
            and nxt.speaker != turn.speaker
            and _session_key(nxt) == _session_key(turn)
            and is_question(turn.text)
        ):
            unit.append(nxt)
        i += len(unit)
        unit_key = _session_key(turn)
        if key is not None and (unit_key != key or len(run) + len(unit) > max_turns):
            flush()
        key = unit_key
        run.extend(unit)
    flush()
    return exchanges
