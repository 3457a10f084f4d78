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

`apply_evidence` moves the confidence by the paper's rule, each step scaled by
the evidence's weight w = strength × independence: reinforce c' = min(c+wα, 1),
weaken max(c−wα, 0), contradict max(c−2wα, 0), neutral c. Strength is how
plainly the evidence bears on the opinion (the rules: how similar and how
much of the topic they share, halved when the evidence is hedged; a model may
say). Independence is how much the evidence adds to what the opinion already
heard: half when the opinion's own holder says it again, and 1/(1+n) for the
(n+1)-th piece from the same speaker in the same document. So a remark made
once counts once, and a belief does not reach certainty by being repeated.

Each non-neutral step is an `opinion_events` row (time, relation, before,
after, evidence unit, reason, old and new text, strength, independence); a
neutral assessment changes nothing and is not recorded. A new opinion gets a
`formed` event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
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


def apply_evidence(
    confidence: float, relation: Relation | str, alpha: float, weight: float = 1.0
) -> float:
    """The confidence after one piece of evidence of `weight` (strength ×
    independence, in [0, 1]), clamped to [0, 1].

    reinforce: min(c+wα, 1); weaken: max(c−wα, 0); contradict: max(c−2wα, 0); neutral: c."""
    relation = Relation(relation)
    c = float(confidence)
    step = alpha * min(max(float(weight), 0.0), 1.0)
    if relation is Relation.REINFORCE:
        c = min(c + step, 1.0)
    elif relation is Relation.WEAKEN:
        c = max(c - step, 0.0)
    elif relation is Relation.CONTRADICT:
        c = max(c - 2 * step, 0.0)
    return min(max(c, 0.0), 1.0)


# Independence of evidence from the opinion's own holder (saying it again).
SELF_INDEPENDENCE = 0.5


def independence(heard: int, same_holder: bool) -> float:
    """How much a piece of evidence adds: 1/(1 + `heard`), `heard` being how many
    pieces the opinion already took from the same speaker and document, halved
    when that speaker holds the opinion."""
    return (SELF_INDEPENDENCE if same_holder else 1.0) / (1 + max(heard, 0))


@dataclass(frozen=True)
class Assessment:
    relation: Relation
    reason: str
    new_text: str | None = None  # a rewrite of a contradicted opinion
    mode: str = "rules"
    strength: float = 1.0  # how plainly the evidence bears on the opinion, in [0, 1]


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
    strength: float | None = None  # None: a step recorded before weights existed
    independence: float | None = None

    @property
    def weight(self) -> float:
        """The step's weight in the reinforcement rule (1 when not recorded)."""
        if self.strength is None or self.independence is None:
            return 1.0
        return self.strength * self.independence


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
    moments view views opinion opinions mind change changes changed
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


def topic_stems(text: str) -> set[str]:
    """The words of a text that can carry its topic, cut to their first five letters
    (a crude stem: "adopt", "adopted", "adoption" meet)."""
    cased = [w.replace("’", "'") for w in _WORDS.findall(text)]
    words = [w.lower() for w in cased]
    bases = [w.split("'")[0] for w in words]  # "they're" -> "they", "Mel's" -> "mel"
    return {
        w[:5]
        for i, w in enumerate(bases)
        if len(w) >= 4
        # "that movie", "this sunset": a thing pointed at in the chat, not a subject
        # two reactions share by its word ("that movie is awesome", "writing a movie").
        # A name after "that" is no thing pointed at ("my view that Kubernetes is …").
        and (i == 0 or words[i - 1] not in _DEMONSTRATIVES or cased[i][0].isupper())
        and w not in _NO_TOPIC
        and w not in _POSITIVE
        and w not in _NEGATIVE
        and w not in _NEGATIONS
        and w not in _HEDGES
        and w not in _JUDGMENTS
    }


def name_stems(names: frozenset[str]) -> set[str]:
    return {w[:5] for name in names for w in _words(name)}


def has_topic(text: str, names: frozenset[str] = frozenset()) -> bool:
    """`text` names something an opinion can be about, once the `names` of the people
    talking (casefolded) are set aside: "Yeah John, it's super important" does not."""
    return bool(topic_stems(text) - name_stems(names))


