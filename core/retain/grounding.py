"""Whether a model's sentence says what its sources say: names, numbers, words.

A weak local model writes fluent text that its sources do not support: a
profile of "Maya, a 25-year-old woman with a passion for music", a fact about
"Juliper" where the turns say Juniper, the prompt's example conversation
copied back as a fact. What a sentence claims is carried by its names, its
numbers and its content words; each of them should be found in the text the
sentence was made from (the turns of the exchange, the facts a profile cites,
the names the bank already knows). This module measures that, without a
model, so the same test holds for any conversation:

- a *name* (a capitalised word inside a sentence, or any capitalised word
  that is no common word) must occur in the sources; one that does not but is
  one or two letters from a source name is a misspelling (`repair_names`);
- a *number* must occur in the sources (a model's invented age or count);
  dates are the time check's business (month and day names are not names);
- of the *content words*, at least `min_share` must occur in the sources
  (loosely: "booked" matches "book"); narrative rewording ("told", "said",
  "because") is allowed for, which is why the share is not 1.

`support` gives the verdict with what was unsupported, for the ingest report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz

__all__ = ["Support", "Vocabulary", "is_common", "repair_names", "support"]

# Names one or two letters apart (Juliper / Juniper) at this rapidfuzz ratio.
NAME_REPAIR_SIMILARITY = 80.0
# Words compared by their first letters: "booked", "booking" and "book" match.
STEM = 5

_TOKEN = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ][\w'’-]*|\d+(?:[.,:]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

# Words that carry no claim of their own (function words, narrative glue a
# fact may add: "told", "said", "mentioned"), and time words.
_STOP = frozenset(
    """
    a about above after again against all also am an and any are around as at be because
    been before being below between both but by can could did do does doing done down during
    each either even ever every few for from further had has have having he her here hers
    herself him himself his how however i if in into is it its itself just least less let
    like made make many may me might mine more most much must my myself near neither never
    next no nor not now of off often on once one only or other others our ours ourselves out
    over own per perhaps quite rather really same shall she should since so some such than
    that the their theirs them themselves then there these they this those though through
    thus to too toward towards under until up upon us very via was we well were what when
    where whether which while who whom whose why will with within without would yet you your
    yours yourself yourselves
    said says say saying told tells tell telling mentioned mentions mention noted notes note
    explained explains asked asks ask asking shared shares stated states agreed agrees
    replied replies answered answers talked talks discussed discusses reported reports
    thinks think thought believes believe believed feels feel felt wants want wanted
    plans plan planned going got get gets also later earlier already still
    agent user conversation session someone something
    today yesterday tomorrow week weeks month months year years day days morning afternoon
    evening night weekend ago last past upcoming current
    """.split()
)
_TIME_NAMES = frozenset(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
    monday tuesday wednesday thursday friday saturday sunday
    spring summer autumn fall winter
    """.split()
)


def _stem(word: str) -> str:
    return word.casefold().replace("’", "'")[:STEM]


@dataclass(frozen=True)
class Vocabulary:
    """The words, names and numbers of the sources a sentence may draw on."""

    stems: frozenset[str]
    names: frozenset[str]  # casefolded
    numbers: frozenset[str]
    display: tuple[str, ...]  # the source names as written, for repairs

    @classmethod
    def of(cls, texts: Iterable[str], names: Iterable[str] = ()) -> Vocabulary:
        stems: set[str] = set()
        found: set[str] = set()
        numbers: set[str] = set()
        display: dict[str, str] = {}
        for text in texts:
            for token in _TOKEN.findall(text):
                if token[0].isdigit():
                    numbers.add(_number(token))
                    continue
                stems.add(_stem(token))
                for part in re.split(r"['’-]", token):
                    stems.add(_stem(part))
                if token[0].isupper():
                    found.add(token.casefold())
                    display.setdefault(token.casefold(), token)
        for name in names:
            for token in _TOKEN.findall(name):
                stems.add(_stem(token))
                if not token[0].isdigit():
                    found.add(token.casefold())
                    display.setdefault(token.casefold(), token)
        return cls(frozenset(stems), frozenset(found), frozenset(numbers), tuple(display.values()))


