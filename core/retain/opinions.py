"""Opinions under new evidence: assess, move the confidence, record every step.

For each new fact, the opinions related to it (cosine above
`retain.opinion_related_similarity`, or above `retain.opinion_entity_similarity`
when they share an entity other than the speakers; at most
`retain.opinion_candidates`, most similar first) are assessed:

- rules: similarity plus polarity (sentiment cue words, flipped by a negation
  just before them) and hedging cues;
- llm: the model answers reinforce | weaken | contradict | neutral with a
  reason, and may rewrite a contradicted opinion (falls back to the rules
  when the model gives no usable answer).

`apply_evidence` moves the confidence: reinforce c' = min(c+α, 1), weaken
max(c−α, 0), contradict max(c−2α, 0), neutral c. Each non-neutral step is an
`opinion_events` row (time, relation, before, after, evidence unit, reason, old
and new text); a neutral assessment changes nothing and is not recorded. A new
opinion gets a `formed` event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pyarrow as pa

from core.retain.entities import wordset
from core.types import new_id

if TYPE_CHECKING:
    from core.providers.llm import LanguageModel


class Relation(StrEnum):
    REINFORCE = "reinforce"
    WEAKEN = "weaken"
    CONTRADICT = "contradict"
    NEUTRAL = "neutral"


# The event that opens an opinion's history (not an assessment outcome).
FORMED = "formed"


def apply_evidence(confidence: float, relation: Relation | str, alpha: float) -> float:
    """The confidence after one piece of evidence, clamped to [0, 1].

    reinforce: min(c+α, 1); weaken: max(c−α, 0); contradict: max(c−2α, 0); neutral: c."""
    relation = Relation(relation)
    c = float(confidence)
    if relation is Relation.REINFORCE:
        c = min(c + alpha, 1.0)
    elif relation is Relation.WEAKEN:
        c = max(c - alpha, 0.0)
    elif relation is Relation.CONTRADICT:
        c = max(c - 2 * alpha, 0.0)
    return min(max(c, 0.0), 1.0)


@dataclass(frozen=True)
class Assessment:
    relation: Relation
    reason: str
    new_text: str | None = None  # a rewrite of a contradicted opinion
    mode: str = "rules"


@dataclass(frozen=True)
class OpinionEvent:
    id: str
    opinion_id: str
    happened_at: datetime
    relation: str  # formed | reinforce | weaken | contradict
    confidence_before: float | None
    confidence_after: float
    evidence_id: str | None
    reason: str
    old_text: str | None = None
    new_text: str | None = None


# -- rules ----------------------------------------------------------------------------

_POSITIVE = wordset(
    """
    love loves loved loving likes liked enjoy enjoys enjoyed enjoying great good
    best better prefer prefers preferred recommend recommends recommended favorite
    favourite amazing awesome wonderful excellent happy glad fun beautiful nice helpful
    worth worthwhile support supports supported agree agrees trust trusts reliable safe
    excited exciting proud fantastic perfect positive brilliant impressive impressed
    inspiring inspired rewarding fond keen thrilled delighted pleasant satisfied success
    successful easy benefit beneficial
    """
)
_NEGATIVE = wordset(
    """
    hate hates hated hating dislike dislikes disliked bad worst worse terrible awful
    boring avoid avoids avoided poor overrated disappointing disappointed unhappy sad
    annoying annoyed useless waste dangerous unsafe wrong disagree disagrees distrust
    unreliable negative broken fail fails failed failure against horrible tired
    frustrating frustrated stressful stressed painful difficult regret regrets
    scared afraid worried ugly mediocre harmful
    """
)
_NEGATIONS = wordset(
    """
    not no never nobody nothing neither nor hardly barely without cannot can't cant
    won't wont don't dont doesn't doesnt didn't didnt isn't isnt wasn't wasnt aren't
    arent weren't shouldn't wouldn't couldn't longer
    """
)
_HEDGES = wordset(
    """
    maybe perhaps might possibly unsure doubt doubts doubtful uncertain unclear
    """
)
# "like" is a preference only after a subject, an auxiliary or an adverb.
_LIKE_AFTER = _NEGATIONS | wordset(
    """
    i we you they he she really also still do does did would i'd we'd they'd just
    actually truly definitely
    """
)
# Letters of any script: "Tomás" is one word.
_WORDS = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# Addressing the listener: a judgment of their things, not of the speaker's.
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
_NAME = re.compile(r"\b[^\W\d_][^\W\d_]+(?:['’]s)?\b")

# A negation this many words before a cue word flips it ("not really a fan", "no longer love").
NEGATION_REACH = 3
# Rules: below this similarity a fact says nothing about an opinion (polarity
# words alone are everywhere in small talk) — unless it is very similar, the two
# must also share an entity other than the speakers.
RULES_MIN_SIMILARITY = 0.75
RULES_STRONG_SIMILARITY = 0.85
# Rules: what the opinion's own holder says later counts as evidence from this
# similarity on (sentence embeddings of one topic in chat sit around 0.5-0.7).
HOLDER_MIN_SIMILARITY = 0.6
# Rules: a fact without polarity cues this similar restates the opinion.
RESTATEMENT_SIMILARITY = 0.85
# Rules: opposite polarity at this similarity is a contradiction, below it a weakening.
CONTRADICTION_SIMILARITY = 0.6


def _words(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORDS.findall(text.lower())]


# A concession: what follows the last of these is the speaker's judgment ("it
# isn't always easy, but it's important" judges it important, not hard).
_CONTRAST = frozenset({"but", "however"})


def polarity(text: str) -> int:
    """-1, 0 or +1: the sign of the sentiment cues, each flipped by a negation
    up to NEGATION_REACH words before it; after a "but", only what follows it."""
    words = _words(text)
    contrast = max((i for i, w in enumerate(words) if w in _CONTRAST), default=-1)
    words = words[contrast + 1 :]
    total = 0
    for i, word in enumerate(words):
        sign = 1 if word in _POSITIVE else -1 if word in _NEGATIVE else 0
        if word == "like" and i > 0 and words[i - 1] in _LIKE_AFTER:
            sign = 1  # "I like", "doesn't like" — not "places like this"
        if not sign:
            continue
        if any(w in _NEGATIONS for w in words[max(0, i - NEGATION_REACH) : i]):
            sign = -sign
        total += sign
    return (total > 0) - (total < 0)


# Words that carry no topic: function words, chat words, the attribution, and
# time words — every fact ends with its date ("(9 June 2023)"), so two facts of one
# month would otherwise share a "topic".
_NO_TOPIC = wordset(
    """
    that this these those there their them they with from have been were will would could
    should about your yours what when where which while just really very much more some
    said asked answered shared thing things stuff time always never also even still
    like know think feel felt make made makes lots glad sure yeah thanks thank
    sound sounds sounded look looks looked seem seems seemed together other others people
    everyone everything someone something anyone anything super totally
    january february march april june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday weekend weekends
    today yesterday tomorrow tonight morning evening night week weeks month months
    year years last next recently lately ago since before after during until
    must might such quite pretty kinda feeling feelings experience experiences moment
    moments
    """
)
_DEMONSTRATIVES = wordset("that this these those")
# Judgments that are not cue words of polarity: what is said of a thing, not which
# thing ("That looks delicious!" and "Wow, sounds delicious!" judge two dishes).
_JUDGMENTS = wordset(
    """
    delicious cool incredible interesting lovely gorgeous stunning special powerful
    peaceful magical cute sweet tough hard rough crazy wild relaxing calming soothing
    therapeutic healing meaningful challenging tiring exhausting scary precious
    """
)
# What the holder says later bears on an opinion when the two share this many topic
# words, or when the words they share are at least this share of the shorter one's
# topic: one or two common words ("friends", "tough") between two long turns are
# not the same subject.
TOPIC_MIN_SHARED = 3
TOPIC_MIN_COVER = 0.5
# Fewer shared topic words than this are a coincidence of two reactions ("Like in
# sports, the win feels great" and "how sports can unite people"), unless the two
# share an entity or are near restatements of each other.
TOPIC_MIN_WORDS = 2


def _topic(text: str) -> set[str]:
    """The words of a text that can carry its topic, cut to their first five letters
    (a crude stem: "adopt", "adopted", "adoption" meet)."""
    words = _words(text)
    bases = [w.split("'")[0] for w in words]  # "they're" -> "they", "Mel's" -> "mel"
    return {
        w[:5]
        for i, w in enumerate(bases)
        if len(w) >= 4
        # "that movie", "this sunset": a thing pointed at in the chat, not a subject
        # two reactions share by its word ("that movie is awesome", "writing a movie").
        and (i == 0 or words[i - 1] not in _DEMONSTRATIVES)
        and w not in _NO_TOPIC
        and w not in _POSITIVE
        and w not in _NEGATIVE
        and w not in _NEGATIONS
        and w not in _HEDGES
        and w not in _JUDGMENTS
    }


def _name_stems(names: frozenset[str]) -> set[str]:
    return {w[:5] for name in names for w in _words(name)}


def has_topic(text: str, names: frozenset[str] = frozenset()) -> bool:
    """`text` names something an opinion can be about, once the `names` of the people
    talking (casefolded) are set aside: "Yeah John, it's super important" does not."""
    return bool(_topic(text) - _name_stems(names))


def _addresses(text: str, others: frozenset[str]) -> bool:
    """The statement is about the listener: it says "you"/"your" or names one of
    the `others` talking ("Wow Mel, that painting's amazing", "a painting of
    Caroline's"), by a name or its first letters. Of a question and its answer,
    the answer."""
    _, answered, answer = text.rpartition(" answered: ")
    text = answer if answered else text
    if _SECOND_PERSON.search(text):
        return True
    return any(
        len(word) >= 3 and name.startswith(word.casefold().split("'")[0])
        for word in _NAME.findall(text)
        if word[0].isupper()
        for name in others
    )


def shares_topic(
    evidence: str,
    opinion: str,
    holders: frozenset[str] = frozenset(),
    *,
    participants: frozenset[str] = frozenset(),
    strict: bool = True,
    one_word: bool = False,
) -> bool:
    """Evidence and opinion are about the same subject. They share TOPIC_MIN_WORDS
    topic words (or all of the opinion's, "Nate loves turtles"), or one when
    `one_word` (they share an entity, or the embedding finds them near
    restatements); `strict`: TOPIC_MIN_SHARED, or enough to be TOPIC_MIN_COVER of
    the shorter one's ("Oscar", "pottery"). The names of the people
    talking (the opinion's `holders` and the other `participants`, casefolded),
    in everything they say or hear, do not count; and a judgment of the
    listener's things ("your painting", "Mel's painting") is not about the same
    subject as one of the holder's own ("I love painting"), nor the other way."""
    others = frozenset(participants - holders)
    if _addresses(evidence, others) != _addresses(opinion, others):
        return False
    names = _name_stems(holders | participants)
    ours, theirs = _topic(evidence) - names, _topic(opinion) - names
    shared = ours & theirs
    # A short opinion's whole topic is enough ("Nate loves turtles"); a short reaction
    # ("Nice work!") is not evidence about a longer opinion by its one word.
    needed = 1 if one_word else min(TOPIC_MIN_WORDS, len(theirs))
    if not shared or len(shared) < needed:
        return False
    if not strict:
        return True
    return len(shared) >= TOPIC_MIN_SHARED or len(shared) >= TOPIC_MIN_COVER * min(
        len(ours), len(theirs)
    )


def hedged(text: str) -> bool:
    words = set(_words(text))
    return bool(words & _HEDGES) or "not sure" in text.lower()


# Phrases with which a speaker takes back an earlier belief. Not "but now": "it
# was a long process, but now I'm ready" tells a change of situation, and "I
# used to hate it, but now I love it" is read by polarity after the "but".
_REVERSAL = re.compile(
    r"\b(?:after\s+all|no\s+longer|not\s+any\s*more|changed\s+(?:his|her|their|my|its)\s+mind|"
    r"turned\s+out|(?:was|were)\s+wrong|now\s+(?:thinks|believes|prefers|says)|"
    r"contrary\s+to)\b",
    re.I,
)
# Words that take a belief back only when a belief follows them: "Actually Tomás
# prefers live pairing now" does, but in chat "actually" is mostly emphasis ("Great
# actually!", "Joanna actually started a book") and "instead of" tells what someone
# did ("instead of getting stuck, John worked hard").
_WEAK_REVERSAL = re.compile(
    r"\b(?:actually|instead\s+of)\b(?=[^.!?]*\b(?:thinks?|thought|believes?|believed|"
    r"prefers?|preferred|says?|said|decided|realized|realised)\b)",
    re.I,
)


def _reversal(text: str) -> re.Match[str] | None:
    return _REVERSAL.search(text) or _WEAK_REVERSAL.search(text)


def assess_rules(
    evidence: str,
    opinion: str,
    similarity: float,
    shared_entity: bool = True,
    same_holder: bool = False,
    holder_similarity: float = HOLDER_MIN_SIMILARITY,
    holders: frozenset[str] = frozenset(),
    participants: frozenset[str] = frozenset(),
) -> Assessment:
    """Relation of `evidence` to `opinion` from their similarity and polarity cues.

    Evidence from the opinion's own holder counts from `holder_similarity` on,
    and then only through polarity (both sides must carry a sentiment cue) or a
    reversal cue: a person judging the same thing again."""
    pe, po = polarity(evidence), polarity(opinion)
    sim = f"similarity {similarity:.2f}"
    if (
        same_holder
        and similarity >= holder_similarity
        and (
            similarity < RULES_MIN_SIMILARITY
            or (not shared_entity and similarity < RULES_STRONG_SIMILARITY)
        )
    ):
        if not shares_topic(
            evidence, opinion, holders, participants=participants, one_word=shared_entity
        ):
            # "Good to talk to you again" says nothing about "helping out is great":
            # sentiment alone is everywhere in small talk.
            return Assessment(Relation.NEUTRAL, f"{sim}, same holder, no word of the topic")
        reversal = _reversal(evidence)
        if reversal and not _reversal(opinion):
            return Assessment(
                Relation.CONTRADICT, f"{sim}, same holder, reversal cue {reversal.group(0)!r}"
            )
        if pe and po:
            if pe == po:
                return Assessment(Relation.REINFORCE, f"{sim}, same holder, same polarity")
            return Assessment(Relation.WEAKEN, f"{sim}, same holder, opposite polarity")
        return Assessment(Relation.NEUTRAL, f"{sim}, same holder, no polarity cue decides")
    if similarity < RULES_MIN_SIMILARITY or (
        not shared_entity and similarity < RULES_STRONG_SIMILARITY
    ):
        return Assessment(Relation.NEUTRAL, f"{sim}, too far apart")
    near = shared_entity or similarity >= RULES_STRONG_SIMILARITY
    if not shares_topic(
        evidence, opinion, holders, participants=participants, strict=False, one_word=near
    ):
        # "Wow, Mel, you're amazing!" and "Yeah Mel, stoked!" are close in form only.
        return Assessment(Relation.NEUTRAL, f"{sim}, no word of the topic")
    reversal = _reversal(evidence)
    if reversal and not _reversal(opinion):
        # "X thought A, but now thinks B": the evidence names the belief it overturns,
        # so it shares the opinion's words (high similarity) while denying it.
        return Assessment(Relation.CONTRADICT, f"{sim}, reversal cue {reversal.group(0)!r}")
    if pe and po:
        if pe == po:
            return Assessment(Relation.REINFORCE, f"{sim}, same polarity")
        if similarity >= CONTRADICTION_SIMILARITY:
            return Assessment(Relation.CONTRADICT, f"{sim}, opposite polarity")
        return Assessment(Relation.WEAKEN, f"{sim}, opposite polarity")
    if hedged(evidence) and similarity >= CONTRADICTION_SIMILARITY:
        return Assessment(Relation.WEAKEN, f"{sim}, the evidence is hedged")
    if similarity >= RESTATEMENT_SIMILARITY:
        if pe < 0 and po == 0:
            return Assessment(Relation.WEAKEN, f"{sim}, negative evidence")
        return Assessment(Relation.REINFORCE, f"{sim}, the evidence restates it")
    return Assessment(Relation.NEUTRAL, f"{sim}, no polarity cue decides")


# -- language model -------------------------------------------------------------------

ASSESS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "relation": {"type": "string", "enum": [r.value for r in Relation]},
        "reason": {"type": "string"},
        "revised_opinion": {"type": ["string", "null"]},
    },
    "required": ["relation", "reason"],
}
ASSESS_SYSTEM = (
    "You maintain an agent's opinions. Given one opinion and one new piece of evidence, "
    "say whether the evidence reinforces, weakens or contradicts the opinion, or is neutral "
    "to it, with a one-sentence reason. Only if it contradicts the opinion, you may give "
    "revised_opinion: the opinion rewritten to fit the evidence; otherwise null. "
    'Answer JSON only: {"relation": ..., "reason": ..., "revised_opinion": ...}.'
)
ASSESS_EXAMPLE_REASON = "The evidence shows the same preference again."
MAX_REASON_CHARS = 500


def _validate_assessment(value: Any) -> Assessment:
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    relation = str(value["relation"]).strip().lower()
    aliases = {"reinforces": "reinforce", "weakens": "weaken", "contradicts": "contradict"}
    relation = aliases.get(relation, relation)
    if relation not in {r.value for r in Relation}:
        raise ValueError("relation must be one of reinforce, weaken, contradict, neutral")
    reason = value.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("reason must be a non-empty string")
    revised = value.get("revised_opinion")
    new_text = revised.strip() if isinstance(revised, str) and revised.strip() else None
    if relation != Relation.CONTRADICT:
        new_text = None
    return Assessment(Relation(relation), reason.strip()[:MAX_REASON_CHARS], new_text, "llm")


def assess_llm(lm: LanguageModel, evidence: str, opinion: str, confidence: float) -> Assessment:
    """The model's assessment; raises LanguageModelError when it gives none usable."""
    prompt = (
        f"Opinion (confidence {confidence:.2f}): {opinion}\n"
        f"New evidence: {evidence}\n"
        "Does the evidence reinforce, weaken or contradict the opinion, or is it neutral?"
    )
    assessment = lm.structured(
        ASSESS_SYSTEM,
        prompt,
        ASSESS_SCHEMA,
        _validate_assessment,
        examples=(ASSESS_EXAMPLE_REASON,),
    )
    if assessment.new_text is not None and assessment.new_text.strip() == opinion.strip():
        assessment = Assessment(assessment.relation, assessment.reason, None, "llm")
    return assessment


# -- planning over one document -------------------------------------------------------


@dataclass
class OpinionState:
    """An opinion as it evolves while a document's evidence is applied."""

    id: str
    text: str
    confidence: float
    vector: np.ndarray
    entity_ids: frozenset[str]
    source_ids: frozenset[str] = frozenset()
    # Who holds it: the speakers of its source turns (casefolded).
    holders: frozenset[str] = frozenset()
    new: bool = False
    text_changed: bool = False
    touched: bool = False


@dataclass
class OpinionPlan:
    states: dict[str, OpinionState] = field(default_factory=dict)
    events: list[OpinionEvent] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)  # why the model was not used

    @property
    def updated(self) -> list[OpinionState]:
        """Existing opinions whose confidence or text changed."""
        return [s for s in self.states.values() if s.touched and not s.new]

    @property
    def assessed(self) -> int:
        """Opinions (existing or new) that moved under evidence."""
        return len({e.opinion_id for e in self.events if e.relation != FORMED})


