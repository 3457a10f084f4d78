"""Rules-mode extraction: narrative facts from an exchange without a language model.

Deterministic and fast (plain regular expressions; the whole LoCoMo dev split
extracts in seconds). Each fact keeps its speaker's words nearly verbatim,
because retrieval quality depends on not losing them, and only makes them
stand on their own:

- attribution: "Caroline said: …", or a narrative sentence when the turn
  starts with the speaker ("I went …" -> "Caroline went …");
- first-person pronouns become the speaker's name ("my" -> "Caroline's"),
  with the verb after "I" put in the third person where that is cheap; the
  unambiguous second-person forms ("your", "you're") become the addressee;
- a short question and its short answer become one fact
  ("Melanie asked: …? Caroline answered: …");
- the occurrence date in words at the end: a relative expression
  ("yesterday") resolved against the session date, else the session day;
- a turn whose cue phrase joins two clauses ("because", "so that", "as a
  result", "therefore", "that's why"), each with enough words to stand alone,
  becomes two facts linked both ways (causes / caused_by). Cues before a noun
  phrase ("due to the rain", "led to", "caused", "because of the rain") and
  clauses too short to stand alone keep the relation inside one fact's text.

Networks: belief and preference cues -> opinion (confidence from hedging
words); the agent's own first-person statements -> experience; else world.
Entities: the speakers (persons), capitalised spans, and the bank's known
entities found in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from core.retain.extract import (
    CausalRelation,
    EntityMention,
    Exchange,
    ExtractedFact,
)
from core.retain.gazetteer import is_place, is_region
from core.retain.narrate import ask, lower_first, reported, strip_opener, supply_subject
from core.retain.networks import BankAgent, worth_keeping
from core.retain.pronouns import ADVERBS, apostrophes, rewrite_pronouns
from core.retain.statements import FILLER_WORDS, rewrite_is_safe, split_turn
from core.timeparse import find_time_expressions
from core.types import ExtractionMode, Network, Turn

__all__ = ["RulesExtractor", "describe_interval", "opinion_confidence", "rewrite_pronouns"]

# An answer's first statement this short (words) leans on the question it answers,
# which is kept before it in the same fact when the question is short enough.
QA_MAX_QUESTION_WORDS = 25
QA_MAX_ANSWER_WORDS = 15
# An answer this long (words) stands without the question it answers restated.
QA_STANDALONE_WORDS = 10
# Each side of a causal cue needs this many words to stand as a fact of its own.
MIN_SPLIT_WORDS = 4
# Strength of a causal link found by a cue phrase (a model may be surer).
CUE_STRENGTH = 0.5
# Confidence of a plainly stated preference ("I love …") with no hedging word.
PLAIN_OPINION_CONFIDENCE = 0.7

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
# Known entity names match whole words, whatever follows ("Caroline's").
_NAME_WORD = re.compile(r"\w+")


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_SECOND_PERSON = re.compile(r"\b(?:your|yours|yourself|you['’](?:re|ve|ll|d))\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(
    r"\bI\b|\bI['’](?:m|ve|d|ll)\b|\b(?:me|my|mine|myself|we|our|ours|us)\b", re.IGNORECASE
)

# ---- opinions ------------------------------------------------------------------

# The speaker's own stance: "I think", "I'm fairly sure", "I was worried", "my view".
_OWN_STANCE = (
    r"\bI\s+(?:(?:really|truly|honestly|still|just|do|personally|strongly|now|also|actually"
    r"|already|always|never|kind\s+of|sort\s+of)\s+)*"
    r"(?:think|thought|believe|believed|feel|reckon|suppose|guess|doubt|doubted|expect|suspect"
    r"|lean\s+toward|bet)\b"
    r"|\bI(?:['’]m|\s+am|\s+was|\s+have\s+been|['’]ve\s+been)\s+(?:(?:pretty|quite|so|very"
    r"|totally|absolutely|fairly|not|still|really|a\s+bit|less|more|now|no\s+longer)\s+)*"
    r"(?:sure|certain|convinced|positive|confident|worried|afraid|concerned|hopeful"
    r"|optimistic|skeptical|sceptical|doubtful|wrong|right)\b"
    r"|\bmakes?\s+me\s+(?:(?:a\s+bit|much|even)\s+)?(?:less|more)\s+(?:sure|certain|confident"
    r"|worried|optimistic)\b"
    r"|\b(?:my|I\s+have\s+to\s+revise\s+my)\s+(?:view|opinion|guess|bet|sense|feeling"
    r"|impression|belief|hunch|worry|concern)\b"
)
_OWN_STANCE_RE = re.compile(_OWN_STANCE, re.IGNORECASE)
# Preferences in the first person ("I love", "we prefer", "my favourite"): another's
# preference ("Tomás prefers …") is a fact about them, whoever tells it.
_OWN_PREFERENCE = re.compile(
    r"\b(?:I|we)\s+(?:(?:really|just|totally|truly|so|absolutely|also|still|do|would|no\s+longer"
    r"|don['’]t|do\s+not|never|not)\s+)?"
    r"(?:love|loved|hate|hated|prefer|preferred|adore|enjoy|enjoyed)\b|\bI['’]d\s+(?:love|prefer)\b"
    r"|\bmy\s+favou?rite\b",
    re.IGNORECASE,
)
_OPINION_CUES = re.compile(
    _OWN_STANCE + r"|\b(?:probably|should|seems?|seemed)\b"
    # Preferences: the verb, not the noun ("all the love") nor "loved ones".
    r"|(?:\b(?:I|we|you|they|he|she|really|just|totally|truly|so|absolutely|would|also|still"
    r"|to)\s+|['’]d\s+|^\s*|[.!?]\s+)(?:love|hate|prefer|adore)\b"
    r"|\b(?:loves|hates|hated|prefers|preferred|adores)\b|\bloved\b(?!\s+ones?\b)"
    r"|\bin\s+my\s+(?:opinion|view)\b|\bmy\s+favou?rite\b",
    re.IGNORECASE,
)
_PREFERENCES = ("love", "loves", "loved", "adore", "adores")
# An evaluation: something is judged good or bad ("the event was awesome", "it's
# so hard", "that sounds boring"). Intensifiers may come between.
_EVALUATIVE = re.compile(
    r"\b(?:is|are|was|were|['’]s|['’]re|be|been|looks?|looked|sounds?|sounded|feels?|felt"
    r"|seems?|seemed|find|found)\s+"
    r"(?:(?:so|really|very|pretty|super|truly|absolutely|totally|quite|such|too|most"
    r"|incredibly|extremely|kinda|kind\s+of|a|an|the|bit|little)\s+)*"
    r"(?:amazing|awesome|great|wonderful|beautiful|terrible|awful|horrible|boring"
    r"|incredible|fantastic|lovely|gorgeous|inspiring|important|hard|tough|difficult|easy"
    r"|fun|worth(?!\s+(?:[$€£\d]|about|around|over|nearly|almost|up\s+to))|worthwhile|overrated|underrated|perfect|best|worst|better|worse|nice"
    r"|exciting|stressful|rewarding|meaningful|valuable|useless|helpful|essential"
    r"|crucial|powerful|special|precious|scary|frustrating|disappointing|impressive"
    r"|brilliant|relaxing|therapeutic|healing|challenging|tiring|exhausting|cool"
    r"|good|bad|delicious|peaceful|magical|unforgettable|stunning)\b",
    re.IGNORECASE,
)
# Hedging and certainty words with the confidence they imply; the most hedged wins.
_HEDGES: tuple[tuple[re.Pattern[str], float], ...] = (
    (
        re.compile(
            r"\b(?:not\s+(?:so\s+|too\s+|very\s+)?(?:sure|certain)|unsure|(?<!no\s)doubts?)\b", re.I
        ),
        0.3,
    ),
    (re.compile(r"\b(?:maybe|might|perhaps|possibly|probably|guess|could\s+be)\b", re.I), 0.4),
    (re.compile(r"\b(?:think|believe|feel|reckon|suppose|seems?|seemed|should)\b", re.I), 0.6),
    (re.compile(r"\b(?:sure|confident|I\s+know)\b", re.I), 0.8),
    (
        re.compile(
            r"\b(?:certain(?:ly)?|definitely|absolutely|undoubtedly|no\s+doubt|convinced|positive)\b",
            re.I,
        ),
        0.9,
    ),
)


# The listener, or something of theirs, as the subject of a clause: "Your drawings
# look amazing", "Wow, you're awesome" (not "When you're tired, running is hard").
_LISTENER_SUBJECT = re.compile(
    r"(?:^|[,;:!.—–-])\s*(?:\w+ing\s+)?you(?:\s+(?:both|all|two|guys))?(?:r\s+(?:(?!(?:and|but|or|is|are|was|were|because|when|while"
    r"|that|it)\b)[\w'’-]+\s+){0,6}?)?\s*$",
    re.IGNORECASE,
)


# …or what the evaluation is about, after it: "It's great that you're helping out",
# "so cool to see how you've grown".
_LISTENER_COMPLEMENT = re.compile(
    r"\s*(?:that|how|when|to\s+(?:see|hear|know|watch)(?:\s+(?:that|how))?)\s+(?:you|your)\b",
    re.IGNORECASE,
)


def _compliment(text: str) -> bool:
    """Every evaluation in `text` judges the listener or their things: a compliment
    tends the conversation; it is no belief of the speaker's about the world."""
    found = list(_EVALUATIVE.finditer(text))
    return bool(found) and all(
        _LISTENER_SUBJECT.search(text[: m.start()]) or _LISTENER_COMPLEMENT.match(text, m.end())
        for m in found
    )