def _addresses(text: str, others: frozenset[str]) -> bool:
    """The statement is about the listener: it says "you"/"your" or names one of
    the `others` talking ("Wow Mel, that painting's amazing", "a painting of
    Caroline's"), by a name or its first letters. Of a question and its answer,
    the answer."""
    _, answered, answer = text.rpartition(" answered: ")
    text = answer if answered else _ASKED.sub("", text, count=1)
    text = _REPORTING.sub("", text, count=1)
    if _SECOND_PERSON.search(text):
        return True
    return any(
        len(word) >= 3 and name.startswith(key)
        for word in _NAME.findall(text)
        if word[0].isupper() and (key := word.casefold().split("'")[0]) not in _CALENDAR
        for name in others
    )


# The reported question before an answer ("Mel asked Jo whether Jo has pets; …").
_ASKED = re.compile(r'^(?:[^;"]|"[^"]*")*?\basked\b(?:[^;"]|"[^"]*")*;\s*')
# The frame of reported speech ("Bob thinks …", "Bob said that …"): it names who
# speaks, not whom the statement is about.
_REPORTING = re.compile(
    r"^[^\W\d_][\w'’-]*(?:\s+[^\W\d_][\w'’-]*)?\s+(?:thinks|said\s+that|believes)\s+"
)
# Month and day names, which a date label puts in every fact ("(8 May 2023)").
_CALENDAR = wordset(
    """
    january february march april may june july august september october november
    december monday tuesday wednesday thursday friday saturday sunday
    """
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
    names = name_stems(holders | participants)
    ours, theirs = topic_stems(evidence) - names, topic_stems(opinion) - names
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
    r"I\s+now\s+(?:think|believe|expect|prefer)|(?:have|had)\s+to\s+revise|"
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


# How a speaker says what new evidence does to a belief they hold: it bears it out
# ("that matches what I thought", "it reinforces my view", "more confident than
# ever") or shakes it ("makes me less sure", "a better sign than I expected").
_BEARS_OUT = re.compile(
    r"\b(?:reinforces?|reinforced|confirms?|confirmed|matches|matched|bears?\s+out|fits)\b"
    r"[^.!?]{0,40}\b(?:what\s+I|my)\b|\bas\s+I\s+(?:thought|expected|said)\b"
    r"|\bmore\s+(?:confident|certain|sure|convinced)\b|\bonce\s+again\b",
    re.I,
)
_SHAKES = re.compile(
    r"\bless\s+(?:sure|certain|confident|convinced)\b|\bnot\s+so\s+sure\b"
    r"|\b(?:better|worse)\s+(?:sign|news|result)?\s*than\s+I\s+(?:expected|thought)\b"
    r"|\bI\s+(?:still\s+)?lean\s+toward",
    re.I,
)


def _stance_shift(evidence: str) -> Relation | None:
    """What the evidence says it does to the speaker's belief, by its own words."""
    if _SHAKES.search(evidence):
        return Relation.WEAKEN
    if _BEARS_OUT.search(evidence):
        return Relation.REINFORCE
    return None


def _strength(
    evidence: str,
    opinion: str,
    similarity: float,
    names: frozenset[str],
    *,
    hedge: bool = False,
) -> float:
    """How plainly `evidence` bears on `opinion`, in [0.1, 1]: their similarity
    (0.5 -> nothing, 0.9 and above -> all) times how much of the shorter topic they
    share (half to all), halved when the evidence is hedged."""
    near = min(max((similarity - 0.5) / 0.4, 0.0), 1.0)
    stems = name_stems(names)
    ours, theirs = topic_stems(evidence) - stems, topic_stems(opinion) - stems
    cover = len(ours & theirs) / min(len(ours), len(theirs)) if ours and theirs else 0.0
    strength = near * (0.5 + 0.5 * cover) * (0.5 if hedge else 1.0)
    return round(min(max(strength, 0.1), 1.0), 2)


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
    """Relation of `evidence` to `opinion` from their similarity and polarity cues,
    with its strength (`_strength`; a reversal cue is plain: 1).

    Evidence from the opinion's own holder counts from `holder_similarity` on,
    and then only through polarity (both sides must carry a sentiment cue) or a
    reversal cue: a person judging the same thing again."""
    pe, po = polarity(evidence), polarity(opinion)
    sim = f"similarity {similarity:.2f}"
    names = holders | participants

    def found(relation: Relation, why: str, hedge: bool = False, plain: bool = False) -> Assessment:
        strength = 1.0 if plain else _strength(evidence, opinion, similarity, names, hedge=hedge)
        return Assessment(relation, why, strength=strength)

    if (
        same_holder
        and similarity >= holder_similarity
        and (
            similarity < RULES_MIN_SIMILARITY
            or (not shared_entity and similarity < RULES_STRONG_SIMILARITY)
        )
    ):
        # What the holder says of their own earlier belief ("I thought …, but now",
        # "it reinforces my view that …") names it: two topic words are enough.
        about_it = _reversal(evidence) is not None or _stance_shift(evidence) is not None
        if not shares_topic(
            evidence,
            opinion,
            holders,
            participants=participants,
            strict=not about_it,
            one_word=shared_entity,
        ):
            # "Good to talk to you again" says nothing about "helping out is great":
            # sentiment alone is everywhere in small talk.
            return Assessment(Relation.NEUTRAL, f"{sim}, same holder, no word of the topic")
        reversal = _reversal(evidence)
        if reversal and not _reversal(opinion):
            return found(
                Relation.CONTRADICT,
                f"{sim}, same holder, reversal cue {reversal.group(0)!r}",
                plain=True,
            )
        shift = _stance_shift(evidence)
        if shift is not None:
            return found(shift, f"{sim}, same holder, the evidence says it {shift.value}s it")
        if pe and po:
            if pe == po:
                return found(Relation.REINFORCE, f"{sim}, same holder, same polarity")
            return found(Relation.WEAKEN, f"{sim}, same holder, opposite polarity")
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
        return found(Relation.CONTRADICT, f"{sim}, reversal cue {reversal.group(0)!r}", plain=True)
    shift = _stance_shift(evidence)
    if shift is not None:
        return found(shift, f"{sim}, the evidence says it {shift.value}s it")
    if pe and po:
        if pe == po:
            return found(Relation.REINFORCE, f"{sim}, same polarity")
        if similarity >= CONTRADICTION_SIMILARITY:
            return found(Relation.CONTRADICT, f"{sim}, opposite polarity")
        return found(Relation.WEAKEN, f"{sim}, opposite polarity")
    if hedged(evidence) and similarity >= CONTRADICTION_SIMILARITY:
        return found(Relation.WEAKEN, f"{sim}, the evidence is hedged", hedge=True)
    if similarity >= RESTATEMENT_SIMILARITY:
        if pe < 0 and po == 0:
            return found(Relation.WEAKEN, f"{sim}, negative evidence")
        return found(Relation.REINFORCE, f"{sim}, the evidence restates it")
    return Assessment(Relation.NEUTRAL, f"{sim}, no polarity cue decides")


# -- language model -------------------------------------------------------------------

ASSESS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "relation": {"type": "string", "enum": [r.value for r in Relation]},
        "reason": {"type": "string"},
        "revised_opinion": {"type": ["string", "null"]},
        "strength": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    },
    "required": ["relation", "reason"],
}
ASSESS_SYSTEM = (
    "You maintain an agent's opinions. Given one opinion and one new piece of evidence, "
    "say whether the evidence reinforces, weakens or contradicts the opinion, or is neutral "
    "to it (evidence about a different thing is neutral), with a one-sentence reason, and "
    "its strength from 0 to 1: how plainly it bears on the opinion (1 states the same "
    "thing or its opposite outright, 0.3 only hints at it). Only if it contradicts the "
    "opinion, you may give revised_opinion: the opinion rewritten to fit the evidence; "
    "otherwise null. "
    'Answer JSON only: {"relation": ..., "reason": ..., "strength": ..., '
    '"revised_opinion": ...}.'
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
    strength = value.get("strength")
    if isinstance(strength, bool) or not isinstance(strength, int | float) or strength != strength:
        strength = 1.0  # not given (or not a number): the model's word counts fully
    return Assessment(
        Relation(relation),
        reason.strip()[:MAX_REASON_CHARS],
        new_text,
        "llm",
        round(min(max(float(strength), 0.0), 1.0), 2),
    )


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
        assessment = replace(assessment, new_text=None)
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
    # Evidence taken so far, per source (`evidence_source`): how often each spoke.
    heard: dict[str, int] = field(default_factory=dict)
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


def evidence_source(speaker: str, document_id: str | None) -> str:
    """Whose word a piece of evidence is, for independence: its speaker in its document."""
    return f"{speaker.strip().casefold()}\x1f{document_id or ''}"


def _heard(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, int]]:
    """opinion id -> evidence source -> steps it gave (of the stored events)."""
    rows = con.execute(
        "SELECT e.opinion_id, u.document_id, t.speaker, count(*) FROM opinion_events e"
        " JOIN units u ON u.id = e.evidence_id"
        " LEFT JOIN turns t ON t.document_id = u.document_id"
        "  AND t.id = list_extract(u.source_ids, -1)"
        " WHERE e.relation IN ('reinforce', 'weaken', 'contradict')"
        " GROUP BY ALL"
    ).fetchall()
    out: dict[str, dict[str, int]] = {}
    for opinion_id, document_id, speaker, n in rows:
        key = evidence_source(speaker or "", document_id)
        out.setdefault(opinion_id, {})[key] = out.get(opinion_id, {}).get(key, 0) + n
    return out


