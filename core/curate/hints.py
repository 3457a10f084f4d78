"""Merge hints: pairs of entities that may be one, for a curator to judge.

Retain merges a new name into an entity only when it is sure (name, shared
company and time together above `retain.entity_merge_threshold`). Below that
sureness two entities may still be one: a name inside the other ("Beacon" and
"Beacon 2.0"), a near spelling ("Tomás" and "Tomas"), or two names nearly
always mentioned together ("Animal Crossing" and "New Horizons"). A hint says
which, and why; it never merges anything. Reading only, computed on demand.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import duckdb
from rapidfuzz import fuzz, process

from core.retain.entities import entity_comentions, list_entities
from core.types import Entity

__all__ = ["MergeHint", "merge_hints"]

# Two spellings at least this close (rapidfuzz ratio of the folded names, 0..100).
NEAR_SPELLING = 88
# Names shorter than this (letters) are too short to compare by spelling.
MIN_SPELLED = 4
# Two entities mentioned together in at least this share of the facts of either.
TOGETHER_SHARE = 0.5
TOGETHER_MIN = 3
# Types that say little about what a thing is: they go with any other type.
_LOOSE_TYPES = frozenset({"other", "concept", "product"})
# Hints listed at most (the strongest first).
MAX_HINTS = 200


@dataclass(frozen=True)
class MergeHint:
    """`source` may be the same entity as `target` (the more mentioned of the two,
    so merging the first into the second keeps the better known name)."""

    source_id: str
    source_name: str
    target_id: str
    target_name: str
    score: float  # 0..1: how strongly the evidence suggests one entity
    reason: str


def _fold(name: str) -> str:
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(re.findall(r"\w+", text.casefold()))


def _types_go(a: Entity, b: Entity) -> bool:
    return a.type == b.type or a.type in _LOOSE_TYPES or b.type in _LOOSE_TYPES


def _contains(short: str, long: str) -> bool:
    """The words of `short` run whole at the start or the end of `long`'s."""
    s, w = short.split(), long.split()
    if not s or len(s) >= len(w) or not any(len(x) >= 3 for x in s):
        return False
    return w[: len(s)] == s or w[-len(s) :] == s


def merge_hints(con: duckdb.DuckDBPyConnection) -> list[MergeHint]:
    """Pairs of active entities that may be one, strongest first."""
    entities = list_entities(con)
    if len(entities) < 2:
        return []
    by_id = {e.id: e for e in entities}
    found: dict[tuple[str, str], tuple[float, str]] = {}

    def hint(a: Entity, b: Entity, score: float, reason: str) -> None:
        key = (min(a.id, b.id), max(a.id, b.id))
        if key not in found or found[key][0] < score:
            found[key] = (score, reason)

    names = [(e, _fold(n), n) for e in entities for n in dict.fromkeys((e.name, *e.aliases))]
    names = [(e, f, n) for e, f, n in names if f]
    # One name inside the other: "Beacon" and "Beacon 2.0", "Atlas" and "Project Atlas".
    by_word: dict[str, list[int]] = {}
    for i, (_, folded, _) in enumerate(names):
        for word in set(folded.split()):
            by_word.setdefault(word, []).append(i)
    for a, fa, na in names:
        for j in {j for w in set(fa.split()) for j in by_word[w]}:
            b, fb, nb = names[j]
            if a.id == b.id or not _types_go(a, b) or not _contains(fa, fb):
                continue
            if a.type == "person" and b.type == "person" and len(fa.split()) > 1:
                continue  # "Ana Silva" in "Ana Silva Costa" is as likely another person
            hint(a, b, 0.8, f"“{na}” is part of “{nb}”")
    # Near spellings: "Tomás" and "Tomas", "Juniper" and "Juliper".
    folded = [f for _, f, _ in names]
    matrix = process.cdist(folded, folded, scorer=fuzz.ratio, score_cutoff=NEAR_SPELLING)
    for i, j in zip(*matrix.nonzero(), strict=True):
        if i >= j:
            continue
        (a, fa, na), (b, fb, nb) = names[i], names[j]
        if a.id == b.id or not _types_go(a, b) or min(len(fa), len(fb)) < MIN_SPELLED:
            continue
        if fa.split()[-1:] != fb.split()[-1:] and len(fa.split()) > 1 and len(fb.split()) > 1:
            continue  # two full names with different family names: two people
        score = float(matrix[i, j]) / 100
        if fa == fb:
            hint(a, b, 0.95, f"“{na}” and “{nb}” are spelled alike")
        else:
            hint(a, b, 0.9 * score, f"near spellings: “{na}” and “{nb}” ({score:.0%})")
    # Nearly always mentioned together (not two people: people meet).
    facts = dict(
        con.execute(
            "SELECT m.entity_id, count(DISTINCT m.unit_id) FROM mentions m"
            " JOIN units u ON u.id = m.unit_id AND u.status = 'active'"
            " WHERE u.network <> 'observation' GROUP BY 1"
        ).fetchall()
    )
    for a_id, b_id, together in entity_comentions(con, TOGETHER_MIN):
        a, b = by_id.get(a_id), by_id.get(b_id)
        if a is None or b is None or (a.type == "person" and b.type == "person"):
            continue
        if not _types_go(a, b):
            continue
        share = together / max(min(facts.get(a_id, 0), facts.get(b_id, 0)), 1)
        whole = together / max(facts.get(a_id, 0) + facts.get(b_id, 0) - together, 1)
        if share >= 0.8 and whole >= TOGETHER_SHARE:
            hint(a, b, 0.6 * whole + 0.2, f"mentioned together in {together} of their facts")
    hints = []
    for (x, y), (score, reason) in found.items():
        a, b = by_id[x], by_id[y]
        # Of equals, the shorter name stays ("Beacon 2.0" into "Beacon").
        source, target = sorted((a, b), key=lambda e: (e.mention_count, -len(e.name), e.name))
        hints.append(
            MergeHint(source.id, source.name, target.id, target.name, round(score, 2), reason)
        )
    hints.sort(key=lambda h: (-h.score, h.source_name, h.target_name))
    return hints[:MAX_HINTS]
