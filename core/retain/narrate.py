"""A statement of a conversation written as a fact that reads on its own.

Rules mode keeps a speaker's words nearly verbatim (recall depends on them)
and only makes them stand alone. A transcript frame ("Mel asked: Do you have
pets? Jo answered: Yes, two dogs", "Priya said: Guilty") is not a fact a
curator can read without its turn; this module writes:

- a question and its answer as one statement: a yes/no question answered yes
  or no becomes what the answer asserts ("Do you have pets?" "Yes, two dogs"
  -> "Jo has pets: Jo has two dogs"); other questions become reported
  questions before their answer ("Mel asked Jo how Jo has been; Jo is
  swamped with work");
- a statement that does not name its speaker as reported speech: a judgment
  as what the speaker thinks ("Mel thinks that agency looks great"), a
  request as what the speaker told the listener ("Mel told Jo to take a look
  at this"), anything else as what the speaker said ("Mel said that they are
  going camping next month", "we" becoming "they").

The bank's own agent keeps its first person ("Maya asked me whether I booked
the room; I booked it on Monday"): its experience and opinions are its own.
All of it is English grammar, nothing fitted to a conversation: the verb
forms are the regular ones plus the common irregular verbs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.retain.pronouns import ADVERBS, apostrophes, rewrite_pronouns

__all__ = [
    "Asked",
    "answer_polarity",
    "ask",
    "lower_first",
    "past_tense",
    "reported",
    "strip_opener",
    "supply_subject",
    "verb_s",
    "you_as_me",
]

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
# A word in any script, as names are spelled ("Tomás", "Inês").
_ANY_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# ---- verb forms ---------------------------------------------------------------

_IRREGULAR_PAST = dict(
    pair.split(":")
    for pair in (
        "be:was have:had do:did go:went get:got make:made take:took see:saw come:came "
        "give:gave know:knew think:thought find:found tell:told say:said feel:felt "
        "leave:left keep:kept begin:began bring:brought buy:bought catch:caught "
        "teach:taught meet:met run:ran sit:sat stand:stood win:won lose:lost write:wrote "
        "read:read eat:ate drink:drank drive:drove ride:rode fly:flew grow:grew draw:drew "
        "sing:sang swim:swam wear:wore build:built send:sent spend:spent lend:lent "
        "hear:heard hold:held pay:paid sleep:slept speak:spoke break:broke choose:chose "
        "forget:forgot fall:fell become:became understand:understood put:put cut:cut "
        "set:set let:let hit:hit hurt:hurt cost:cost quit:quit shut:shut bet:bet "
        "mean:meant lead:led light:lit throw:threw wake:woke hang:hung shoot:shot "
        "show:showed sell:sold steal:stole"
    ).split()
)
_VOWELS = "aeiou"
_THIRD = {"have": "has", "do": "does", "go": "goes", "be": "is"}


def verb_s(verb: str) -> str:
    """The third person singular of a base-form verb ("like" -> "likes")."""
    low = verb.lower()
    if low in _THIRD:
        return _THIRD[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in _VOWELS:
        return verb[:-1] + "ies"
    return verb + "s"


def past_tense(verb: str) -> str:
    """The simple past of a base-form verb ("go" -> "went", "try" -> "tried")."""
    low = verb.lower()
    if low in _IRREGULAR_PAST:
        past = _IRREGULAR_PAST[low]
        return past.capitalize() if verb[:1].isupper() else past
    if low.endswith("e"):
        return verb + "d"
    if low.endswith("y") and len(low) > 1 and low[-2] not in _VOWELS:
        return verb[:-1] + "ied"
    if (
        len(low) >= 3
        and low[-1] not in _VOWELS + "wxy"
        and low[-2] in _VOWELS
        and low[-3] not in _VOWELS
        and len(low) <= 4
    ):
        return verb + verb[-1] + "ed"  # stop -> stopped, plan -> planned
    return verb + "ed"


# ---- openers ------------------------------------------------------------------

_YES = _wordset(
    "yes yeah yep yup yea yas sure definitely absolutely totally certainly exactly indeed "
    "right true correct"
)
_NO = _wordset("no nope nah never")
# Yes/no words that cannot open a clause: stripped even without a comma ("Yes I did").
_BARE_ANSWERS = _wordset("yes yeah yep yup yea yas nope nah")
# Words that open a turn without saying anything: interjections, discourse markers.
_INTERJECTIONS = _wordset(
    "oh ohh ah aw aww awww wow woah whoa hey hi hello hmm um uh ok okay alright haha "
    "hahaha lol omg yay ooh oops ugh phew"
)
# Discourse markers that open a sentence: stripped with or without a comma.
_MARKERS = _wordset("so well and but plus also anyway anyways honestly actually btw")
_PHRASES = {"of course": "yes", "for sure": "yes", "not really": "no", "no need": "no"}
_ASIDES = frozenset({"by the way", "i mean"})
_NOTE_ASIDE = re.compile(r"on (?:another|other|a \w+) note$")  # "On another note, …"
# Words after which "so" is an adverb of the clause, not a marker ("So far I've…").
_SO_ADVERB = _wordset("far much many long that")
_HEAD = re.compile(
    r"^(?P<word>of\s+course|for\s+sure|not\s+really|no\s+need|by\s+the\s+way|you\s+know|i\s+mean"
    r"|on\s+(?:an)?other\s+note|on\s+a\s+(?:different|side|related)\s+note"
    r"|[^\W\d_]+(?:['’][^\W\d_]+)?)(?P<stop>\s*[,!.…]+|\s*[-–—]\s|\s+|$)",
    re.IGNORECASE,
)
# A heading that announces the statement after its colon ("Big news: they signed",
# "One more thing: …", "Small update from Beacon: …"): a few words ending in a noun
# of announcing. The statement is what follows.
_ANNOUNCER = re.compile(
    r"^(?:[^\W\d_]+\s+){0,3}?(?:news|update|thing|question|note|reminder|heads[- ]up|fyi"
    r"|ps|p\.s\.)(?:\s+(?:from|on|about)\s+[^:.!?]{1,30})?\s*:\s+(?=\S)",
    re.IGNORECASE,
)


def strip_opener(text: str, names: frozenset[str] = frozenset()) -> tuple[str | None, str]:
    """(the answer's polarity, "yes" | "no" | None, and the text after its opening
    interjections, yes/no words and vocatives): "Yeah, Mel! I painted it" ->
    ("yes", "I painted it")."""
    polarity: str | None = None
    rest = text.strip()
    while rest:
        m = _HEAD.match(rest)
        if not m:
            break
        word = " ".join(apostrophes(m["word"]).lower().split())
        pause = bool(m["stop"].strip()) or not rest[m.end() :].strip()
        if word in _PHRASES:
            polarity = polarity or _PHRASES[word]
        elif word in _YES or word in _NO:
            if not (pause or word in _BARE_ANSWERS):
                break  # "Right now I'm busy", "Never been there"
            polarity = polarity or ("yes" if word in _YES else "no")
        elif word == "so" and not pause and _next_word(rest[m.end() :]) in _SO_ADVERB:
            break  # "So far I've been fixing bugs": "so far" is the clause's
        elif (
            word in _INTERJECTIONS or word in _MARKERS or word in _ASIDES or _NOTE_ASIDE.match(word)
        ):
            pass
        elif word == "you know" or word in names:
            if not pause:
                break  # "Mel went home": a name that is the subject stays
        else:
            break
        rest = rest[m.end() :].lstrip(" ,!.…-–—")
    announced = _ANNOUNCER.match(rest)
    if announced and len(_WORD.findall(rest[announced.end() :])) >= 2:
        rest = rest[announced.end() :]
        rest = rest[:1].upper() + rest[1:]
    return polarity, rest.strip()


def _next_word(text: str) -> str:
    m = _WORD.match(text.lstrip())
    return m.group(0).lower() if m else ""


def answer_polarity(text: str) -> str | None:
    return strip_opener(text)[0]


# ---- questions ----------------------------------------------------------------

_AUX = "do|does|did|are|were|is|was|have|has|had|can|could|will|would|should|shall|may|might"
_YESNO = re.compile(rf"^(?P<aux>{_AUX})\s+you\s+(?P<rest>.+)$", re.IGNORECASE)
# "Is this your own painting?", "Was it hard?"
_YESNO_THING = re.compile(
    r"^(?P<aux>is|was|are|were)\s+(?P<subject>it|this|that|these|those|there)\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
_WH = re.compile(
    r"^(?P<wh>(?:what|where|when|who|whom|how|why|which)(?:\s+(?!(?:"
    + _AUX
    + r")\b)[\w'’-]+){0,3})"
    rf"\s+(?P<aux>{_AUX})\s+you\s+(?P<rest>.+)$",
    re.IGNORECASE,
)
# "What's your favourite book?", "How was your weekend?", "How's Atlas?"
_WH_BE = re.compile(
    r"^(?P<wh>what|who|where|which|how|when)(?:['’]s|\s+(?P<be>is|are|was|were))\s+"
    r"(?P<rest>(?:your|the|that|this)\b.+|(?-i:[A-Z])[\w'’-]+(?:\s+(?-i:[A-Z])[\w'’-]+)*)$",
    re.IGNORECASE,
)
# "You landed on Saturday, right?", "So you're moving?"
_TAG = re.compile(
    r"^(?:so\s+)?(?P<rest>you(?:['’](?:re|ve|ll|d))?\s+.+?)(?:,?\s*(?:right|yeah|correct|huh|no))?$",
    re.IGNORECASE,
)
# "How is Atlas ingestion going?": a wh-word, a form of be, a subject, a gerund.
_WH_ING = re.compile(
    r"^(?P<wh>what|where|how|why)\s+(?P<be>is|are|was|were)\s+(?P<subject>(?:[\w'’-]+\s+){0,4}?"
    r"[\w'’-]+)\s+(?P<verb>\w+ing)$",
    re.IGNORECASE,
)
# "How did the migration go?": the question's last word is one of the verbs a
# question ends on (its subject is everything between).
_WH_DID = re.compile(
    r"^(?P<wh>how|what|why|when|where)\s+(?P<aux>did|does)\s+(?P<subject>(?:[\w'’-]+\s+){0,4}?"
    r"[\w'’-]+)\s+(?P<verb>go|do|say|think|happen|mean|feel|work|end|start|turn\s+out|look)$",
    re.IGNORECASE,
)
# "Should I be at the design review too?", "Will Tomás join?": a person as the subject.
_YESNO_PERSON = re.compile(
    rf"^(?P<aux>(?i:{_AUX}))\s+(?P<subject>I|(?i:he|she)|[A-Z][\w'’-]+)\s+(?P<rest>.+)$"
)
# A question that only names its topic: "What about hosting?", "And Postgres?",
# "Beacon?", "Atlas: inventory events?" (up to ABOUT_MAX_WORDS words, no verb of
# asking, no "you").
ABOUT_MAX_WORDS = 4
_ABOUT = re.compile(
    r"^(?:(?:what|how)\s+about\s+|and\s+)?(?P<topic>(?!(?:what|where|when|who|whom|how|why"
    r"|which|anything|something|any|you|your|right|really|seriously|sorry|ok|okay|yeah|yes|no"
    r"|huh|true|sure|again|same|" + _AUX + r")\b)[^\s?]+(?:\s+[^\s?]+){0,"
    + str(ABOUT_MAX_WORDS - 1)
    + r"})$",
    re.IGNORECASE,
)
_LEAD = re.compile(
    r"^\s*(?:(?:so|and|but|oh|hey|wow|well|btw|by\s+the\s+way|also|anyway|ok|okay)\b[\s,]*)+",
    re.IGNORECASE,
)
_VOCATIVE = re.compile(r"^\s*([A-Z][\w'’-]*)\s*,\s*")
_TRAIL_VOCATIVE = re.compile(r",\s*[A-Z][\w'’-]*\s*$")


@dataclass(frozen=True)
class Asked:
    """A question read for its answer: `positive`/`negative` assert what a yes or
    a no answer says (yes/no questions only); `indirect` is the question reported
    ("whether Jo has pets", "how Jo has been")."""

    kind: str  # "yesno" | "wh"
    indirect: str
    positive: str = ""
    negative: str = ""


_BE_THIRD = {"are": "is", "were": "was", "is": "is", "was": "was"}
_BE_FIRST = {"are": "am", "were": "was", "is": "am", "was": "was"}


def _clause(aux: str, rest: str, subject: str, first: bool) -> tuple[str, str] | None:
    """(positive, negative) clauses of `subject` for "aux you rest" ("did you go
    home" -> "Jo went home", "Jo did not go home"); `first`: the subject is "I"."""
    aux = aux.lower()
    words = rest.split(maxsplit=1)
    if not words:
        return None
    verb, tail = words[0], (words[1] if len(words) > 1 else "")
    tail = f" {tail}" if tail else ""
    if aux in ("do", "does", "did"):
        if verb.lower() in ADVERBS or not verb.isalpha():
            return None
        if aux == "did":
            return f"{subject} {past_tense(verb)}{tail}", f"{subject} did not {verb}{tail}"
        form = verb if first else verb_s(verb)
        return f"{subject} {form}{tail}", f"{subject} {'do' if first else 'does'} not {verb}{tail}"
    if aux in _BE_THIRD:
        be = (_BE_FIRST if first else _BE_THIRD)[aux]
        return f"{subject} {be} {rest}", f"{subject} {be} not {rest}"
    if aux in ("have", "has", "had"):
        have = "had" if aux == "had" else ("have" if first else "has")
        return f"{subject} {have} {rest}", f"{subject} {have} not {rest}"
    negative = "cannot" if aux == "can" else f"{aux} not"
    return f"{subject} {aux} {rest}", f"{subject} {negative} {rest}"


def you_as_me(text: str) -> str:
    """The listener's second person as the first person: what someone asked the
    agent, in the agent's voice ("send you your notes" -> "send me my notes")."""
    swaps = {
        "your": "my",
        "yours": "mine",
        "yourself": "myself",
        "you're": "I'm",
        "you've": "I've",
        "you'll": "I'll",
        "you'd": "I'd",
    }
    out = []
    tokens = re.findall(r"[A-Za-z]+(?:['’][A-Za-z]+)?|[^A-Za-z]+", text)
    for i, token in enumerate(tokens):
        low = apostrophes(token).lower()
        if low in swaps:
            out.append(swaps[low])
        elif low == "you":
            before = "".join(tokens[:i]).rstrip()
            subject = (
                not before
                or before[-1] in ".,;:!?"
                or before.split()[-1].lower()
                in (
                    "and",
                    "but",
                    "that",
                    "if",
                    "when",
                    "think",
                    "know",
                )
            )
            out.append("I" if subject else "me")
        else:
            out.append(token)
    return "".join(out)


def _clean_question(question: str) -> str:
    text = question.strip().rstrip("?!. ").strip()
    text = _LEAD.sub("", text)
    text = _VOCATIVE.sub("", text)
    text = _TRAIL_VOCATIVE.sub("", text)
    return text.strip()


def ask(question: str, asker: str, answerer: str, answerer_is_agent: bool) -> Asked | None:
    """How the answer to `question` (asked by `asker`) can be written, or None when
    the question is of no form read here ("Anything new?")."""
    text = _clean_question(question)
    if not text or "?" in text:
        return None  # several questions in one sentence

    def voice(rest: str) -> str:
        # The asker's first person becomes the asker; the listener becomes the answerer.
        rest = rewrite_pronouns(rest, asker, None) if asker else rest
        if answerer_is_agent:
            return you_as_me(rest)
        return rewrite_pronouns(rest, asker or answerer, answerer, first=False, you=True)

    subject = "I" if answerer_is_agent else answerer
    m = _WH.match(text)
    if m:
        clauses = _clause(m["aux"], voice(m["rest"]), subject, answerer_is_agent)
        if clauses is None:
            return None
        return Asked("wh", f"{m['wh'].lower()} {clauses[0]}")
    m = _WH_ING.match(text)
    if m and not m["subject"].lower().startswith("you"):
        # "How is Atlas ingestion going?" -> how Atlas ingestion is going
        return Asked("wh", f"{m['wh'].lower()} {voice(m['subject'])} {m['be'].lower()} {m['verb']}")
    m = _WH_BE.match(text)
    if m:
        be = (m["be"] or "is").lower()
        if answerer_is_agent:
            be = _BE_FIRST.get(be, be) if m["rest"].lower().startswith("you ") else be
        return Asked("wh", f"{m['wh'].lower()} {voice(m['rest'])} {be}")
    m = _WH_DID.match(text)
    if m and not m["subject"].lower().startswith("you"):
        # "How did the migration go?" -> how the migration went
        verb = m["verb"].lower()
        form = past_tense(verb) if m["aux"].lower() == "did" else verb_s(verb)
        return Asked("wh", f"{m['wh'].lower()} {voice(m['subject'])} {form}")
    m = _YESNO_PERSON.match(text)
    if m and m["aux"].lower() not in ("do", "does", "did", "am", "are", "were"):
        # "Should I be at the review?" -> whether Leo should be at the review
        who = voice(m["subject"])
        if who.lower() != "i":
            clauses = _clause(m["aux"], voice(m["rest"]), who, False)
            if clauses is not None:
                return Asked("yesno", f"whether {clauses[0]}", *clauses)
    m = _ABOUT.match(text)
    if m:
        # "What about hosting?", "And Postgres?", "Atlas: inventory events?"
        return Asked("wh", f"about {voice(m['topic'].replace(':', ''))}")
    m = _YESNO.match(text)
    if m:
        clauses = _clause(m["aux"], voice(m["rest"]), subject, answerer_is_agent)
        if clauses is None:
            return None
        positive, negative = clauses
        return Asked("yesno", f"whether {positive}", positive, negative)
    m = _YESNO_THING.match(text)
    if m:
        thing, be, rest = m["subject"].capitalize(), m["aux"].lower(), voice(m["rest"])
        positive = f"{thing} {be} {rest}"
        return Asked(
            "yesno", f"whether {thing.lower()} {be} {rest}", positive, f"{thing} {be} not {rest}"
        )
    m = _TAG.match(text)
    if m and text.lower().startswith(("you ", "you'", "you’", "so you")):
        positive = voice(m["rest"])
        if answerer_is_agent:
            positive = you_as_me(m["rest"])
        return Asked("yesno", f"whether {positive}", positive, "")
    return None


# ---- reported speech ------------------------------------------------------------

_IMPERATIVE = _wordset(
    "take look check try keep go come give tell make remember imagine enjoy stay hang "
    "get see call send join bring show let let's don't dont please stop start be "
    "have consider think listen watch read follow visit wish"
)


# A clause whose subject is left out, and what it leaves out: "Excited for the trip!"
# ("I'm"), "Sounds like fun" ("it"), "Great that you came" ("it's").
_FEELINGS = _wordset(
    "excited glad happy thrilled stoked proud grateful thankful sorry busy tired nervous "
    "worried lucky blessed ready keen eager sad bummed psyched hyped"
)
_IMPRESSIONS = _wordset("sounds sounded looks looked seems seemed feels felt")
_JUDGED = _wordset(
    "great good nice cool awesome amazing wonderful lovely fantastic sad crazy weird funny "
    "interesting important hard tough fun"
)
_MAIN_VERB = re.compile(
    r"\b(?:is|are|was|were|can|could|will|would|makes?|made|helps?|helped|means?|meant"
    r"|takes?|took|gives?|gave|keeps?|kept|sounds?|looks?|seems?|feels?)\b|['’](?:s|re|m)\b",
    re.IGNORECASE,
)


def supply_subject(text: str) -> str:
    """`text` with the subject chat leaves out put back ("Excited for it!" -> "I'm
    excited for it!", "Sounds fun" -> "It sounds fun", "Great that you came" ->
    "It's great that you came"); else `text` as it is."""
    words = _WORD.findall(text)
    if not words or not text[:1].isalpha():
        return text
    first, second = apostrophes(words[0]).lower(), (words[1].lower() if len(words) > 1 else "")
    if "'" in first:
        return text
    lowered = text[0].lower() + text[1:]
    if first in ("gonna", "wanna", "gotta") or first in _FEELINGS:
        return f"I'm {lowered}"
    if first.endswith("ing") and len(first) > 4 and not _MAIN_VERB.search(text):
        return f"I'm {lowered}"  # "Researching adoption agencies" (not "Running is fun")
    if first in _IMPRESSIONS and second in (
        "like",
        "so",
        "really",
        "great",
        "good",
        "fun",
        "amazing",
    ):
        return f"It {lowered}"
    if first in _JUDGED and second in ("that", "to", "how", "seeing", "hearing"):
        return f"It's {lowered}"
    return text


_PRONOUNS = _wordset("you he she it we they who")
# Words that open a sentence with a capital only because they open it.
_COMMON_OPENERS = _wordset(
    "the a an this that these those it its it's they they're their there there's here "
    "here's we our you your he she his her my some any all every each no not none what "
    "when where why how if so and but or then now today yesterday tomorrow tonight one two "
    "many much more most such both either neither nothing everything something anything "
    "someone everyone everybody nobody people being having lots last next after before "
    "since until while as at in on of for to from with by about just also still even only "
    "really maybe perhaps sometimes always never usually"
)


def lower_first(text: str, keep: frozenset[str] = frozenset(), clause: bool = False) -> str:
    """`text` with its first letter in lower case when its first word is a common
    word that only opens the sentence ("The", "It", "Painting" as a verb's
    subject), never a name (`keep`, casefolded, or any other capitalised word).

    A `clause` of reported speech lowers any first word but a name in `keep`,
    "I" and an acronym: after "said that" the capital of "Sales events are
    done" only opened the turn."""
    m = _ANY_WORD.search(text)
    if not m or m.start() != 0:
        return text
    word = m.group(0)
    base = re.sub(r"['’]s$", "", word).casefold()
    low = apostrophes(word).lower()
    stem = low.split("'")[0]  # "he's", "they'll", "that's": the word before the clitic
    if base in keep or word.isupper() or stem == "i":
        return text
    if (
        not clause
        and low not in _COMMON_OPENERS
        and stem not in _COMMON_OPENERS | _PRONOUNS
        and not (low.endswith("ing") and len(low) > 4)
    ):
        return text  # maybe a name: "Tomás reviewed it" keeps its capital
    return word[0].lower() + text[1:]


def reported(
    text: str,
    speaker: str,
    listener: str | None,
    judgment: bool,
    keep: frozenset[str] = frozenset(),
) -> str:
    """`text`, already in the third person, as reported speech of `speaker`: a
    request as what they told `listener`, a `judgment` as what they think, else
    what they said."""
    body = text.strip().rstrip(".!… ")
    first = (_WORD.findall(body)[:1] or [""])[0]
    low = apostrophes(first).lower()
    if low in _IMPERATIVE and (not listener or not judgment or low in ("let's", "don't", "dont")):
        rest = body[len(first) :].lstrip()
        if low == "let's":
            return f"{speaker} suggested that they {rest}"
        if low in ("don't", "dont"):
            return f"{speaker} told {listener or 'them'} not to {rest}"
        if low == "please":  # "please rerun it": a request, whatever its verb
            return f"{speaker} told {listener or 'them'} to {lower_first(rest, keep, clause=True)}"
        return f"{speaker} told {listener or 'them'} to {body[0].lower()}{body[1:]}"
    if low in ("thank", "thanks") and listener:
        rest = body[len(first) :].lstrip(" ,")
        if rest.casefold().startswith(listener.casefold()):
            rest = rest[len(listener) :].lstrip(" ,")
        return f"{speaker} thanked {listener} {rest}".rstrip()
    verb = "thinks" if judgment else "said that"
    return f"{speaker} {verb} {lower_first(body, keep, clause=True)}"