def load_opinions(
    con: duckdb.DuckDBPyConnection, exclude_units: Sequence[str] = ()
) -> dict[str, OpinionState]:
    """Every active opinion with its vector, entities, holders and the evidence it
    heard (opinions are few next to facts).

    Four flat queries (the opinions, their mentions, their holders, the evidence
    heard), not a subquery per opinion: retain loads them for every document,
    and an agent's documents are one turn each."""
    rows = con.execute(
        "SELECT u.id, u.text, coalesce(u.confidence, 0.5), u.vector, u.source_ids"
        " FROM units u"
        " WHERE u.network = 'opinion' AND u.status = 'active' AND NOT list_contains(?, u.id)"
        " ORDER BY u.created_at, u.id",
        [list(exclude_units)],
    ).fetchall()
    if not rows:
        return {}
    ids = [r[0] for r in rows]
    entities: dict[str, set[str]] = {}
    for unit_id, entity_id in con.execute(
        "SELECT unit_id, entity_id FROM mentions"
        " WHERE unit_id IN (SELECT unnest(?)) AND entity_id IS NOT NULL",
        [ids],
    ).fetchall():
        entities.setdefault(unit_id, set()).add(entity_id)
    holders: dict[str, set[str]] = {}
    for unit_id, speaker in con.execute(
        "SELECT DISTINCT o.id, lower(t.speaker) FROM"
        " (SELECT id, document_id, unnest(source_ids) AS turn_id FROM units"
        "  WHERE id IN (SELECT unnest(?))) o"
        " JOIN turns t ON t.document_id = o.document_id AND t.id = o.turn_id",
        [ids],
    ).fetchall():
        holders.setdefault(unit_id, set()).add(speaker)
    heard = _heard(con)
    return {
        r[0]: OpinionState(
            id=r[0],
            text=r[1],
            confidence=float(r[2]),
            vector=np.asarray(r[3], dtype=np.float32),
            entity_ids=frozenset(entities.get(r[0], ())),
            source_ids=frozenset(r[4] or ()),
            holders=frozenset(holders.get(r[0], ())),
            heard=dict(heard.get(r[0], {})),
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
    strength: float | None = None,
    independence: float | None = None,
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
        strength=strength,
        independence=independence,
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
            "strength": column("strength", pa.float64()),
            "independence": column("independence", pa.float64()),
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
        " evidence_id, reason, old_text, new_text, strength, independence"
        " FROM opinion_events WHERE opinion_id = ?"
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
