"""The model's facts checked against what the engine knows about the exchange.

A weak model's answer is well-formed JSON and still wrong (issue 30, with a
real 0.5B model): every fact filed as the agent's experience, a third party's
action among them; small talk as opinions at 0.9; turns copied with their
speaker prefix ("Priya: Ouch."); a name misspelt ("Juliper"); the prompt's
example conversation given back. Each fact is checked here against structure
the engine has without a model, repaired where the repair is certain, and
dropped where it is not; every repair and drop says why, for the ingest report.

1. A turn copied with its speaker's prefix loses the prefix and is quoted as
   what that speaker said.
2. A fact must state something: what rules mode drops (greetings, thanks,
   bare reactions, questions; core.retain.statements) is not a memory.
3. Its names must occur in the exchange, the bank's known names or the agent's
   name; a near-spelling of one is corrected; otherwise, and when most of its
   words are not in the turns either, it is dropped (core.retain.grounding).
4. Who spoke decides the network: experience is the agent's own (a source
   turn of the agent's, and not a third party as the actor); an opinion is the
   agent's belief (a source turn of the agent's); another speaker's view is a
   world fact that names its holder.
   The person a fact opens with, its actor, must be named in its turns or be
   the speaker of one in the first person: a real 0.5B model wrote "Maya
   returns on August 18" of Maya's turn "Tomás returns on August 18", and
   "Maya shared Priya's draft" of turns by Juniper and Priya.
5. Its dates must be inside what the turns allow: the session's days, or a
   time the turns name; other dates are dropped from the fact (not the fact).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from core.retain.extract import EntityMention, Exchange, ExtractedFact
from core.retain.grounding import Vocabulary, is_common, repair_names, support
from core.retain.networks import BankAgent
from core.retain.statements import split_turn
from core.timeparse import find_time_expressions
from core.types import Network

__all__ = ["CheckedFacts", "Verdict", "check_facts"]

# Of a fact's content words, at least this share must be in its exchange's turns.
MIN_FACT_SUPPORT = 0.5
# A date this close to the session still belongs to it ("last week", "next Friday").
SESSION_SLACK = timedelta(days=45)
# A fact's date within this of a time the turns name is that time.
NAMED_SLACK = timedelta(days=2)

# Why a fact was dropped or repaired: short keys for the report, with a text.
NOT_A_MEMORY = "states nothing (a greeting, a question or a bare reaction)"
UNSUPPORTED = "not supported by its turns"
COPIED_TURN = "a turn copied with its speaker's prefix"
NOT_THE_AGENTS_EXPERIENCE = "a third party's action filed as the agent's experience"
NOT_THE_AGENTS_OPINION = "another speaker's view filed as the agent's opinion"
NOT_THE_AGENT_ACTING = "names someone else as the actor of the agent's own turn"
MISSPELT_NAME = "a name misspelt"
SPEAKER_AS_ACTOR = "names a turn's speaker as the actor of what the turn says of someone else"
ACTOR_NOT_IN_TURNS = "names as its actor someone its turns neither name nor are spoken by"
DATE_OUTSIDE = "a date outside what the turns allow"


@dataclass(frozen=True)
class Verdict:
    text: str  # the fact as the model gave it
    reason: str  # one of the constants above, with detail after ": "


@dataclass
class CheckedFacts:
    facts: list[ExtractedFact] = field(default_factory=list)
    dropped: list[Verdict] = field(default_factory=list)
    repaired: list[Verdict] = field(default_factory=list)


def _names_of(exchange: Exchange) -> frozenset[str]:
    return frozenset(w.casefold() for t in exchange.turns for w in t.speaker.split())


def _mentions(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def _first_name(text: str, people: Sequence[str]) -> str | None:
    """The person the fact opens with (its actor, as facts are written)."""
    head = text.strip()
    for person in sorted(people, key=len, reverse=True):
        if head.casefold().startswith(person.casefold()) and (
            len(head) == len(person) or not head[len(person)].isalnum()
        ):
            return person
    return None


_FIRST_PERSON = re.compile(r"(?<!\w)(?:I|I'm|I've|I'd|I'll|me|my|mine|we|we're|our|ours|us)(?!\w)")
_FIRST_WORD = re.compile(r"^\W*([^\W\d_][\w'’-]*)")
# A fact that reports the speaker's words ("Maya said that ...") puts her there rightly.
_REPORTING = re.compile(
    r"(?<!\w)(?:said|says|told|tells|asked|asks|mentioned|announced|reported|explained|"
    r"noted|shared|thinks|believes|hopes|wants|heard|hears|wrote|writes)(?!\w)",
    re.IGNORECASE,
)


def _actor_problem(actor: str, text: str, sources: Sequence) -> str | None:
    """Why the fact's actor is not who its turns say acted, or None."""
    if any(_mentions(actor, t.text) for t in sources):
        return None
    own = [t for t in sources if t.speaker == actor]
    if not own:
        return f"{ACTOR_NOT_IN_TURNS}: {actor}"
    if any(_FIRST_PERSON.search(t.text) for t in own) or _REPORTING.search(text):
        return None
    # The turn is about someone or something it names first ("Tomás returns
    # on ...", "Northwind signed ..."), and the fact put its speaker there.
    for turn in own:
        subject = _FIRST_WORD.match(turn.text)
        word = subject.group(1) if subject else ""
        if word[:1].isupper() and not is_common(word) and not _mentions(word, text):
            return f"{SPEAKER_AS_ACTOR}: {actor} for {word}"
    return None


