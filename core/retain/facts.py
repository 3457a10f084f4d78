"""Facts in flight: what the extractor gave, cleaned, before anything is written.

`clean_fact` makes an extractor's output safe to store (one network of the four
facts may be in, sources only among the document's own turns, bounded text);
`verbatim_facts` is the `verbatim` mode's extractor: each turn one fact. The
plan (plan.py) fills in each `Fact`'s entities and unit as it learns them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb

from core.retain.extract import EntityMention, Exchange, ExtractedFact, pieces_of
from core.retain.networks import BankAgent, file_fact
from core.retain.report import ChunkFailure
from core.types import MAX_UNIT_CHARS, Document, ExtractionMode, Network, Turn


@dataclass
class Fact:
    """An extracted fact, cleaned, with what the plan learns about it."""

    text: str
    network: Network
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime | None
    confidence: float | None
    source_ids: tuple[str, ...]
    mentions: tuple[EntityMention, ...]
    speakers: tuple[str, ...]
    causal: tuple[tuple[int, str, float], ...]  # (global fact index, relation, strength)
    mode: ExtractionMode
    model: str
    entity_ids: tuple[str, ...] = ()
    surfaces: tuple[str, ...] = ()
    unit_id: str = ""  # its own new unit, or the unit it was merged into
    duplicate: bool = False

    @property
    def when(self) -> datetime | None:
        return self.occurred_start or self.mentioned_at


@dataclass
class Extraction:
    facts: list[Fact]
    failures: list[ChunkFailure]
    chunks: int


def clean_fact(
    fact: ExtractedFact,
    turns: dict[str, Turn],
    chunk_turns: tuple[str, ...],
    base: int,
    when: datetime | None = None,
    agent: BankAgent | None = None,
) -> Fact | None:
    """The fact made safe to store, or None when it has no text. Its network is
    the one `networks.file_fact` allows: only `agent`'s own opinions and
    experience stay so; anyone else's are world facts."""
    text = " ".join(str(fact.text or "").split())[:MAX_UNIT_CHARS]
    if not text:
        return None
    try:
        network = Network(fact.network)
    except ValueError:
        network = Network.WORLD
    if network is Network.OBSERVATION:
        network = Network.WORLD
    # A model may cite turns that do not exist: only the document's own ids count.
    sources = tuple(dict.fromkeys(s for s in fact.source_ids if s in turns)) or chunk_turns
    speakers = tuple(dict.fromkeys(turns[s].speaker for s in sources if s in turns))
    network = file_fact(network, speakers, agent or BankAgent())
    confidence = None
    if network is Network.OPINION:
        c = fact.confidence if fact.confidence is not None else 0.5
        confidence = min(max(float(c), 0.0), 1.0)
    start, end = fact.occurred_start, fact.occurred_end
    if start is not None and end is not None and end < start:
        start, end = end, start
    causal = tuple(
        (base + c.target_index, c.relation, float(c.strength))
        for c in fact.causal
        if isinstance(c.target_index, int) and c.target_index >= 0
    )
    return Fact(
        text=text,
        network=network,
        occurred_start=start,
        occurred_end=end,
        mentioned_at=fact.mentioned_at or when,
        confidence=confidence,
        source_ids=sources,
        mentions=tuple(fact.entities),
        speakers=speakers,
        causal=causal,
        mode=ExtractionMode(fact.mode),
        model=fact.model or "",
    )


def known_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every active entity's name and aliases, for the extractor's `known_entities`."""
    rows = con.execute("SELECT name, aliases FROM entities WHERE status = 'active'").fetchall()
    return [n for name, aliases in rows for n in (name, *(aliases or ()))]


def verbatim_facts(document: Document, agent_name: str, known: list[str]) -> list[ExtractedFact]:
    """Each turn as one fact: "Speaker: text", experience for the agent's turns,
    occurring at its session time; entities as the rules find them in the turn.
    A turn longer than `PIECE_CHARS` is a fact per piece (`pieces_of`): a unit
    holds at most `MAX_UNIT_CHARS`, and a long message is kept whole, in order."""
    from core.retain.rules import RulesExtractor

    spotter = RulesExtractor()
    turns = [p for t in document.turns if t.text.strip() for p in pieces_of(t)]
    seen = {n.casefold() for n in known}
    # Two passes: every name found anywhere in the document is known to every turn.
    for turn in turns:
        for found in spotter.mentions(Exchange((turn,), turn.session), agent_name, ()).values():
            learn_names(known, seen, (m.name for m in found))
    agent = agent_name.casefold()
    facts = []
    for turn in turns:
        speaker = turn.speaker.strip()
        # A turn without a speaker (an agent's note retained over HTTP) is its text alone.
        mentions = [EntityMention(speaker, "person")] if speaker else []
        for found in spotter.mentions(Exchange((turn,), turn.session), agent_name, known).values():
            mentions += found
        unique: dict[str, EntityMention] = {}
        for mention in mentions:
            unique.setdefault(mention.name.casefold(), mention)
        network = (
            Network.EXPERIENCE if agent and turn.speaker.casefold() == agent else Network.WORLD
        )
        facts.append(
            ExtractedFact(
                text=f"{speaker}: {turn.text.strip()}" if speaker else turn.text.strip(),
                network=network,
                occurred_start=turn.timestamp,
                occurred_end=None,
                mentioned_at=turn.timestamp,
                entities=tuple(unique.values()),
                causal=(),
                source_ids=(turn.id,),
                confidence=None,
                mode=ExtractionMode.VERBATIM,
            )
        )
    return facts


def learn_names(known: list[str], seen: set[str], names) -> None:
    for name in names:
        key = name.strip().casefold()
        if key and key not in seen:
            seen.add(key)
            known.append(name.strip())


__all__ = [
    "MAX_UNIT_CHARS",
    "Extraction",
    "Fact",
    "clean_fact",
    "known_names",
    "learn_names",
    "verbatim_facts",
]
