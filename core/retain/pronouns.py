"""People's words in the third person: "I love my dog" said by Ann -> "Ann loves Ann's dog".

A fact must read on its own, without the turn it came from, so the pronouns
that only the conversation resolves become names: the speaker's first person
("I", "my", "me"), the listener's second person ("your", "you're", and, when
the caller says whom "you" means, a bare "you"), and in reported speech the
speaker's "we" becomes "they". The verb after a pronoun that became a name is
put in the third person where that is cheap ("I go" -> "Ann goes", "you are"
-> "Bob is"). Everything else is kept word for word.

The bank's own agent keeps its first person (`first=False`): its experience
and opinions are written as it would write them ("I booked the flights").
"""

from __future__ import annotations

import re


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*|\s+|[^\sA-Za-z]+")

ADVERBS = _wordset(
    "also just always never still even really truly totally actually often usually "
    "sometimes recently finally already only kinda kind sorta def definitely absolutely "
    "honestly seriously literally genuinely constantly rarely barely hardly simply "
    "certainly probably especially mostly generally normally basically clearly "
    "obviously personally sincerely currently lately now then too so"
)
# Words after "I" that keep their form in the third person (modals, past tenses,
# conjunctions, prepositions): "I went" -> "Caroline went".
_KEEP_FORM = _wordset(
    "was were will would can could should shall may might must did had got went "
    "made took saw came felt thought found knew met began became brought bought "
    "caught taught told said sent spent left lost kept heard held meant paid ran "
    "read sat slept stood understood won wrote gave grew drew drove ate fell flew "
    "forgot forgave hid hung led lent lit rode rose sang sank shook shot showed "
    "spoke stole struck swam threw woke wore built burnt learnt dreamt chose "
    "gonna wanna gotta used and or but nor too as if when because though while "
    "than that who which where to of in on at for with from by about into like "
    "not no never ever once is are be been being does has"
)
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes", "be": "is"}
_NEGATIVE = {
    "don't": "doesn't",
    "don’t": "doesn’t",
    "haven't": "hasn't",
    "haven’t": "hasn’t",
    "dont": "doesn't",
}
# "Should I go" keeps "go": the verb belongs to the auxiliary before "I".
_AUX_BEFORE = _wordset(
    "do does did can could would should will shall am was have has had may might "
    "must let make makes made help helps helped see saw watch watched hear heard"
)
_PAST_PARTICIPLES = _wordset("been gone had done seen got gotten")


def third_person_verb(verb: str) -> str | None:
    """The third-person form of a present-tense verb after "I", or None to leave it."""
    low = verb.lower()
    if low in _NEGATIVE:
        return _NEGATIVE[low]
    if not verb.isalpha() or low in _KEEP_FORM or low in ADVERBS:
        return None
    if low.endswith("ed") and not low.endswith("eed"):
        return None  # a past tense
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def apostrophes(word: str) -> str:
    return word.replace("’", "'")


_YOU_VERBS = {
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "aren't": "isn't",
    "weren't": "wasn't",
    "haven't": "hasn't",
    "don't": "doesn't",
}
# Words after which a "you" opens a clause, so it is the subject of the verb after it.
_CLAUSE_OPENERS = _wordset(
    "and but so because cause if when whenever that or while as since though although "
    "until unless then now also"
)
_WE = {
    "we": "they",
    "we're": "they're",
    "we've": "they've",
    "we'll": "they'll",
    "we'd": "they'd",
    "us": "them",
    "our": "their",
    "ours": "theirs",
    "ourselves": "themselves",
}