def load_opinions(
    con: duckdb.DuckDBPyConnection, exclude_units: Sequence[str] = ()
) -> dict[str, OpinionState]:
    """Every active opinion with its vector and entities (opinions are few next to facts)."""
    rows = con.execute(
        "SELECT u.id, u.text, coalesce(u.confidence, 0.5), u.vector,"
        " list(m.entity_id) FILTER (WHERE m.entity_id IS NOT NULL), u.source_ids,"
        " (SELECT list(DISTINCT lower(t.speaker)) FROM turns t"
        "  WHERE t.document_id = u.document_id AND list_contains(u.source_ids, t.id))"
        " FROM units u LEFT JOIN mentions m ON m.unit_id = u.id"
        " WHERE u.network = 'opinion' AND u.status = 'active' AND NOT list_contains(?, u.id)"
        " GROUP BY u.id, u.text, u.confidence, u.vector, u.source_ids, u.created_at,"
        " u.document_id"
        " ORDER BY u.created_at, u.id",
        [list(exclude_units)],
    ).fetchall()
    return {
        r[0]: OpinionState(
            id=r[0],
            text=r[1],
            confidence=float(r[2]),
            vector=np.asarray(r[3], dtype=np.float32),
            entity_ids=frozenset(r[4] or ()),
            source_ids=frozenset(r[5] or ()),
            holders=frozenset(r[6] or ()),
        )
        for r in rows
    }