# A preference for the listener's things: "Love your creations!", "I love how you…".
_LISTENER_OBJECT = re.compile(r"\s+(?:how\s+|that\s+|seeing\s+)?(?:you|your)\b", re.IGNORECASE)


def _stated_belief(text: str) -> bool:
    """A belief or preference cue that is not a compliment to the listener."""
    return any(
        not (
            m.group(0).strip().lower().endswith(_PREFERENCES)
            and _LISTENER_OBJECT.match(text, m.end())
        )
        for m in _OPINION_CUES.finditer(text)
    )


_QUOTED = re.compile(r"[\"“”]")


def _opinion_of(text: str) -> float | None:
    """The confidence of the speaker's own statement as their belief, or None.

    A stance in the first person ("I think", "I'm worried", "my view") or a
    preference of the speaker's own ("I love") makes a belief. Without one, a
    statement that tells what happened ("My dad passed away last month; it was so
    hard", "I booked the call since that is how he prefers to work") is a fact of
    that event, and one that reports another's preference ("Tomás prefers live
    pairing now") a fact about them, even when they judge."""
    confidence = opinion_confidence(text)
    if confidence is None or _OWN_STANCE_RE.search(text) or _OWN_PREFERENCE.search(text):
        return confidence
    if _THIRD_PREFERENCE.search(text):
        return None
    if _EVENT.search(text) and not any(
        m.group(0).split()[0].lower().replace("’", "'") in _PRESENT_JUDGING
        for m in _EVALUATIVE.finditer(text)
    ):
        return None  # what happened, judged: "it was so hard" (not "adoption is wonderful")
    return confidence


_PRESENT_JUDGING = frozenset(
    "is are 's 're be look looks sound sounds feel feels seem seems find".split()
)


# A past-tense verb that tells something happened: not "was"/"were", which judge
# as often ("The concert was amazing").
_EVENT = re.compile(
    r"\b(?:had|did|went|got|made|took|saw|came|found|met|began|became|bought|brought|told"
    r"|said|spent|left|kept|heard|held|ran|sat|won|lost|wrote|gave|grew|drove|ate|flew|rode"
    r"|sang|swam|wore|built|chose|broke|fell|died|[a-z]{2,}ed)\b",
    re.IGNORECASE,
)


def _judges(text: str) -> bool:
    """The statement judges something or hedges a guess: what its speaker thinks
    ("that agency looks great", "it should work"), as against what they report."""
    text = _CAPTION.sub("", text)
    return any(p.search(text) for p in (_HEDGED_GUESS, _EVALUATIVE, _OWN_STANCE_RE))


_HEDGED_GUESS = re.compile(r"\b(?:probably|should|seems?|seemed|maybe|might|perhaps)\b", re.I)
_THIRD_PREFERENCE = re.compile(r"\b(?:loves|hates|prefers|preferred|adores|enjoys)\b", re.I)


def opinion_confidence(text: str) -> float | None:
    """None when `text` states no belief or preference (a compliment to the listener
    is none); else its confidence from hedging."""
    if (
        not _stated_belief(text)
        and not _OWN_PREFERENCE.search(text)
        and (not _EVALUATIVE.search(text) or _compliment(text))
    ):
        return None
    levels = [level for pattern, level in _HEDGES if pattern.search(text)]
    return min(levels) if levels else PLAIN_OPINION_CONFIDENCE


# ---- causal cues ---------------------------------------------------------------