def _cased(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def rewrite_pronouns(
    text: str,
    speaker: str,
    addressee: str | None = None,
    *,
    first: bool = True,
    you: bool = False,
    we: bool = False,
) -> str:
    """`text` with first-person pronouns as `speaker` (and "your"-forms as `addressee`).

    "I love it" -> "Caroline loves it", "my" -> "Caroline's", "I'm" -> "Caroline is".
    `first=False` keeps the first person (the agent's own voice); `you=True`
    also turns a bare "you" into the addressee ("you are kind" -> "Bob is
    kind", "I miss you" -> "Ann misses Bob"); `we=True` turns "we"/"our" into
    "they"/"their", as reported speech does. Everything else is kept word for word.
    """
    tokens = _TOKEN.findall(text)
    words = [i for i, t in enumerate(tokens) if t[0].isalpha()]
    position = {tok_index: n for n, tok_index in enumerate(words)}
    out = list(tokens)

    def word_at(n: int) -> str:
        return tokens[words[n]] if 0 <= n < len(words) else ""

    def adjacent(a: int, b: int) -> bool:
        # Only whitespace between word a and word b (no comma, no full stop).
        return all(tokens[k].isspace() for k in range(words[a] + 1, words[b]))

    def conjugate_after(n: int, table: dict[str, str] | None = None) -> None:
        """Put the verb following word n (skipping adverbs) into the third person."""
        k = n + 1
        for _ in range(3):
            if k >= len(words) or not adjacent(k - 1, k):
                return
            if word_at(k).lower() not in ADVERBS:
                break
            k += 1
        else:
            return
        if k < len(words) and adjacent(k - 1, k):
            verb = word_at(k)
            low = apostrophes(verb).lower()
            if table is not None and low in table:
                out[words[k]] = table[low]
                return
            form = third_person_verb(verb)
            if form is not None:
                out[words[k]] = form

    def opens_clause(i: int, n: int) -> bool:
        """Token i (word n) starts a clause: nothing, a stop or a clause word before it."""
        before = "".join(tokens[:i]).rstrip()
        if not before or before[-1] in '.,;:!?—–-("“':
            return True
        return n > 0 and word_at(n - 1).lower() in _CLAUSE_OPENERS

    for i, token in enumerate(tokens):
        if not token[0].isalpha():
            continue
        if (i > 0 and tokens[i - 1].endswith("-")) or (
            i + 1 < len(tokens) and tokens[i + 1].startswith("-")
        ):
            continue  # part of a compound: "me-time"
        n = position[i]
        low = apostrophes(token).lower()
        if first and (
            token == "I" or (token == "i" and (i + 1 == len(tokens) or tokens[i + 1].isspace()))
        ):  # not the "i" of "i.e."
            prev = word_at(n - 1).lower()
            out[i] = speaker
            if not (n > 0 and prev in _AUX_BEFORE and adjacent(n - 1, n)):
                conjugate_after(n)
        elif first and low == "i'm":
            out[i] = f"{speaker} is"
        elif first and low == "i've":
            out[i] = f"{speaker} has"
        elif first and low == "i'll":
            out[i] = f"{speaker} will"
        elif first and low == "i'd":
            nxt = word_at(n + 1).lower()
            had = nxt in _PAST_PARTICIPLES or (nxt.endswith("ed") and not nxt.endswith("eed"))
            out[i] = f"{speaker} had" if had else f"{speaker} would"
        elif first and low == "myself":
            # Reported speech has no gender to give: "helps me express myself" ->
            # "helps Mel express themself", never "express Mel".
            out[i] = "themself" if we else speaker
        elif first and low == "me":
            out[i] = speaker
        elif first and low in ("my", "mine"):
            out[i] = f"{speaker}'s"
        elif we and low in _WE:
            out[i] = _cased(_WE[low], token)
        elif addressee:
            if low in ("your", "yours"):
                out[i] = f"{addressee}'s"
            elif low == "yourself":
                out[i] = "themself" if we and you else addressee
            elif low == "you're":
                out[i] = f"{addressee} is"
            elif low == "you've":
                out[i] = f"{addressee} has"
            elif low == "you'll":
                out[i] = f"{addressee} will"
            elif low == "you'd":
                out[i] = f"{addressee} would"
            elif you and low == "you":
                out[i] = addressee
                prev = word_at(n - 1).lower()
                aux_before = n > 0 and prev in _AUX_BEFORE and adjacent(n - 1, n)
                if not aux_before and opens_clause(i, n):
                    conjugate_after(n, _YOU_VERBS)
    return "".join(out)