def related_opinions(
    states: Sequence[OpinionState],
    vector: np.ndarray,
    entity_ids: frozenset[str],
    *,
    related_similarity: float,
    entity_similarity: float,
    limit: int,
    exclude: str | None = None,
    source_ids: frozenset[str] = frozenset(),
    speakers: frozenset[str] = frozenset(),
    holder_similarity: float | None = None,
) -> list[tuple[OpinionState, float]]:
    """The opinions a fact may be evidence for, most similar first. An opinion
    built from the same turns as the fact is not evidence for itself.

    A fact spoken by the opinion's holder (`speakers`, casefolded) is related from
    `holder_similarity` on: what the same person says later about the same
    thing is the evidence a conversation gives for or against a view."""
    candidates = [s for s in states if s.id != exclude and not (s.source_ids & source_ids)]
    if not candidates or limit <= 0:
        return []
    matrix = np.stack([s.vector for s in candidates])
    sims = matrix @ np.asarray(vector, dtype=np.float32)
    out = []
    for state, sim in zip(candidates, sims, strict=True):
        sim = float(sim)
        own = holder_similarity is not None and bool(state.holders & speakers)
        if (
            sim >= related_similarity
            or (state.entity_ids & entity_ids and sim >= entity_similarity)
            or (own and sim >= holder_similarity)
        ):
            out.append((state, sim))
    out.sort(key=lambda pair: -pair[1])
    return out[:limit]