def _number(token: str) -> str:
    return token.replace(",", "")


@dataclass(frozen=True)
class Support:
    """How much of a sentence its sources support."""

    names: tuple[str, ...]  # names not in the sources
    numbers: tuple[str, ...]  # numbers not in the sources
    words: tuple[str, ...]  # content words not in the sources
    content: int  # content words in all

    @property
    def share(self) -> float:
        return 1.0 if not self.content else 1.0 - len(self.words) / self.content

    def supported(self, min_share: float) -> bool:
        return not self.names and not self.numbers and self.share >= min_share

    def why(self) -> str:
        parts = []
        if self.names:
            parts.append("names not in its sources: " + ", ".join(self.names))
        if self.numbers:
            parts.append("numbers not in its sources: " + ", ".join(self.numbers))
        if self.content and self.words:
            parts.append(f"{len(self.words)} of {self.content} words not in its sources")
        return "; ".join(parts) or "supported"


def is_common(word: str) -> bool:
    """A function word, narrative glue or a time word: no name, whatever its case."""
    key = word.casefold()
    return key in _STOP or key in _TIME_NAMES


def _is_name(token: str) -> bool:
    """A capitalised word that is no function word and no month or day: a name.
    (A capitalised common word at a sentence's start counts too, but only when
    it is not in the sources either, so it was unsupported anyway.)"""
    key = token.casefold()
    return token[0].isupper() and key not in _TIME_NAMES and key not in _STOP


def support(text: str, vocabulary: Vocabulary) -> Support:
    names: list[str] = []
    numbers: list[str] = []
    missing: list[str] = []
    content = 0
    for sentence in _SENTENCE_END.split(text.strip()):
        tokens = _TOKEN.findall(sentence)
        for i, token in enumerate(tokens):
            if token[0].isdigit():
                near = {t.casefold() for t in tokens[max(0, i - 1) : i + 2]}
                if _number(token) not in vocabulary.numbers and not _is_date_part(token, near):
                    numbers.append(token)
                continue
            key = token.casefold()
            if key in _STOP or key in _TIME_NAMES or len(token) < 3:
                continue
            content += 1
            known = _stem(token) in vocabulary.stems or any(
                _stem(p) in vocabulary.stems for p in re.split(r"['’-]", token) if p
            )
            if _is_name(token) and key not in vocabulary.names and not known:
                names.append(token)
            if not known:
                missing.append(token)
    return Support(
        tuple(dict.fromkeys(names)),
        tuple(dict.fromkeys(numbers)),
        tuple(dict.fromkeys(missing)),
        content,
    )


def _is_date_part(token: str, near: set[str]) -> bool:
    """A year, or a day next to a month's name: dates a fact adds by resolving
    time ("in March 2025", "on 14 March"); the time check judges those."""
    if not token.isdigit():
        return False
    value = int(token)
    return 1900 <= value <= 2100 or (1 <= value <= 31 and bool(near & _TIME_NAMES))


def repair_names(text: str, vocabulary: Vocabulary, unknown: Iterable[str]) -> tuple[str, dict]:
    """`text` with each unknown name that is a near-spelling of a source name
    replaced by it ("Juliper" -> "Juniper"); returns the text and the repairs."""
    repairs: dict[str, str] = {}
    for name in unknown:
        best, score = None, 0.0
        for candidate in vocabulary.display:
            if not candidate[0].isupper() or candidate.casefold() in _STOP:
                continue
            ratio = fuzz.ratio(name.casefold(), candidate.casefold())
            if ratio > score:
                best, score = candidate, ratio
        if best is not None and score >= NAME_REPAIR_SIMILARITY and len(name) >= 4:
            repairs[name] = best
    for wrong, right in repairs.items():
        text = re.sub(rf"(?<!\w){re.escape(wrong)}(?!\w)", right, text)
    return text, repairs