# Cues that join two clauses, each able to stand as a fact: (pattern, cause first?).
# Cues followed by a noun phrase ("because of the rain", "due to", "caused by",
# "led to", "caused") never split: that fact keeps its cue in its text.
_CAUSAL_CUES: tuple[tuple[re.Pattern[str], bool], ...] = (
    (
        re.compile(
            r"\bbecause\s+of\s+(?:that|this|it)\b|\b(?:that|which)(?:['’]s|\s+is)\s+why\b"
            r"|\bas\s+a\s+result\b(?!\s+of\b)|\btherefore\b"
            # "so that might be fun" is not a purpose clause.
            r"|\bso\s+that\b(?!['’]|\s+(?:is|was|might|would|could|will|should|must|may|can"
            r"|sounds?|seems?|means?|makes?|made|way|much|many)\b)",
            re.I,
        ),
        True,
    ),
    (re.compile(r"\bbecause\b(?!\s+of\b)|['’]cause\b|\bcuz\b", re.I), False),
)
_CAPTION = re.compile(r"\[image[^\]]*\]")
# A cue opening a statement: the statement before it is the cause.
_OPENING_CUE = re.compile(
    r"\s*(?:as\s+a\s+result|therefore|(?:that|this)(?:['’]s|\s+is)\s+why"
    r"|because\s+of\s+(?:that|this|it))\b[\s,]*",
    re.IGNORECASE,
)
# Code in backticks names no entities, nor does a run of capitalised words
# ("CREATE INDEX CONCURRENTLY", "JUST DOING IT"): code or shouting.
_CODE = re.compile(r"`[^`]*`")
_SHOUTING = re.compile(r"\b[A-Z][A-Z'’]+(?:[ \t]+[A-Z][A-Z'’]+)+\b")
_TRIM = " \t\n,;:-–—"


@dataclass(frozen=True)
class _CausalSplit:
    first: str
    second: str
    cause_first: bool


_SENTENCE_END = re.compile(r"[.!?…]+(?=\s|$)|\n")


def _clauses(text: str, start: int, end: int) -> tuple[str, str]:
    """The clause before a cue (its sentence so far, or the previous sentence when the
    cue opens one: "… . Therefore, …") and the clause after it, to its sentence's end."""
    bounds = [m.end() for m in _SENTENCE_END.finditer(text)]
    before_ends = [b for b in bounds if b <= start]
    sentence_start = before_ends[-1] if before_ends else 0
    before = text[sentence_start:start]
    if not _WORD.search(before) and before_ends:
        previous = before_ends[-2] if len(before_ends) > 1 else 0
        before = text[previous:sentence_start]
    after_ends = [b for b in bounds if b > end]
    return before, text[end : after_ends[0] if after_ends else len(text)]


def _causal_split(text: str) -> _CausalSplit | None:
    """Split a turn at its first causal cue whose clauses can each stand as a fact."""
    hidden = [(m.start(), m.end()) for m in _CAPTION.finditer(text)]
    matches = sorted(
        (
            (m.start(), m.end(), cause_first)
            for pattern, cause_first in _CAUSAL_CUES
            for m in pattern.finditer(text)
            if not any(a <= m.start() < b for a, b in hidden)
        ),
        key=lambda match: (match[0], -match[1]),
    )
    taken = -1
    for start, end, cause_first in matches:
        if start < taken:
            continue  # inside a longer cue found first ("because of that" vs "because")
        taken = end
        before, after = _clauses(text, start, end)
        if len(_WORD.findall(before)) < MIN_SPLIT_WORDS:
            continue
        if len(_WORD.findall(after)) < MIN_SPLIT_WORDS:
            continue
        first, second = text[:start].rstrip(_TRIM), text[end:].lstrip(_TRIM)
        return _CausalSplit(first, second, cause_first)
    return None


# ---- entities ------------------------------------------------------------------

# A version keeps its dots: "Beacon 2.0", "Python 3.11".
_ENTITY_TOKEN = re.compile(r"[^\W_](?:[\w'’&-]*[^\W_])?(?:\.\d+)*|[^\w\s]|\n")
# Not quotes: a capital after one is more often a title ("Becoming Nicole") than a sentence.
_SENTENCE_START = frozenset(".!?:;\n([—–-…")
_JOINERS = frozenset({"of", "de", "del", "da", "van", "von", "&"})
_ABBREVIATIONS = frozenset({"Mr", "Mrs", "Ms", "Dr", "St", "Prof", "Jr", "Sr", "Mt"})
_MONTHS_DAYS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday mon tue tues wed thu thur thurs fri sat sun mondays tuesdays "
    "wednesdays thursdays fridays saturdays sundays weekend"
)
_STOP = _wordset(
    _MONTHS_DAYS
    + " i i'm i've i'd i'll me my mine myself we we're we've we'll our ours us you you're "
    "you've you'll you'd your yours yourself he he's his him she she's her hers it it's its "
    "they they're their them this that that's these those there there's here here's "
    "the a an some any every each all no not none both either neither "
    "and but or nor so if when while as at in on of for to from with by after before since "
    "until then also just even still only about into over under up down out off "
    "what what's who who's whom whose which where where's why how how's whatever whenever "
    "hey hi hello wow oh ah aw aww awww yeah yes yep yup nope ok okay thanks thank please "
    "sorry well haha hahaha lol omg btw tbh idk imo cool great awesome nice good sure "
    "totally really definitely absolutely congrats congratulations bye cheers dear "
    "is are was were be been do does did don't didn't doesn't have has had can can't could "
    "would should will won't shall might must let let's may "
    "during through without within across among against around behind beyond like "
    "unlike per via whether although though because once unless plus anyway anyways "
    "maybe perhaps yay hmm um uh "
    "today tomorrow yesterday tonight"
)
_PERSON_TITLES = frozenset({"Mr", "Mrs", "Ms", "Dr", "Prof", "Aunt", "Uncle", "Grandma", "Grandpa"})
_ORG_SUFFIXES = _wordset(
    "inc corp corporation llc ltd co company analytics labs technologies systems bank "
    "university college institute foundation association agency society club school "
    "academy hospital church council ministry"
)
_PLACE_SUFFIXES = _wordset(
    "city park street st avenue ave road lake river mountain mountains mount mt beach "
    "island islands county state valley bay canyon falls forest airport square"
)
_PLACE_BEFORE = frozenset({"in", "near", "around", "visit", "visited", "visiting"})
_PLACE_BEFORE_TO = frozenset(
    {"moved", "move", "moving", "went", "trip", "travelled", "traveled", "flew", "drove", "back"}
)


def _strip_possessive(word: str) -> str:
    for suffix in ("'s", "’s"):
        if word.endswith(suffix) and len(word) > 2:
            return word[: -len(suffix)]
    return word.rstrip("'’")


def _is_capitalised(word: str) -> bool:
    return word[0].isupper() and apostrophes(word).lower() not in _STOP