def event(
    opinion: OpinionState,
    relation: str,
    before: float | None,
    happened_at: datetime,
    evidence_id: str | None,
    reason: str,
    old_text: str | None = None,
    new_text: str | None = None,
) -> OpinionEvent:
    return OpinionEvent(
        id=new_id(),
        opinion_id=opinion.id,
        happened_at=happened_at,
        relation=relation,
        confidence_before=before,
        confidence_after=opinion.confidence,
        evidence_id=evidence_id,
        reason=reason,
        old_text=old_text,
        new_text=new_text,
    )


# -- storage --------------------------------------------------------------------------


def write_events(con: duckdb.DuckDBPyConnection, events: Sequence[OpinionEvent]) -> None:
    if not events:
        return

    def column(name: str, kind: pa.DataType) -> pa.Array:
        return pa.array([getattr(e, name) for e in events], kind)

    table = pa.table(
        {
            "id": column("id", pa.string()),
            "opinion_id": column("opinion_id", pa.string()),
            "happened_at": column("happened_at", pa.timestamp("us")),
            "relation": column("relation", pa.string()),
            "confidence_before": column("confidence_before", pa.float64()),
            "confidence_after": column("confidence_after", pa.float64()),
            "evidence_id": column("evidence_id", pa.string()),
            "reason": column("reason", pa.string()),
            "old_text": column("old_text", pa.string()),
            "new_text": column("new_text", pa.string()),
        }
    )
    con.register("_new_events", table)
    try:
        con.execute("INSERT INTO opinion_events BY NAME SELECT * FROM _new_events")
    finally:
        con.unregister("_new_events")


