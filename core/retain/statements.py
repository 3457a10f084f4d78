"""A turn cut into the statements worth remembering, without a language model.

A chat turn mixes what a memory should keep ("I ran a charity race last
Saturday") with what it should not: greetings and thanks ("Hey Mel!",
"Thanks, Caroline!"), bare reactions ("Wow, that's awesome!") and questions,
which state nothing (their answer is what is worth keeping). This module:

- cuts a turn into sentences (abbreviations such as "Dr." do not end one) and
  takes image captions ("[image: a photo of …]") out as their own statement;
- drops *fillers*: sentences with no word outside a vocabulary of greetings,
  interjections, thanks and generic reactions, once the names are set aside;
- drops *phatic* sentences: what is left is filler once the phrases that only
  tend the conversation are taken out — wishing the listener well ("hope all's
  good", "take care"), judging the chat itself ("great talking to you"),
  thanking or praising the listener ("thanks, you're the best", "your support
  means a lot"). A phrase with content after it ("have fun at the concert")
  leaves content behind, so the sentence stays;
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
    "is_phatic",
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
    fine fair enough
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


# Phrases that only tend the conversation: they greet, wish well, judge the chat,
# thank, praise or encourage the listener. Matched on casefolded text with plain
# apostrophes. Each stops where content could begin, so what follows it is judged
# by the filler test.
# A person's qualities, praised to their face ("your courage is inspiring").
_TRAITS = (
    r"(?:courage|bravery|strength|resilience|determination|dedication|passion|positivity"
    r"|attitude|spirit|energy|kindness|talent|creativity|journey|story|growth|progress"
    r"|commitment|perseverance|honesty|openness)"
)
_INTENSIFIER = r"(?:(?:so|really|very|super|such|truly|always|just|totally|absolutely|a|the)\s+)*"
_PHATIC = re.compile(
    "|".join(
        (
            # wishing well, greeting, leave-taking
            r"\b(?:i\s+)?hope\s+(?:all|everything|you|your|things|life|it)\b[^.!?,;]{0,40}?"
            r"\b(?:good|well|great|fine|ok|okay|awesome|fantastic|treating\s+you\s+well)\b",
            r"\bhave\s+an?\s+(?:\w+\s+)?(?:day|night|weekend|week|evening|time|one)\b",
            r"\btake\s+(?:care|it\s+easy)\b(?:\s+of\s+yourself)?",
            r"\b(?:talk|speak|chat)\s+(?:(?:to|with)\s+you\s+)?(?:soon|later)\b",
            r"\bkeep(?:ing)?\s+(?:you|me)\s+(?:posted|updated)(?:\s+on\s+(?:it|that|them))?\b",
            r"\b(?:see|catch)\s+(?:you|ya)(?:\s+(?:soon|later|around|then|next\s+time))?\b",
            r"\b(?:until\s+next\s+time|long\s+time\s+no\s+(?:see|talk))\b",
            # judging the chat itself
            r"\b(?:(?:it|this|that)(?:'s|\s+is|\s+was|'s\s+been|\s+has\s+been)\s+)?"
            + _INTENSIFIER
            + r"(?:great|good|nice|lovely|awesome|fun|wonderful|cool|amazing|fantastic"
            r"|a\s+pleasure|a\s+joy)\s+(?:to\s+)?(?:talk(?:ing)?|chat(?:ting)?|catch(?:ing)?\s+up"
            r"|hear(?:ing)?\s+from\s+you|speak(?:ing)?|see(?:ing)?\s+you|(?:re)?connect(?:ing)?)"
            r"(?:\s+(?:to|with)\s+you)?(?:\s+(?:again|today|as\s+always|too))*",
            r"\b(?:i\s+)?(?:\w+\s+)?(?:love|loved|enjoy|enjoyed)\s+(?:talking|chatting"
            r"|our\s+(?:chats?|talks?|conversations?))(?:\s+(?:to|with)\s+you)?",
            # thanking and praising the listener
            r"\b(?:thanks|thank\s+you|thx)(?:\s+(?:so|very)\s+much|\s+a\s+(?:lot|ton))?"
            r"(?:\s+for\s+(?:the|your|all\s+(?:the|your))\s+(?:\w+\s+)?(?:support|words"
            r"|encouragement|chat|talk|help|advice|message|compliment|love|kindness))?",
            r"\byou(?:'re|\s+are|\s+were)\s+" + _INTENSIFIER + r"(?:best|amazing|awesome|great"
            r"|sweet|kind|wonderful|star|legend|gem|angel|lifesaver|(?:good|great|true|real)\s+friend)"
            r"\b",
            r"\byou\s+rock\b",
            # praising the listener's person: how they are, not what they did
            r"\byou(?:'re|\s+are|\s+were)\s+" + _INTENSIFIER + r"(?:brave|strong|inspiring"
            r"|inspirational|talented|resilient|courageous|incredible|admirable|an\s+inspiration"
            r"|a\s+role\s+model)(?:\s+(?:for|to)\s+(?:share|sharing|open(?:ing)?\s+up)(?:\s+(?:that|this|it))?)?\b",
            r"\byour\s+" + _TRAITS + r"(?:\s+(?:and|&)\s+" + _TRAITS + r")?[^.!?]{0,40}?\s+"
            r"(?:is|are|was|were|has\s+been)\s+" + _INTENSIFIER + r"(?:inspiring|amazing|incredible"
            r"|awesome|admirable|impressive|remarkable|wonderful|great|an\s+inspiration)\b",
            r"\byou\s+should\s+(?:be\s+)?" + _INTENSIFIER + r"(?:be\s+)?proud\s+of\s+yourself\b",
            r"\b(?:that|this|it|your\s+(?:\w+\s+){0,3}?(?:support|words|encouragement|friendship"
            r"|help|kindness|advice|message|care))\s+(?:really\s+|truly\s+|just\s+)?means?\s+"
            r"(?:a\s+lot|so\s+much|the\s+world|a\s+ton)(?:\s+to\s+me)?",
            r"\b(?:i\s+)?(?:really\s+|truly\s+)?appreciate\s+(?:it|that|this|you|your\s+(?:\w+\s+)?"
            r"(?:support|words|help|encouragement|kindness|advice))\b",
            r"\b(?:i'm\s+|i\s+am\s+)?(?:so\s+|really\s+)?(?:glad|happy)\s+(?:to\s+hear|(?:that\s+)?you)"
            r"\b[^.!?]{0,60}",
            r"\b(?:no\s+(?:worries|problem)|any\s*time|you(?:'re|\s+are)\s+welcome|my\s+pleasure"
            r"|(?:so\s+)?sorry\s+to\s+hear(?:\s+(?:that|about\s+that|it))?)\b",
            # agreeing without adding anything ("Agreed for now")
            r"\bfor\s+now\b",
            # encouraging the listener
            r"\byou(?:'ve)?\s+got\s+this\b|\bgood\s+luck\b(?:\s+with\s+(?:that|it|everything))?",
            r"\bkeep\s+(?:it\s+up|going|at\s+it|up\s+the\s+(?:good|great)\s+work)\b",
            r"\b(?:i\s+)?believe\s+in\s+you\b|\bproud\s+of\s+you\b",
            r"\byou(?:'ll|\s+will)\s+(?:do\s+(?:great|fine|well|amazing)|nail\s+it|succeed|make\s+it)\b",
        )
    )
)
# Words a phatic phrase may leave behind ("…with you again", "means a lot to me").
_PHATIC_REST = _wordset("again always today me too both ever everyone guys")


def is_phatic(sentence: str, names: frozenset[str] = frozenset()) -> bool:
    """Only tends the conversation: once its phatic phrases are taken out, what is
    left is filler ("Hey Caroline, hope all's good!", "It's great talking to you")."""
    text = sentence.casefold().replace("’", "'")
    rest = _PHATIC.sub(" ", text)
    if rest == text:
        return False
    words = _words(rest)
    return all(w in FILLER_WORDS or w in names or w in _PHATIC_REST for w in words)


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
        if is_phatic(sentence, names):
            continue  # courtesy, not a memory ("No worries!" answers nothing either)
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