@dataclass
class _Span:
    words: list[str]
    initial: bool  # begins a sentence
    before: tuple[str, str]  # the two tokens before it, lowercased
    after: str = ""  # the token after it ("'s" after a possessive)
    following: tuple[str, ...] = ()  # the next few tokens after `after`, lowercased
    # The rest of its sentence after `after`, as written (CLAUSE_TOKENS at most).
    clause: tuple[str, ...] = ()


def _capitalised_spans(text: str) -> tuple[list[_Span], set[str]]:
    """Runs of capitalised words, and the casefolded words seen capitalised mid-sentence."""
    spans: list[_Span] = []
    mid: set[str] = set()
    current: _Span | None = None
    initial = True
    recent: list[str] = ["", ""]
    tokens = _ENTITY_TOKEN.findall(text)

    def close(after: str) -> None:
        nonlocal current
        if current is not None:
            current.after = after
            current.following = tuple(t.lower() for t in tokens[k : k + FOLLOWING_TOKENS])
            rest = tokens[k : k + CLAUSE_TOKENS]
            end = next((i for i, t in enumerate(rest) if t in _CLAUSE_END), len(rest))
            current.clause = tuple(rest[:end])
            spans.append(current)
            # A lone capitalised word mid-sentence is a name wherever it appears;
            # a word of a longer name ("Finding Freedom") is not evidence for itself.
            if not current.initial and len(current.words) == 1:
                mid.add(current.words[0].casefold())
            current = None

    k = 0
    while k < len(tokens):
        token = tokens[k]
        k += 1
        if not token[0].isalnum():
            close(token)
            # "Dr." does not end a sentence.
            if token in _SENTENCE_START and not (
                token == "." and recent[-1].title() in _ABBREVIATIONS
            ):
                initial = True
            recent = [recent[-1], token]
            continue
        word = _strip_possessive(token) if token[0].isupper() else token
        if word and (_is_capitalised(word) or (word[0].isdigit() and current is not None)):
            if current is None:
                current = _Span([word], initial, (recent[-2], recent[-1]))
            else:
                current.words.append(word)
        elif current is not None and token.lower() in _JOINERS:
            # "University of Texas", "Lord of the Rings": a joiner only between capitals.
            joined = [token.lower()]
            if token.lower() == "of" and k < len(tokens) and tokens[k] == "the":
                joined.append("the")
            nxt = tokens[k + len(joined) - 1] if k + len(joined) - 1 < len(tokens) else ""
            if nxt[:1].isupper() and apostrophes(nxt).lower() not in _STOP:
                current.words.extend(joined)
                k += len(joined) - 1
            else:
                close(token)
        else:
            close(token)
        initial = False
        recent = [recent[-1], token.lower()]
        if word != token:  # a possessive ends the name…
            nxt = tokens[k] if k < len(tokens) else ""
            if current is not None and len(current.words) == 1 and _is_capitalised(nxt):
                current.words[-1] = token  # …unless a title goes on: "Charlotte's Web"
            else:
                close("'s")
    close("")
    return spans, mid


# Tokens after a span kept as evidence of its type ("Matt Patterson, he is …").
FOLLOWING_TOKENS = 3
# How far into its sentence a pronoun may take a name up ("Dana noticed; she wrote").
CLAUSE_TOKENS = 12
_CLAUSE_END = frozenset(".!?\n")
# A creator's works: "Ed Sheeran's songs", or a quoted title ("Ed Sheeran's \"Perfect\"").
_WORKS = _wordset(
    "song songs music album albums track tracks lyrics voice book books novel novels "
    "poem poems poetry painting paintings films movies memoir quote quotes"
)
_QUOTES = frozenset("\"“‘'")
# "… like X" names a creator after an art form ("classical like Bach").
_ART_FORMS = _wordset(
    "music classical jazz rock pop rap hip-hop folk country opera songs artists artist "
    "singers singer composers composer musicians musician authors author writers writer "
    "poets poet painters painter actors actor rappers"
)
_LISTEN = _wordset("listen listens listened listening")
# A pronoun right after a name, in the same clause, refers to it: "Matt, he is …".
_PERSONAL_PRONOUNS = _wordset("he she he's she's who")


def _creator_or_referred(span: _Span) -> bool:
    """Evidence that a span names a person from what surrounds it: a creator of works,
    someone listened to, or a name a personal pronoun takes up."""
    before2, before1 = span.before
    nxt = span.following[:1]
    if span.after == "'s" and nxt and (nxt[0] in _WORKS or nxt[0] in _QUOTES):
        return True
    if before1 in ("like", "by") and before2 in _ART_FORMS:
        return True
    if before1 == "to" and before2 in _LISTEN:
        return True
    return span.after == "," and nxt[:1] != () and nxt[0] in _PERSONAL_PRONOUNS


_ASKS_WHO = re.compile(r"\bwho(?:['’]s|se|m)?\b", re.IGNORECASE)
_LIST_JOINERS = frozenset({"and", "or", ",", "&"})


_GREETINGS = _wordset(
    "hey hi hello heya hiya yo thanks thank congrats congratulations bye goodbye dear "
    "wow woah whoa woohoo oh aw aww omg go morning night"
)


# Words before a name that say it is a person: "my wife Ana", "her friend Jo".
_PERSON_BEFORE = _wordset(
    "wife husband partner girlfriend boyfriend fiance fiancee friend friends buddy pal "
    "bestie sister brother sis bro mom mum mother dad father mommy daddy son daughter "
    "kid kids baby grandma grandpa grandmother grandfather aunt uncle cousin niece "
    "nephew boss manager colleague coworker co-worker neighbor neighbour teacher coach "
    "mentor doctor therapist roommate classmate named called"
)


# "… at X" is an employer after these words.
_ORG_BEFORE_AT = _wordset(
    "job jobs work works worked working intern interned internship employed career "
    "shift position role"
)


def _nickname(word: str, persons: set[str]) -> bool:
    """A short form of a speaker's first name: "Mel" for Melanie, "Jo" for Joanna."""
    key = word.casefold()
    return len(key) >= 2 and any(
        p.split()[0].startswith(key) and p.split()[0] != key for p in persons if p
    )


# A name these follow is someone who speaks, writes or thinks: "Dana said …",
# "Dana finally replied". (Not verbs an organisation does as often: "accepted", "signed".)
_PERSON_VERBS = _wordset(
    "said says asked asks told tells wrote writes replied replies texted emailed messaged "
    "smiled laughed cried thinks thought believes believed feels felt noticed"
)
# Roles name a position, not who holds it: "the CFO", "our VP of Engineering".
# With a name they are a title instead ("President Lincoln" keeps the name).
_ROLES = _wordset(
    "ceo cfo cto coo cio cmo cpo ciso vp svp evp head director manager president chair "
    "chairman chairwoman chairperson founder cofounder co-founder"
)
# A person's role in an apposition: "Dana Whitfield, their VP of Engineering".
_PERSON_ROLES = _PERSON_BEFORE | _ROLES | _wordset("lead engineer designer developer")
_DETERMINERS = _wordset("their her his our my your the a an")
# A pronoun for a person taking up a name later in its clause. Not "she"/"he": a new
# clause's subject may be anyone ("I love DIYs, and I know she does too").
_TAKES_UP = _wordset("her his him herself himself")
_CLAUSE_BREAKS = frozenset(",;:")