def write_opinion_updates(
    con: duckdb.DuckDBPyConnection, states: Sequence[OpinionState], now: datetime
) -> list[str]:
    """Store the new confidence (and text and vector, when rewritten) of existing
    opinions; returns the ids whose text changed (their index entries must follow)."""
    if not states:
        return []
    table = pa.table(
        {
            "id": pa.array([s.id for s in states], pa.string()),
            "confidence": pa.array([s.confidence for s in states], pa.float64()),
            "text": pa.array([s.text for s in states], pa.string()),
            "vector": pa.array(
                [s.vector.astype(np.float32) for s in states], pa.list_(pa.float32())
            ),
        }
    )
    con.register("_opinion_updates", table)
    try:
        con.execute(
            "UPDATE units SET confidence = n.confidence, text = n.text, vector = n.vector,"
            " updated_at = ? FROM _opinion_updates n WHERE units.id = n.id",
            [now],
        )
    finally:
        con.unregister("_opinion_updates")
    return [s.id for s in states if s.text_changed]


def events_of(con: duckdb.DuckDBPyConnection, opinion_id: str) -> list[OpinionEvent]:
    """An opinion's history, oldest first."""
    rows = con.execute(
        "SELECT id, opinion_id, happened_at, relation, confidence_before, confidence_after,"
        " evidence_id, reason, old_text, new_text FROM opinion_events WHERE opinion_id = ?"
        " ORDER BY happened_at, CASE relation WHEN 'formed' THEN 0 ELSE 1 END, rowid",
        [opinion_id],
    ).fetchall()
    return [OpinionEvent(*r) for r in rows]


def latest_events(
    con: duckdb.DuckDBPyConnection, opinion_ids: Sequence[str]
) -> dict[str, datetime]:
    """The time of each opinion's latest event (bank time), for those that have one."""
    if not opinion_ids:
        return {}
    rows = con.execute(
        "SELECT opinion_id, max(happened_at) FROM opinion_events"
        " WHERE opinion_id IN (SELECT unnest(?)) GROUP BY opinion_id",
        [list(opinion_ids)],
    ).fetchall()
    return {opinion_id: at for opinion_id, at in rows}