def _allowed_times(exchange: Exchange) -> list[tuple[datetime, datetime]]:
    """The spans a fact's dates may fall in: around each session time, and each
    time a turn names (resolved against its session)."""
    spans: list[tuple[datetime, datetime]] = []
    for turn in exchange.turns:
        when = turn.timestamp or exchange.when
        if when is None:
            continue
        spans.append((when - SESSION_SLACK, when + SESSION_SLACK))
        for interval in find_time_expressions(turn.text, when):
            if not interval.is_open:
                spans.append((interval.start - NAMED_SLACK, interval.end + NAMED_SLACK))
    return spans


def _inside(value: datetime | None, spans: list[tuple[datetime, datetime]]) -> bool:
    return value is None or any(a <= value <= b for a, b in spans)


def check_facts(
    facts: Sequence[ExtractedFact],
    exchange: Exchange,
    agent_name: str = "",
    known_entities: Sequence[str] = (),
) -> CheckedFacts:
    agent = agent_name.strip()
    owner = BankAgent(agent)
    by_id = {t.id: t for t in exchange.turns}
    speakers = list(dict.fromkeys(t.speaker for t in exchange.turns))
    people = [*speakers, *([agent] if agent and agent not in speakers else [])]
    vocabulary = Vocabulary.of(
        [t.text for t in exchange.turns],
        [*speakers, *([agent] if agent else []), *known_entities],
    )
    spans = _allowed_times(exchange)
    names = _names_of(exchange)
    out = CheckedFacts()
    kept_at: dict[int, int] = {}  # position in `facts` -> position in out.facts
    for position, fact in enumerate(facts):
        original = fact.text
        text = fact.text
        sources = [by_id[s] for s in fact.source_ids if s in by_id]
        source_speakers = {t.speaker for t in sources}

        # 1. "Priya: Ouch." -- a turn copied with its prefix.
        prefix = re.match(r"^\s*([^:\n]{1,60}):\s+(.+)$", text, re.DOTALL)
        if prefix and prefix.group(1).strip() in speakers:
            speaker, rest = prefix.group(1).strip(), prefix.group(2).strip()
            said = [w for st in split_turn(rest, names).statements for w in st.text.split()]
            if len(said) < 3:
                out.dropped.append(Verdict(original, f"{COPIED_TURN}: {NOT_A_MEMORY}"))
                continue
            text = f'{speaker} said: "{rest}"'
            out.repaired.append(Verdict(original, COPIED_TURN))

        # 2. It states something: not what rules mode drops, nor a word or two
        # that name no one ("Ouch.", "Sounds good.").
        statements = split_turn(text, names).statements
        words = [w for s in statements for w in s.text.split()]
        if not statements or (len(words) < 3 and not any(_mentions(p, text) for p in people)):
            out.dropped.append(Verdict(original, NOT_A_MEMORY))
            continue

        # 3. Its names and words are the exchange's.
        found = support(text, vocabulary)
        if found.names:
            text, fixes = repair_names(text, vocabulary, found.names)
            if fixes:
                out.repaired.append(
                    Verdict(
                        original,
                        f"{MISSPELT_NAME}: " + ", ".join(f"{a} -> {b}" for a, b in fixes.items()),
                    )
                )
                fact = replace(fact, entities=_renamed(fact.entities, fixes))
                found = support(text, vocabulary)
        if not found.supported(MIN_FACT_SUPPORT):
            out.dropped.append(Verdict(original, f"{UNSUPPORTED}: {found.why()}"))
            continue

        # 4. Who spoke decides the network.
        network, confidence = fact.network, fact.confidence
        # The agent's own voice (networks.BankAgent: its turns, or a note without
        # a speaker), as rules mode and clean_fact decide it too.
        agent_spoke = any(owner.owns(speaker) for speaker in source_speakers)
        actor = _first_name(text, people)
        if network is Network.EXPERIENCE:
            if agent_spoke and actor is not None and actor != agent:
                source_text = " ".join(t.text for t in sources)
                if not _mentions(actor, source_text):
                    out.dropped.append(Verdict(original, f"{NOT_THE_AGENT_ACTING}: {actor}"))
                    continue
            if not agent_spoke or (actor is not None and actor != agent):
                network = Network.WORLD
                out.repaired.append(Verdict(original, NOT_THE_AGENTS_EXPERIENCE))
        elif network is Network.OPINION and not agent_spoke:
            holder = actor or next(iter(source_speakers), None)
            network, confidence = Network.WORLD, None
            if holder is not None and not _mentions(holder, text):
                text = f"{holder} thinks that {text[:1].lower()}{text[1:]}"
            out.repaired.append(Verdict(original, NOT_THE_AGENTS_OPINION))

        # Its actor is who its turns say acted (the model cited no turn: all count).
        if actor is not None and actor != agent and set(fact.source_ids) != set(by_id):
            problem = _actor_problem(actor, text, sources)
            if problem is not None:
                out.dropped.append(Verdict(original, problem))
                continue

        # 5. Its dates are the turns'.
        start, end = fact.occurred_start, fact.occurred_end
        if spans and not (_inside(start, spans) and _inside(end, spans)):
            start = end = None
            out.repaired.append(Verdict(original, DATE_OUTSIDE))

        kept_at[position] = len(out.facts)
        out.facts.append(
            replace(
                fact,
                text=text,
                network=network,
                confidence=confidence,
                occurred_start=start,
                occurred_end=end,
                # A mention of a name the exchange never says is the model's invention.
                entities=tuple(e for e in fact.entities if _said(e.name, vocabulary)),
            )
        )
    # Causal links point at positions in the list: follow the facts that stayed.
    out.facts = [
        replace(
            f,
            causal=tuple(
                replace(c, target_index=kept_at[c.target_index])
                for c in f.causal
                if c.target_index in kept_at
            ),
        )
        for f in out.facts
    ]
    return out


def _said(name: str, vocabulary: Vocabulary) -> bool:
    return all(support(word, vocabulary).supported(1.0) for word in name.split())


def _renamed(entities: Sequence[EntityMention], fixes: dict[str, str]) -> tuple:
    lowered = {a.casefold(): b for a, b in fixes.items()}
    out = []
    seen = set()
    for e in entities:
        name = lowered.get(e.name.casefold(), e.name)
        if name.casefold() not in seen:
            seen.add(name.casefold())
            out.append(EntityMention(name, e.type) if name != e.name else e)
    return tuple(out)