def _person_in_context(span: _Span) -> bool:
    """What follows the span says it is a person: a verb of speaking or thinking
    right after it, a role in apposition, or a possessive or object pronoun later
    in its clause with no other name in between ("invited Dana Whitfield and two of
    her engineers")."""
    if any(w.isupper() for w in span.words):
        return False  # an acronym: "HR said", "sent HR his start date"
    verb = span.following[0] if span.after.lower() in ADVERBS and span.following else span.after
    if verb.lower() in _PERSON_VERBS:
        return True
    if span.after == "," and len(span.following) >= 2:
        determiner, role = span.following[:2]
        if determiner in _DETERMINERS and role in _PERSON_ROLES:
            return True
    for i, token in enumerate((span.after, *span.clause)):
        if not token or token in _CLAUSE_END or token in _CLAUSE_BREAKS or token == "'s":
            return False
        if token.lower() in _TAKES_UP:
            # Right after the name it may be another's: "sent Ana his notes".
            return i > 0
        if _is_capitalised(token):
            return False  # another name comes first: the pronoun may be its
    return False


# After a name, a part of a tool or product: "the Figma file", "a Slack channel".
_PRODUCT_PARTS = _wordset(
    "file files link links app apps account accounts doc docs board boards workspace "
    "channel channels repo repos plugin plugins template templates dashboard dashboards "
    "subscription extension"
)
# Before a name, using it: "we use Figma", "via Slack".
_PRODUCT_USE = _wordset("use uses used using via install installed installing")


def _used_as_product(span: _Span) -> bool:
    return span.after.lower() in _PRODUCT_PARTS or span.before[1] in _PRODUCT_USE


def _span_type(span: _Span, persons: set[str], products: AbstractSet[str] = frozenset()) -> str:
    """The type the evidence around the span supports, person evidence first.

    `products`: names (casefolded) used as a tool or product elsewhere in the
    exchange; that outweighs a preposition ("comment in Figma") and a city's name."""
    name = " ".join(span.words)
    before2, before1 = span.before
    if name.casefold() in persons or span.words[0] in _PERSON_TITLES:
        return "person"
    if before1 in _PERSON_BEFORE or (len(span.words) == 1 and _nickname(name, persons)):
        return "person"
    last = span.words[-1].casefold()
    if last in _ORG_SUFFIXES:
        return "org"
    if last in _PLACE_SUFFIXES or is_region(name):
        return "place"
    if _used_as_product(span) or name.casefold() in products:
        return "product"
    if is_place(name):
        return "place"
    if before1 == "at" and before2 in _ORG_BEFORE_AT:
        return "org"  # "my job at Door Dash"
    if before1 == "by" and len(span.words) >= 2:
        return "person"  # a full name after "by": an author, an artist
    if _creator_or_referred(span) or _person_in_context(span):
        return "person"
    if before1 in _PLACE_BEFORE or (before1 == "to" and before2 in _PLACE_BEFORE_TO):
        return "place"
    # Someone addressed by name: "Hey Mel!", "Thanks, Jo."
    if len(span.words) == 1 and (
        before1 in _GREETINGS or (before1 == "," and span.after in ("!", "?", ".", ","))
    ):
        return "person"
    return "other"


# Chat abbreviations written in capitals that name nothing.
_CHAT_ABBREVIATIONS = _wordset(
    "fyi btw lol lmao omg tbh idk imo imho asap rsvp ttyl brb np thx pls plz aka diy "
    "tl dr tldr irl afaik fwiw smh rofl ikr"
)
# Abbreviations of common nouns: written in capitals, they still name a kind of
# thing ("the API", "two VMs", "a PDF"), not one thing to remember facts about.
_COMMON_ABBREVIATIONS = _wordset(
    "api apis sdk sdks ui ux vm vms url urls pdf pdfs csv csvs json xml html css http https "
    "sql db dbs os cpu gpu ram ssd usb tv pc pcs gps atm kpi kpis okr okrs eta faq faqs "
    "hr pr prs qa ci cd mvp poc wifi wi-fi"
)
# An all-capital word longer than this is a keyword or shouting, not an acronym.
MAX_ACRONYM_LETTERS = 5


def _is_role(words: list[str]) -> bool:
    """ "CFO", "VP of Engineering", "Head of Design": a role and what it is of."""
    return apostrophes(words[0]).casefold() in _ROLES and (len(words) == 1 or words[1] == "of")


def _not_a_name(word: str) -> bool:
    key = apostrophes(word).casefold()
    return key in FILLER_WORDS or key in _CHAT_ABBREVIATIONS


def _shouted(word: str) -> bool:
    return sum(c.isalpha() for c in word) >= 2 and word.isupper()


def _guess_type(name: str, persons: set[str], products: AbstractSet[str] = frozenset()) -> str:
    words = name.split()
    return _span_type(_Span(words, False, ("", "")), persons, products) if words else "other"


class _KnownIndex:
    """Whole-word, case-insensitive lookup of a bank's known entity names in a text."""

    def __init__(self, names: Sequence[str]) -> None:
        self.by_first: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self.words: set[str] = set()
        for name in names:
            words = tuple(w.casefold() for w in _NAME_WORD.findall(name))
            if words:
                self.by_first.setdefault(words[0], []).append((words, name))
                if len(words) == 1:  # a word of a longer name is no name by itself
                    self.words.update(words)

    def find(self, text: str) -> list[str]:
        if not self.by_first:
            return []
        words = [w.casefold() for w in _NAME_WORD.findall(text)]
        found: list[str] = []
        for i, word in enumerate(words):
            for key, name in self.by_first.get(word, ()):
                if tuple(words[i : i + len(key)]) == key and name not in found:
                    found.append(name)
        return found


# ---- time ----------------------------------------------------------------------


# A past-tense verb: a regular "-ed" form or a common irregular one.
_PAST = re.compile(
    r"\b(?:was|were|had|did|went|got|made|took|saw|came|felt|found|met|began|became|"
    r"bought|brought|told|said|spent|left|kept|heard|held|ran|sat|won|wrote|gave|grew|"
    r"drove|ate|flew|rode|sang|swam|wore|built|chose|[a-z]{2,}ed)\b",
    re.IGNORECASE,
)


