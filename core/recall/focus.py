"""Speakers in the query: who the question is about, apart from what it asks.

"What activities does Melanie partake in?" is answered by Melanie's own turns
far more often than by turns that merely mention her: on the LoCoMo
development split, 97% of the evidence of questions naming one of the two
speakers was spoken by that speaker. Neither channel sees this, and the name
even misleads the semantic one: every turn is "Melanie: …" or addressed to her,
so in a short question the name pulls the embedding toward all her turns
rather than toward activities. So recall splits the two:

- who: when the query names some, but not all, of the bank's speakers (by
  name or by an alias of the speaker's entity, as a whole word), the fused
  score of every candidate one of them spoke (one of its source turns is
  theirs) is multiplied by 1 + `recall.speaker_focus`;
- what: with `recall.embed_without_speakers`, the text embedded for the
  semantic and graph channels is the query without the speaker names it
  holds (unless nothing would be left).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.recall.channels import has_words
from core.store.bank_store import BankStore

if TYPE_CHECKING:
    from core.recall.unitcache import Labels


@dataclass(frozen=True)
class Speakers:
    """The bank's speakers and which of them a query names."""

    names: dict[str, frozenset[str]]  # speaker -> every name it goes by
    named: tuple[str, ...]  # the speakers the query names, as their turns spell them

    @property
    def focused(self) -> tuple[str, ...]:
        """The named speakers, unless that is everyone (then naming picks out no one)."""
        return self.named if len(self.named) < len(self.names) else ()

    def without_names(self, query: str) -> str:
        """`query` without the names (and their possessive 's) of the named speakers."""
        text = query
        for speaker in self.named:
            for name in sorted(self.names[speaker], key=len, reverse=True):
                text = re.sub(rf"(?<!\w){re.escape(name)}(?:'s|’s)?(?!\w)", " ", text, flags=re.I)
        text = re.sub(r"\s+", " ", text).strip()
        return text if has_words(text) else query


def speakers(store: BankStore, query: str, labels: Labels | None = None) -> Speakers:
    """Who speaks in the bank, and whom of them `query` names (`labels`: a small
    bank's, from memory)."""
    by_speaker = labels.speakers if labels is not None else speaker_names(store.reader())
    named = tuple(s for s, names in by_speaker.items() if any(_names(n, query) for n in names))
    return Speakers(by_speaker, named)


def speaker_names(con) -> dict[str, frozenset[str]]:
    """Everyone who speaks in a turn (sorted), with every name they go by."""
    spelled = [
        r[0] for r in con.execute("SELECT DISTINCT speaker FROM turns ORDER BY speaker").fetchall()
    ]
    names: dict[str, set[str]] = {s.casefold(): {s} for s in spelled}
    # A speaker's entity may since have been renamed: its names and aliases all count.
    for name, aliases in con.execute(
        "SELECT name, aliases FROM entities WHERE status = 'active' AND (lower(name) IN"
        " (SELECT unnest($1))"
        " OR len(list_intersect(list_transform(aliases, lambda a: lower(a)), $1)) > 0)",
        [list(names)],
    ).fetchall():
        every = {name, *(aliases or ())}
        for speaker in {n.casefold() for n in every} & set(names):
            names[speaker] |= every
    return {s: frozenset(n for n in names[s.casefold()] if n.strip()) for s in spelled}


def _names(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def spoken_by(
    store: BankStore,
    unit_ids: Sequence[str],
    speakers: Sequence[str],
    labels: Labels | None = None,
) -> frozenset[str]:
    """Of `unit_ids`, those with a source turn spoken by one of `speakers`
    (`labels`: a small bank's, from memory)."""
    if not unit_ids or not speakers:
        return frozenset()
    if labels is not None:
        sources, wanted = labels.sources, set(speakers)
        return frozenset(
            u for u in unit_ids if any(t.speaker in wanted for t in sources.get(u, ()))
        )
    rows = (
        store.reader()
        .execute(
            "SELECT DISTINCT u.id FROM (SELECT id, document_id, unnest(source_ids) AS turn"
            " FROM units WHERE id IN (SELECT unnest(?))) u"
            " JOIN turns t ON t.document_id = u.document_id AND t.id = u.turn"
            " WHERE t.speaker IN (SELECT unnest(?))",
            [list(unit_ids), list(speakers)],
        )
        .fetchall()
    )
    return frozenset(r[0] for r in rows)
