"""A turn cut into the statements worth remembering, without a language model.

A chat turn mixes what a memory should keep ("I ran a charity race last
Saturday") with what it should not: greetings and thanks ("Hey Mel!",
"Thanks, Caroline!"), bare reactions ("Wow, that's awesome!") and questions,
which state nothing (their answer is what is worth keeping). This module:

- cuts a turn into sentences (abbreviations such as "Dr." do not end one) and
  takes image captions ("[image: a photo of …]") out as their own statement;
- drops *fillers*: sentences with no word outside a vocabulary of greetings,
  interjections, thanks and generic reactions, once the names are set aside;
- drops *questions* (a sentence ending in "?"), but hands the turn's last
  question to the caller, so the next speaker's answer can be paired with it;
- joins a sentence that cannot stand alone — it opens by pointing back ("It
  was powerful.", "They loved it.") or is very short — to the statement before
  it, while the two stay short;
- says when turning the first person into the speaker's name is safe: not
  when the sentence also speaks of "you" or "we" (who is meant is unclear) or
  uses a reflexive ("expressing myself" must not become "expressing Melanie").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Statement",
    "TurnStatements",
    "is_filler",
    "rewrite_is_safe",
    "sentences",
    "split_turn",
]

# A sentence shorter than this (words) leans on the one before it.
MIN_STANDALONE_WORDS = 4
# A joined statement stays at most this long (words); past it, sentences stand alone.
MAX_JOINED_WORDS = 40

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
_CAPTION = re.compile(r"\s*\[image[^\]]*\]")
# A sentence ends at . ! ? … (one or more, maybe a closing quote) before a space.
_END = re.compile(r"(?<=[.!?…])[\"”’)]*\s+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Prof|Jr|Sr|Mt|vs|etc|e\.g|i\.e|approx|No)\.|\b[A-Z]\.)$"
)


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that carry no memory on their own: greetings, thanks, interjections,
# agreement and generic reactions. A sentence made only of these (and names) is
# a filler. Content words (nouns, most verbs) are deliberately absent.
FILLER_WORDS = _wordset(
    """
    hey hi hello heya hiya yo howdy greetings morning evening afternoon night good
    bye goodbye later cya see soon care take catch ttyl cheers
    thanks thank thx ty you so much very lot lots a ton tons for the that this it it's
    that's this's is was be all too as such
    wow woah whoa woohoo yay yeah yea yes yep yup yas ok okay okey alright right sure
    oh ohh ah aw aww awww omg lol haha hahaha hehe hmm um uh phew ooh oops ugh
    great awesome amazing cool nice lovely wonderful fantastic fabulous incredible
    brilliant beautiful gorgeous stunning sweet neat fun super excellent perfect
    impressive terrific sick dope rad epic
    congrats congratulations well done job way go luck
    sounds looks seems sound look seem like really totally absolutely definitely
    exactly indeed true agreed agree i i'm glad happy hear to love it of just
    dear buddy pal friend man girl dude guys
    no nope nah not
    """
)
# A sentence opening with one of these and this short is courtesy, not content.
_THANKS = _wordset("thanks thank thx congrats congratulations")
MAX_THANKS_WORDS = 6
_ANSWER_OPENERS = _wordset(
    "yes yeah yep yup yea no nope nah sure definitely absolutely totally "
    "exactly true right maybe probably"
)
# Sentence openers pointing back at the statement before.
_BACKREF = _wordset(
    "it it's its they they're them their those these this that that's he she his her "
    "there also and but so plus which"
)
# Pronouns whose referent a rule cannot be sure of.
_UNSAFE_PRONOUN = re.compile(
    r"\b(?:you|yourself|yourselves|y'all|myself|we|us|our|ours|ourselves)\b"
    r"|\byou['’](?:re|ve|ll|d)\b|\bwe['’](?:re|ve|ll|d)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“”]")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def sentences(text: str) -> list[str]:
    """`text` cut into sentences; an abbreviation ("Dr.", "e.g.") does not end one."""
    out: list[str] = []
    start = 0
    for match in _END.finditer(text):
        piece = text[start : match.start()].rstrip()
        if _ABBREVIATION.search(piece):
            continue
        if piece.strip():
            out.append(piece.strip())
        start = match.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def is_question(sentence: str) -> bool:
    return sentence.rstrip().rstrip('"”’)').endswith("?")


def is_filler(sentence: str, names: frozenset[str] = frozenset()) -> bool:
    """No word outside the filler vocabulary, once `names` (casefolded) are set aside;
    or a short thanks ("Thanks for sharing!", "Congrats on the promotion!")."""
    words = [w.casefold().replace("’", "'") for w in _words(sentence)]
    if words and words[0] in _THANKS and len(words) <= MAX_THANKS_WORDS:
        return True
    return all(w in FILLER_WORDS or w in names for w in words)


def rewrite_is_safe(sentence: str) -> bool:
    """First person may become the speaker's name: no "you"/"we" to misread, no
    reflexive and no quotation in the sentence."""
    return not _UNSAFE_PRONOUN.search(sentence) and not _QUOTED.search(sentence)


@dataclass(frozen=True)
class Statement:
    text: str
    caption: bool = False  # an image the speaker shared
    answer_opener: bool = False  # opens with "yes"/"no": meaningless without its question


@dataclass(frozen=True)
class TurnStatements:
    statements: tuple[Statement, ...]
    question: str | None  # the turn's last question, for the next speaker's answer


def _opens_with(sentence: str, words: frozenset[str]) -> bool:
    first = _words(sentence)[:1]
    return bool(first) and first[0].casefold().replace("’", "'") in words


def split_turn(text: str, names: frozenset[str] = frozenset()) -> TurnStatements:
    """The statements of one turn worth keeping, and its last question."""
    captions = [m.group().strip() for m in _CAPTION.finditer(text)]
    body = _CAPTION.sub("", text)
    kept: list[Statement] = []
    question: str | None = None
    joinable = False  # may the next sentence join the last kept statement?
    bare = False  # the last kept statement is a bare "Yes!": what follows completes it
    for sentence in sentences(body):
        if is_question(sentence):
            question = sentence
            joinable = False  # an answer-less question breaks the thread
            continue
        if is_filler(sentence, names):
            if not kept and _opens_with(sentence, _ANSWER_OPENERS):
                # A bare "Yes!" answers the question before: keep it to pair with.
                kept.append(Statement(sentence, answer_opener=True))
                joinable = bare = True
            continue
        n = len(_words(sentence))
        leans = n < MIN_STANDALONE_WORDS or _opens_with(sentence, _BACKREF)
        if kept and joinable and (leans or bare):
            last = kept[-1]
            if len(_words(last.text)) + n <= MAX_JOINED_WORDS:
                kept[-1] = Statement(f"{last.text} {sentence}", answer_opener=last.answer_opener)
                bare = False
                continue
        kept.append(
            Statement(sentence, answer_opener=not kept and _opens_with(sentence, _ANSWER_OPENERS))
        )
        joinable, bare = True, False
    kept.extend(Statement(c, caption=True) for c in captions)
    return TurnStatements(tuple(kept), question)