def _day(when: datetime) -> tuple[datetime, datetime]:
    start = when.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def day_text(d: datetime) -> str:
    """ "4 March 2025": how every date in a memory's text reads."""
    return f"{d.day} {d:%B %Y}"


def describe_interval(start: datetime, end: datetime) -> str:
    """A half-open interval in words: '7 May 2023', 'May 2023', '2022', or a range."""
    midnight = start == start.replace(hour=0, minute=0, second=0, microsecond=0)
    if midnight and end == end.replace(hour=0, minute=0, second=0, microsecond=0):
        if start.day == 1 and start.month == 1 and end == start.replace(year=start.year + 1):
            return f"{start.year}"
        if start.day == 1:
            nxt = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
            if end == nxt:
                return f"{start:%B %Y}"
        last = end - timedelta(days=1)
        if last <= start:
            return day_text(start)
        if last.year == start.year and last.month == start.month:
            return f"{start.day}–{last.day} {start:%B %Y}"
        if last.year == start.year:
            return f"{start.day} {start:%B} – {day_text(last)}"
        return f"{day_text(start)} – {day_text(last)}"
    if (
        end - start <= timedelta(days=1)
        and start.date() == (end - timedelta(microseconds=1)).date()
    ):
        return day_text(start)
    return f"{day_text(start)} – {day_text(end - timedelta(microseconds=1))}"


def _with_date(text: str, label: str | None) -> str:
    text = text.strip()
    if not label:
        return text if text.endswith((".", "!", "?", "]", ")")) else text + "."
    if text.endswith("."):
        return f"{text[:-1].rstrip()} ({label})."
    if text.endswith(("!", "?", "]", ")", "…")):
        return f"{text} ({label})"
    return f"{text} ({label})."


# ---- the extractor ---------------------------------------------------------------


@dataclass(frozen=True)
class _Piece:
    """What one fact is built from: one statement of a turn, maybe with the question
    it answers before it (then `segments` is (question, answer))."""

    segments: tuple[tuple[Turn, str], ...]
    addressee: str | None
    caption: bool = False

    @property
    def question(self) -> bool:
        return len(self.segments) == 2


@dataclass(frozen=True)
class _Group:
    """One fact, or two halves of a statement around a causal cue."""

    pieces: tuple[_Piece, ...]
    cause_first: bool = True


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _addressee(turns: Sequence[Turn], i: int) -> str | None:
    """Whom turn i speaks to: the neighbouring other speaker, if any."""
    me = turns[i].speaker
    for j in (i - 1, i + 1):
        if 0 <= j < len(turns) and turns[j].speaker != me:
            return turns[j].speaker
    others = {t.speaker for t in turns if t.speaker != me}
    return others.pop() if len(others) == 1 else None


def _statement_group(turn: Turn, text: str, addressee: str | None) -> _Group:
    split = _causal_split(text)
    if split is None:
        return _Group((_Piece(((turn, text),), addressee),))
    return _Group(
        (
            _Piece(((turn, split.first),), addressee),
            _Piece(((turn, split.second),), addressee),
        ),
        split.cause_first,
    )


def _plan(turns: Sequence[Turn], names: frozenset[str]) -> list[_Group]:
    """Each turn's statements (statements.py), one group each; the first statement
    of an answer carries the question it answers when it is short."""
    groups: list[_Group] = []
    pending: tuple[Turn, str] | None = None  # the previous turn's last question
    for i, turn in enumerate(turns):
        split = split_turn(turn.text, names)
        addressee = _addressee(turns, i)
        asked = pending if pending is not None and pending[0].speaker != turn.speaker else None
        for n, statement in enumerate(split.statements):
            if statement.caption:
                groups.append(_Group((_Piece(((turn, statement.text),), addressee, True),)))
                continue
            if (
                n == 0
                and asked is not None
                and _words(asked[1]) <= QA_MAX_QUESTION_WORDS
                and (statement.answer_opener or _words(statement.text) <= QA_MAX_ANSWER_WORDS)
            ):
                groups.append(_Group((_Piece((asked, (turn, statement.text)), turn.speaker),)))
                continue
            cue = _OPENING_CUE.match(statement.text)
            last = groups[-1] if n > 0 and groups else None
            if cue and last is not None and len(last.pieces) == 1 and not last.pieces[0].caption:
                # "I lost my job. As a result, we moved.": the statement before is the cause.
                effect = _Piece(((turn, statement.text[cue.end() :]),), addressee)
                groups[-1] = _Group((last.pieces[0], effect), cause_first=True)
                continue
            groups.append(_statement_group(turn, statement.text, addressee))
        pending = (turn, split.question) if split.question else None
    return groups


_WE_WORDS = re.compile(r"\b(?:we|us|our|ours|ourselves|we['’](?:re|ve|ll|d))\b", re.IGNORECASE)
# A name opening a statement, then a comma: the one it is said to.
_VOCATIVE = re.compile(
    r"^\W*(?:(?:good|ok|okay|so|and|well)[,\s]+)?(?P<name>[^\W\d_]+),\s", re.IGNORECASE
)
# A preference whose subject is left out: "Love that painting!", "Loved the show".
_ELIDED_SUBJECT = re.compile(
    r"^(?:(?:totally|really|so|absolutely|definitely|just|also|still)\s+)?"
    r"(?:love|loved|adore|adored|hate|hated|enjoyed|miss|missed|agree|hope|wish|guess|bet)\b",
    re.IGNORECASE,
)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _names_speaker(text: str, speaker: str) -> bool:
    return re.search(rf"\b{re.escape(speaker)}\b", text) is not None


def _unique(mentions: Iterable[EntityMention]) -> tuple[EntityMention, ...]:
    seen: set[str] = set()
    out: list[EntityMention] = []
    for mention in mentions:
        key = mention.name.casefold()
        if mention.name and key not in seen:
            seen.add(key)
            out.append(mention)
    return tuple(out)


class RulesExtractor:
    """Deterministic extraction; see the module docstring for what it does."""

    mode = ExtractionMode.RULES
    model = ""

    def __init__(self) -> None:
        self._known_key: tuple[str, ...] | None = None
        self._known = _KnownIndex(())
        # Everyone seen speaking so far: a speaker named in a later exchange is a person.
        self._persons: set[str] = set()

    def _known_index(self, known_entities: Sequence[str]) -> _KnownIndex:
        # The caller passes the same (growing) list for every exchange: index it once.
        key = tuple(known_entities)
        if key != self._known_key:
            self._known_key, self._known = key, _KnownIndex(key)
        return self._known

    def _context(
        self, exchange: Exchange, agent_name: str, known_entities: Sequence[str]
    ) -> tuple[list[Turn], _Context]:
        turns = [t for t in exchange.turns if t.text.strip()]
        context = _Context(
            agent=BankAgent(agent_name),
            persons=self._persons,
            known=self._known_index(known_entities),
            session_time=exchange.when,
        )
        self._persons.update(t.speaker.casefold() for t in turns)
        for turn in turns:
            spans, mid = _capitalised_spans(_SHOUTING.sub(" ", _CODE.sub(" ", turn.text)))
            context.spans[turn.id] = spans
            context.mid_sentence |= mid
            context.heads.update(sp.words[0].casefold() for sp in spans if not sp.initial)
            context.products.update(
                " ".join(sp.words).casefold() for sp in spans if _used_as_product(sp)
            )
        context.mid_sentence |= context.known.words
        return turns, context

    def mentions(
        self, exchange: Exchange, agent_name: str, known_entities: Sequence[str]
    ) -> dict[str, tuple[EntityMention, ...]]:
        """The entity mentions of each turn, whole (questions and greetings included):
        what verbatim mode, which stores whole turns, links them to."""
        turns, context = self._context(exchange, agent_name, known_entities)
        return {
            turn.id: context.entities_of(_Piece(((turn, turn.text),), _addressee(turns, i)))
            for i, turn in enumerate(turns)
        }

    def extract(
        self, exchange: Exchange, agent_name: str, known_entities: Sequence[str]
    ) -> list[ExtractedFact]:
        turns, context = self._context(exchange, agent_name, known_entities)
        if not turns:
            return []
        # Names set aside when telling a filler ("Thanks, Mel!") from a statement.
        names = (
            frozenset(w.casefold() for t in turns for w in _WORD.findall(t.speaker))
            | frozenset(self._persons)
            | frozenset(
                w.casefold()
                for spans in context.spans.values()
                for sp in spans
                if len(sp.words) == 1 and _span_type(sp, self._persons) == "person"
                for w in sp.words
            )
        )
        context.names = names
        facts: list[ExtractedFact] = []
        for group in _plan(turns, names):
            built = [f for f in (context.fact(piece) for piece in group.pieces) if f is not None]
            if len(built) == 2:
                base = len(facts)
                cause, effect = (0, 1) if group.cause_first else (1, 0)
                built[cause] = replace(
                    built[cause],
                    causal=(CausalRelation(base + effect, "causes", CUE_STRENGTH),),
                )
                built[effect] = replace(
                    built[effect],
                    causal=(CausalRelation(base + cause, "caused_by", CUE_STRENGTH),),
                )
            facts.extend(built)
        return facts


@dataclass
class _Context:
    agent: BankAgent
    persons: set[str]  # casefolded names of speakers
    known: _KnownIndex
    session_time: datetime | None
    spans: dict[str, list[_Span]] = field(default_factory=dict)
    mid_sentence: set[str] = field(default_factory=set)
    heads: set[str] = field(default_factory=set)  # words that open a name mid-sentence
    products: set[str] = field(default_factory=set)  # names used as a tool in the exchange
    # The last time expression seen in each turn, for its later statements.
    turn_time: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)
    # Names set aside when telling a filler from a statement (casefolded).
    names: frozenset[str] = frozenset()

    def fact(self, piece: _Piece) -> ExtractedFact | None:
        """The fact a piece makes, or None when it says nothing worth a memory."""
        turns = tuple(dict.fromkeys(turn for turn, _ in piece.segments))
        when = next((t.timestamp for t in turns if t.timestamp is not None), self.session_time)
        said = self._said(piece)
        if said is None:
            return None
        text, network, confidence = said
        start, end = self._occurred(piece, when)
        text = _with_date(text, describe_interval(start, end) if start and end else None)
        return ExtractedFact(
            text=text,
            network=network,
            occurred_start=start,
            occurred_end=end,
            mentioned_at=when,
            entities=self.entities_of(piece),
            causal=(),
            source_ids=tuple(t.id for t in turns),
            confidence=confidence,
            mode=ExtractionMode.RULES,
        )

    # -- parts of a fact --

    def _keep(self) -> frozenset[str]:
        """Words that keep their capital at the start of a reported clause: names."""
        return frozenset(self.persons) | frozenset(self.mid_sentence) | self.names

    def _said(self, piece: _Piece) -> tuple[str, Network, float | None] | None:
        """(text, network, confidence) of a piece: what it says, who holds it."""
        if piece.caption:
            ((turn, caption),) = piece.segments
            owned = self.agent.is_agent(turn.speaker)
            network = Network.EXPERIENCE if owned else Network.WORLD
            return self._caption(turn, caption), network, None
        if piece.question:
            return self._answered(piece)
        ((turn, text),) = piece.segments
        body = self._statement(text, turn, piece.addressee)
        if body is None:
            return None
        return (_capitalised(body), *self._network(turn, _CAPTION.sub("", text)))

    def _network(self, holder: Turn, text: str) -> tuple[Network, float | None]:
        """Only the bank's own agent holds opinions and has experience (networks.py):
        anyone else's belief, preference or deed is a world fact about them."""
        if not self.agent.owns(holder.speaker):
            return Network.WORLD, None
        confidence = _opinion_of(text)
        if confidence is not None:
            return Network.OPINION, confidence
        if self.agent.is_agent(holder.speaker) and _FIRST_PERSON.search(text):
            return Network.EXPERIENCE, None
        return Network.WORLD, None

    def _caption(self, turn: Turn, caption: str) -> str:
        inner = caption.strip("[] ").removeprefix("image:").strip()
        if not turn.speaker.strip():
            return caption
        who = "I" if self.agent.is_agent(turn.speaker) else turn.speaker
        if inner.lower().startswith(("a ", "an ")):
            return f"{who} shared {inner}"
        return f"{who} shared an image: {inner}"

    def _statement(
        self, text: str, turn: Turn, listener: str | None, answer: bool = False
    ) -> str | None:
        """One statement as a fact that reads on its own (narrate.py), or None when
        it says nothing worth a memory ("Guilty!", "Don't be.")."""
        speaker = turn.speaker
        listener = self._addressed(text, speaker) or listener
        _, stripped = strip_opener(text, self.names)
        if not stripped or not worth_keeping(stripped, self.names, answer=answer):
            return None
        if not speaker.strip():
            return text  # a note without a speaker (retained over HTTP) stays as written
        stripped = _capitalised(supply_subject(stripped))
        if self.agent.owns(speaker):
            # The agent's own voice: its first person stays, "you" is whom it told.
            return rewrite_pronouns(stripped, speaker, listener, first=False, you=bool(listener))
        if _ELIDED_SUBJECT.match(stripped):
            stripped = f"I {stripped[0].lower()}{stripped[1:]}"  # "Love that painting!"
        if rewrite_is_safe(stripped) and _FIRST_PERSON.search(stripped):
            body = rewrite_pronouns(stripped, speaker, listener)
            if _names_speaker(body, speaker):
                return body  # "Yesterday Ann went …": the speaker is named in it
        full = rewrite_pronouns(stripped, speaker, listener, you=bool(listener), we=True)
        if _names_speaker(full, speaker) and not _QUOTED.search(stripped):
            return full
        return reported(full, speaker, listener, _judges(stripped), self._keep())

    def _addressed(self, text: str, speaker: str) -> str | None:
        """The person a statement opens by calling ("Tomás, please rerun it"): whom
        it is said to, whoever the turn before was."""
        m = _VOCATIVE.match(text)
        if not m or m["name"].casefold() not in self.persons:
            return None
        name = m["name"]
        return None if name.casefold() == speaker.strip().casefold() else name

    def _answered(self, piece: _Piece) -> tuple[str, Network, float | None] | None:
        """A question and its answer as one statement of the one who answers."""
        (q_turn, question), (a_turn, answer) = piece.segments
        asker, answerer = q_turn.speaker, a_turn.speaker
        asker_is_agent, answerer_is_agent = (
            self.agent.is_agent(asker),
            self.agent.is_agent(answerer),
        )
        polarity, rest = strip_opener(answer, self.names)
        body = self._statement(rest, a_turn, asker, answer=True) if rest else None
        asked = ask(question, "" if asker_is_agent else asker, answerer, answerer_is_agent)
        head = ""
        if asked is not None and asked.kind == "yesno" and polarity is not None:
            head = asked.positive if polarity == "yes" else asked.negative
        if head:
            head = head[0].upper() + head[1:]
            # An answer that says enough on its own needs no restated question.
            if body and _words(body) >= QA_STANDALONE_WORDS:
                text = body
            else:
                text = f"{head}: {lower_first(body, self._keep())}" if body else head
            claim = f"{head}. {rest}"
        else:
            who = "I" if asker_is_agent else asker or "Someone"
            whom = "me" if answerer_is_agent else answerer or "someone"
            if asked is not None:
                intro = f"{who} asked {whom} {asked.indirect}"
            else:
                intro = f'{who} asked {whom} "{question.strip()}"'
            if body:
                text = f"{intro}; {lower_first(body, self._keep())}"
            elif polarity is not None:
                text = f"{intro}; {'I' if answerer_is_agent else answerer} said {polarity}"
            else:
                return None
            claim = rest
        return (text, *self._network(a_turn, _CAPTION.sub("", claim)))

    def _occurred(
        self, piece: _Piece, when: datetime | None
    ) -> tuple[datetime | None, datetime | None]:
        if when is None:
            return None, None
        # An answer says when things happened more often than its question.
        for _, text in reversed(piece.segments):
            for interval in find_time_expressions(text, when):
                if not interval.is_open and interval.end > interval.start:
                    found = interval.start, interval.end
                    self.turn_time[piece.segments[-1][0].id] = found
                    return found
        # A narrative keeps its time: "Last week I ran a race. I raised $500." —
        # for a statement of what happened (past tense), not "I'm so proud".
        inherited = self.turn_time.get(piece.segments[-1][0].id)
        if inherited is not None and _PAST.search(piece.segments[-1][1]):
            return inherited
        return _day(when)

    def entities_of(self, piece: _Piece) -> tuple[EntityMention, ...]:
        mentions: list[EntityMention] = []
        for turn, _ in piece.segments:
            mentions.append(EntityMention(turn.speaker, "person"))
        if piece.addressee and any(_SECOND_PERSON.search(text) for _, text in piece.segments):
            mentions.append(EntityMention(piece.addressee, "person"))
        # The answer to "who …?" names a person: "Who wrote it?" "It's Shia Labeouf!"
        asked_who = piece.question and _ASKS_WHO.search(piece.segments[0][1]) is not None
        for index, (turn, text) in enumerate(piece.segments):
            person_ends: set[str] = set()  # last words of the persons named so far
            for span in self.spans.get(turn.id, ()):
                words = self._name_words(span)
                name = " ".join(words)
                if not words or name not in text:
                    continue  # not a name, or in the other half of a split turn
                if words is not span.words:
                    span = _Span(words, False, ("", ""), span.after, span.following, span.clause)
                kind = _span_type(span, self.persons, self.products)
                if kind == "other" and (
                    (asked_who and index == len(piece.segments) - 1)
                    # A name listed with a person is one: "Bach and Mozart".
                    or (span.before[1] in _LIST_JOINERS and span.before[0] in person_ends)
                ):
                    kind = "person"
                if kind == "person":
                    person_ends.add(words[-1].casefold())
                mentions.append(EntityMention(name, kind))
            for name in self.known.find(text):
                mentions.append(EntityMention(name, _guess_type(name, self.persons, self.products)))
        return _unique(mentions)

    def _name_words(self, span: _Span) -> list[str]:
        """The words of `span` that make a name; [] when it is not one."""
        words = span.words
        if span.initial and len(words) > 1 and not self._seen(words[0]):
            # "Go Jon", "Woah Joanna": an opening word glued to a name.
            rest = words[1:]
            head = rest[0].casefold()
            if head in self.persons or head in self.heads:
                words = rest
        while words and (span.initial or len(words) == 1) and _not_a_name(words[0]):
            words = words[1:]  # "Perfect Caroline": an interjection is not part of it
        if not words:
            return []
        if sum(1 for w in words if _shouted(w)) >= 2:
            return []  # code or shouting: "CREATE INDEX CONCURRENTLY"
        if _is_role(words):
            return []
        if len(words) == 1:
            word = words[0]
            letters = sum(c.isalpha() for c in word)
            if letters < 2 and not word[0].isdigit():
                return []
            if word.isupper() and letters > MAX_ACRONYM_LETTERS:
                return []  # a keyword or shouting: "CONCURRENTLY", "INTENSE"
            if "&" in word and all(len(part) <= 1 for part in word.split("&")):
                return []  # "R&R", "Q&A"
            if apostrophes(word).casefold() in _COMMON_ABBREVIATIONS:
                return []
            if span.initial and words is span.words and not self._stands_alone(word):
                return []
        return words

    def _seen(self, word: str) -> bool:
        key = word.casefold()
        return key in self.mid_sentence or key in self.persons

    def _stands_alone(self, word: str) -> bool:
        """A capitalised word opening a sentence is a name only with other evidence."""
        if self._seen(word) or is_region(word):
            return True
        letters = [c for c in word if c.isalpha()]
        # LGBTQ, NASA, iPhone-like inner capitals.
        return len(letters) >= 2 and (word.isupper() or any(c.isupper() for c in word[1:]))
