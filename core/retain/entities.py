"""Entity resolution: names as facts mention them -> canonical entities with aliases.

A surface form ("Tom", "Northwind", "Room 101") is resolved against the bank's
entities and those created earlier in the same document:

1. an exact match of the folded name or an alias (case and accents ignored)
   is the same entity — unless one side is a person and the other an
   organisation, place or product (a person "Jordan" is not the place "Jordan");
2. otherwise each candidate whose name is similar enough is scored
       score = w_name·name + w_cooccurrence·cooccurrence + w_time·time
   with the weights and the merge threshold from the bank config
   (`retain.entity_*`). `name` is a weighted string similarity (rapidfuzz
   token_sort_ratio and a length-discounted partial_ratio, plus first-name and
   token-subset rules: "Tom" ~ "Tomás", "Northwind" ~ "Northwind Analytics");
   numbers and codes must match exactly, so "Room 101" never becomes
   "Room 102". `cooccurrence` is the overlap of the names mentioned around the
   surface with the candidate's known neighbours; `time` decays with the gap
   between the surface's time and the candidate's last mention.
   With the default weights a name alone (0.6) never reaches the threshold
   (0.75): a fuzzy merge needs the context to agree.

A later mention that says more precisely what an entity is changes its type: a
vague type ("other", "concept") gives way to a specific one, and a place to a
product (`REFINEMENTS`: "in Figma" then "the Figma file"), within a document too.

Every distinct surface of a document gets one decision row with its scores
(`entity_decisions`), whether it merged or became a new entity. Within one
document a surface form always maps to the same entity.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa
from rapidfuzz import fuzz, process

from core.types import EngramError, Entity, UnitStatus, new_id

SPECIFIC_TYPES = frozenset({"person", "org", "place", "product"})
ENTITY_TYPES = ("person", "org", "place", "product", "concept", "other")
# (type held, type of a new mention) where the mention wins: a name typed a place
# from a preposition ("comment in Figma") that a later mention shows used as a
# tool ("the Figma file") is a product, whichever came first.
REFINEMENTS = frozenset({("place", "product")})
MAX_SURFACE_CHARS = 100
# How many fuzzy candidates are scored in full per surface.
CANDIDATES = 12
# Below this many characters partial matches are coincidences ("Caro" in "Oscar").
PARTIAL_MIN_CHARS = 6


def wordset(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text` (word lists read better as prose)."""
    return frozenset(text.split())


# Words that are never entities, whatever a model says.
_NOT_ENTITIES = wordset(
    """
    i me my mine myself you your yours yourself we us our ours ourselves he him his
    himself she her hers herself they them their theirs themselves it its itself this
    that these those someone somebody everyone everybody anyone anybody nobody people
    person something anything everything nothing here there today tomorrow yesterday
    """
)
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_EDGE_PUNCT = "\"'“”‘’`*_()[]{}<>.,;:!?"


def normalize_surface(name: str) -> str:
    """The surface as stored: whitespace collapsed, quotes and a possessive 's dropped."""
    text = " ".join(str(name).split()).strip(_EDGE_PUNCT + " ")
    text = _POSSESSIVE.sub("", text).strip(_EDGE_PUNCT + " ")
    if text.lower().startswith("the ") and len(text) > 4:
        text = text[4:]
    return text[:MAX_SURFACE_CHARS]


def fold(text: str) -> str:
    """Case, accents and punctuation folded away: 'Tomás' -> 'tomas'."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _NON_WORD.sub(" ", stripped.casefold()).strip()


def is_entity_name(surface: str) -> bool:
    folded = fold(surface)
    return bool(folded) and folded not in _NOT_ENTITIES and any(c.isalnum() for c in folded)


def codes(folded: str) -> frozenset[str]:
    """Tokens holding a digit: numbers and codes, which must match exactly."""
    return frozenset(t for t in folded.split() if any(c.isdigit() for c in t))


def name_similarity(a: str, b: str) -> float:
    """Weighted string similarity of two names in [0, 1] (see the module docstring)."""
    fa, fb = fold(a), fold(b)
    if not fa or not fb:
        return 0.0
    if fa == fb:
        return 1.0
    if codes(fa) != codes(fb):
        return 0.0
    ta, tb = fa.split(), fb.split()
    short, long_ = (ta, tb) if len(fa) <= len(fb) else (tb, ta)
    if len(short) == 1 and len(short[0]) < PARTIAL_MIN_CHARS:
        # A short one-word name is like another only as its start ("Tom" for
        # "Tomás"): a letter's difference is another name ("Ana" is not "Dana").
        score = 0.0
    else:
        score = fuzz.token_sort_ratio(fa, fb) / 100.0
    if long_[: len(short)] == short:
        # "Northwind" and "Northwind Analytics": one name opens the other.
        score = max(score, 0.9)
    elif len(short) == 1 and len(short[0]) >= 3 and long_[0].startswith(short[0]):
        # A first name or its short form: "Tom" and "Tomás Rivera".
        score = max(score, 0.85)
    shorter = min(len(fa), len(fb))
    if shorter >= PARTIAL_MIN_CHARS:
        # partial_ratio alone says "Al" is 100% like "Alice Smith", and on short
        # names it finds letters in common anywhere: only for longer names,
        # discounted by the length ratio.
        ratio = shorter / max(len(fa), len(fb))
        score = max(score, fuzz.partial_ratio(fa, fb) / 100.0 * math.sqrt(ratio))
    return min(score, 1.0)


def types_compatible(a: str, b: str) -> bool:
    """A person is never an organisation, place or product; those three blur into
    each other in practice (a company is named after its place, sold as a product),
    and "concept" or "other" match anything."""
    if a == b or a not in SPECIFIC_TYPES or b not in SPECIFIC_TYPES:
        return True
    return "person" not in (a, b)


def cooccurrence_score(context: set[str], neighbours: set[str]) -> float:
    """Overlap coefficient of two sets of folded names; 0 when either is empty."""
    if not context or not neighbours:
        return 0.0
    return len(context & neighbours) / min(len(context), len(neighbours))


def time_score(
    a: Iterable[datetime | None], b: Iterable[datetime | None], scale_days: float
) -> float:
    """exp(-gap / scale) for the smallest gap between two sets of mention times; 0
    when either has none."""
    xs = sorted(t for t in a if t is not None)
    ys = sorted(t for t in b if t is not None)
    if not xs or not ys or scale_days <= 0:
        return 0.0
    gap = math.inf
    for x in xs:
        i = bisect.bisect_left(ys, x)
        # The nearest time is the one just before or just after x.
        for y in ys[max(0, i - 1) : i + 1]:
            gap = min(gap, abs((x - y).total_seconds()))
    return math.exp(-gap / 86400.0 / scale_days)


@dataclass
class _Candidate:
    id: str
    name: str
    type: str
    aliases: list[str]
    neighbours: set[str] = field(default_factory=set)
    # When it is mentioned: the bank's first and last time, and every time in this document.
    times: list[datetime] = field(default_factory=list)
    new: bool = False
    changed: bool = False

    def names(self) -> list[str]:
        return [self.name, *self.aliases]


@dataclass(frozen=True)
class EntityDecision:
    """How one surface form of a document was resolved, with the scores behind it.

    decision: "exact" (name), "alias", "merge" (fuzzy score over the threshold)
    or "new" (no candidate reached it; `candidate_id` is the best one seen)."""

    surface: str
    entity_type: str
    entity_id: str
    decision: str
    score: float | None = None
    candidate_id: str | None = None
    name_score: float | None = None
    cooccurrence_score: float | None = None
    time_score: float | None = None
    threshold: float | None = None
    document_id: str | None = None
    decided_at: datetime | None = None
    id: str = ""


@dataclass(frozen=True)
class ResolverSettings:
    name_weight: float = 0.6
    cooccurrence_weight: float = 0.25
    time_weight: float = 0.15
    threshold: float = 0.75
    candidate_floor: float = 0.5
    time_scale_days: float = 30.0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ResolverSettings:
        return cls(
            name_weight=float(config["retain.entity_name_weight"]),
            cooccurrence_weight=float(config["retain.entity_cooccurrence_weight"]),
            time_weight=float(config["retain.entity_time_weight"]),
            threshold=float(config["retain.entity_merge_threshold"]),
            candidate_floor=float(config["retain.entity_candidate_floor"]),
            time_scale_days=float(config["retain.entity_time_scale_days"]),
        )


class EntityResolver:
    """Resolves the surfaces of one document; `write` stores the outcome in a transaction."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        settings: ResolverSettings,
        *,
        document_id: str | None = None,
        now: datetime,
        exclude_units: Sequence[str] = (),
    ) -> None:
        self.settings = settings
        self.document_id = document_id
        self.now = now
        self._candidates: dict[str, _Candidate] = {}
        self._by_name: dict[str, list[_Candidate]] = {}
        self._choices: list[str] = []
        self._owners: list[_Candidate] = []
        self._cache: dict[tuple[str, str], str] = {}
        self.decisions: list[EntityDecision] = []
        for candidate in _load_candidates(con, exclude_units):
            self._add(candidate)

    # -- lookup tables ---------------------------------------------------------

    def _add(self, candidate: _Candidate) -> None:
        self._candidates[candidate.id] = candidate
        for name in candidate.names():
            self._index_name(candidate, name)

    def _index_name(self, candidate: _Candidate, name: str) -> None:
        key = fold(name)
        if not key:
            return
        owners = self._by_name.setdefault(key, [])
        if candidate not in owners:
            owners.append(candidate)
            self._choices.append(key)
            self._owners.append(candidate)

    def known_names(self) -> list[str]:
        """Every canonical name and alias, for the extractor's `known_entities`."""
        return [n for c in self._candidates.values() for n in c.names()]

    # -- resolving -------------------------------------------------------------

    def resolve(
        self,
        surface: str,
        type_: str = "other",
        context: Iterable[str] = (),
        when: Iterable[datetime | None] = (),
    ) -> str | None:
        """The entity id for `surface` (creating the entity if nothing matches).

        `context`: names mentioned around it (other entities of its facts, the
        speakers); `when`: the times of its facts. None for non-names."""
        when = [t for t in when if t is not None]
        surface = normalize_surface(surface)
        if not is_entity_name(surface):
            return None
        type_ = type_ if type_ in ENTITY_TYPES else "other"
        key = fold(surface)
        cached = self._cache.get((key, type_)) or self._cache.get((key, "*"))
        if cached is not None:
            self._retype(self._candidates[cached], type_)
            return cached
        ctx = {fold(c) for c in context} - {key, ""}
        entity_id = self._exact(surface, key, type_, ctx, when)
        if entity_id is None:
            entity_id = self._fuzzy(surface, key, type_, ctx, when)
        # A later mention of the same surface with another (or no) type is the
        # same thing within one document.
        self._cache[(key, type_)] = entity_id
        self._cache.setdefault((key, "*"), entity_id)
        return entity_id

    def _exact(
        self, surface: str, key: str, type_: str, ctx: set[str], when: list[datetime]
    ) -> str | None:
        owners = [c for c in self._by_name.get(key, ()) if types_compatible(c.type, type_)]
        if not owners:
            return None
        # Prefer the same type, then the canonical name over an alias.
        owners.sort(key=lambda c: (c.type != type_, fold(c.name) != key))
        chosen = owners[0]
        decision = "exact" if fold(chosen.name) == key else "alias"
        self._absorb(chosen, surface, type_, ctx, when)
        self._decide(surface, type_, chosen.id, decision, score=1.0, candidate_id=chosen.id)
        return chosen.id

    def _fuzzy(
        self, surface: str, key: str, type_: str, ctx: set[str], when: list[datetime]
    ) -> str:
        s = self.settings
        best: tuple[float, _Candidate, float, float, float] | None = None
        if self._choices:
            hits = process.extract(
                key,
                self._choices,
                scorer=fuzz.WRatio,
                limit=CANDIDATES * 3,
                score_cutoff=s.candidate_floor * 100,
            )
            seen: set[str] = set()
            for _choice, _score, index in hits:
                candidate = self._owners[index]
                if candidate.id in seen or not types_compatible(candidate.type, type_):
                    continue
                seen.add(candidate.id)
                if len(seen) > CANDIDATES:
                    break
                name = max(name_similarity(surface, n) for n in candidate.names())
                if name < s.candidate_floor:
                    continue
                co = cooccurrence_score(ctx, candidate.neighbours)
                tm = time_score(when, candidate.times, s.time_scale_days)
                score = s.name_weight * name + s.cooccurrence_weight * co + s.time_weight * tm
                if best is None or score > best[0]:
                    best = (score, candidate, name, co, tm)
        if best is not None and best[0] >= s.threshold:
            score, candidate, name, co, tm = best
            self._absorb(candidate, surface, type_, ctx, when)
            self._decide(surface, type_, candidate.id, "merge", score, candidate.id, name, co, tm)
            return candidate.id
        created = _Candidate(
            id=new_id(),
            name=surface,
            type=type_,
            aliases=[],
            neighbours=set(ctx),
            times=sorted(when),
            new=True,
            changed=True,
        )
        self._add(created)
        if best is None:
            self._decide(surface, type_, created.id, "new")
        else:
            score, candidate, name, co, tm = best
            self._decide(surface, type_, created.id, "new", score, candidate.id, name, co, tm)
        return created.id

    def _absorb(
        self,
        candidate: _Candidate,
        surface: str,
        type_: str,
        ctx: set[str],
        when: list[datetime],
    ) -> None:
        """What resolving `surface` to `candidate` teaches about it."""
        key = fold(surface)
        if key not in {fold(n) for n in candidate.names()}:
            if set(key.split()) > set(fold(candidate.name).split()):
                # The fuller form becomes the name: "Northwind" -> "Northwind Analytics".
                candidate.aliases.append(candidate.name)
                candidate.name = surface
            else:
                candidate.aliases.append(surface)
            self._index_name(candidate, surface)
            candidate.changed = True
        self._retype(candidate, type_)
        candidate.neighbours |= ctx
        if when:
            candidate.times = sorted({*candidate.times, *when})

    def _retype(self, candidate: _Candidate, type_: str) -> None:
        """A mention that says more precisely what the entity is changes its type."""
        vaguer = candidate.type not in SPECIFIC_TYPES and type_ in SPECIFIC_TYPES
        if vaguer or (candidate.type, type_) in REFINEMENTS:
            candidate.type = type_
            candidate.changed = True

    def _decide(
        self,
        surface: str,
        type_: str,
        entity_id: str,
        decision: str,
        score: float | None = None,
        candidate_id: str | None = None,
        name: float | None = None,
        co: float | None = None,
        tm: float | None = None,
    ) -> None:
        self.decisions.append(
            EntityDecision(
                id=new_id(),
                surface=surface,
                entity_type=type_,
                entity_id=entity_id,
                decision=decision,
                score=score,
                candidate_id=candidate_id,
                name_score=name,
                cooccurrence_score=co,
                time_score=tm,
                threshold=self.settings.threshold,
                document_id=self.document_id,
                decided_at=self.now,
            )
        )

    # -- results ---------------------------------------------------------------

    @property
    def new_entities(self) -> list[str]:
        return [c.id for c in self._candidates.values() if c.new]

    @property
    def updated_entities(self) -> list[str]:
        """Existing entities that gained an alias, a fuller name or a type."""
        return [c.id for c in self._candidates.values() if c.changed and not c.new]

    @property
    def merged(self) -> int:
        """Surfaces resolved to an existing entity by a fuzzy score (not by name)."""
        return sum(1 for d in self.decisions if d.decision == "merge")

    @property
    def matched(self) -> int:
        return sum(1 for d in self.decisions if d.decision in ("exact", "alias"))

    def write(self, con: duckdb.DuckDBPyConnection) -> None:
        """Insert new entities, update changed ones, record every decision (in bulk)."""
        new = [c for c in self._candidates.values() if c.new]
        changed = [c for c in self._candidates.values() if c.changed and not c.new]
        ts = pa.timestamp("us")
        if new:
            table = pa.table(
                {
                    "id": pa.array([c.id for c in new], pa.string()),
                    "name": pa.array([c.name for c in new], pa.string()),
                    "type": pa.array([c.type for c in new], pa.string()),
                    "aliases": pa.array([c.aliases for c in new], pa.list_(pa.string())),
                    "status": pa.array([str(UnitStatus.ACTIVE)] * len(new), pa.string()),
                    "created_at": pa.array([self.now] * len(new), ts),
                    "updated_at": pa.array([self.now] * len(new), ts),
                }
            )
            _insert(con, "entities", table)
        if changed:
            table = pa.table(
                {
                    "id": pa.array([c.id for c in changed], pa.string()),
                    "name": pa.array([c.name for c in changed], pa.string()),
                    "type": pa.array([c.type for c in changed], pa.string()),
                    "aliases": pa.array([c.aliases for c in changed], pa.list_(pa.string())),
                }
            )
            con.register("_entity_updates", table)
            try:
                con.execute(
                    "UPDATE entities SET name = n.name, type = n.type, aliases = n.aliases,"
                    " updated_at = ? FROM _entity_updates n WHERE entities.id = n.id",
                    [self.now],
                )
            finally:
                con.unregister("_entity_updates")
        if self.decisions:
            write_decisions(con, self.decisions)


def _insert(con: duckdb.DuckDBPyConnection, table_name: str, table: pa.Table) -> None:
    view = f"_new_{table_name}"
    con.register(view, table)
    try:
        con.execute(f"INSERT INTO {table_name} BY NAME SELECT * FROM {view}")
    finally:
        con.unregister(view)


def write_decisions(con: duckdb.DuckDBPyConnection, decisions: Sequence[EntityDecision]) -> None:
    def column(name: str, kind: pa.DataType) -> pa.Array:
        return pa.array([getattr(d, name) for d in decisions], kind)

    table = pa.table(
        {
            "id": column("id", pa.string()),
            "document_id": column("document_id", pa.string()),
            "surface": column("surface", pa.string()),
            "entity_type": column("entity_type", pa.string()),
            "entity_id": column("entity_id", pa.string()),
            "candidate_id": column("candidate_id", pa.string()),
            "decision": column("decision", pa.string()),
            "score": column("score", pa.float64()),
            "name_score": column("name_score", pa.float64()),
            "cooccurrence_score": column("cooccurrence_score", pa.float64()),
            "time_score": column("time_score", pa.float64()),
            "threshold": column("threshold", pa.float64()),
            "decided_at": column("decided_at", pa.timestamp("us")),
        }
    )
    _insert(con, "entity_decisions", table)


def _load_candidates(
    con: duckdb.DuckDBPyConnection, exclude_units: Sequence[str]
) -> list[_Candidate]:
    """Active entities with their co-mentioned names and last mention time.

    Mentions by `exclude_units` (a document being replaced) do not count."""
    rows = con.execute(
        "SELECT id, name, type, aliases FROM entities WHERE status = ? ORDER BY created_at, id",
        [str(UnitStatus.ACTIVE)],
    ).fetchall()
    if not rows:
        return []
    excluded = list(exclude_units)
    candidates = {r[0]: _Candidate(r[0], r[1], r[2], list(r[3] or [])) for r in rows}
    for entity_id, first_seen, last_seen in con.execute(
        "SELECT m.entity_id, min(coalesce(u.occurred_start, u.mentioned_at)),"
        " max(coalesce(u.occurred_start, u.mentioned_at))"
        " FROM mentions m JOIN units u ON u.id = m.unit_id"
        " WHERE u.status = 'active' AND NOT list_contains(?, u.id) GROUP BY m.entity_id",
        [excluded],
    ).fetchall():
        if entity_id in candidates:
            candidates[entity_id].times = sorted({t for t in (first_seen, last_seen) if t})
    for entity_id, neighbour_ids in con.execute(
        "SELECT a.entity_id, list(DISTINCT b.entity_id) FROM mentions a"
        " JOIN mentions b ON a.unit_id = b.unit_id AND a.entity_id <> b.entity_id"
        " WHERE NOT list_contains(?, a.unit_id) GROUP BY a.entity_id",
        [excluded],
    ).fetchall():
        candidate = candidates.get(entity_id)
        if candidate is None:
            continue
        for other in neighbour_ids:
            neighbour = candidates.get(other)
            if neighbour is not None:
                candidate.neighbours.update(fold(n) for n in neighbour.names())
    return list(candidates.values())


# -- reading ------------------------------------------------------------------------

_ENTITY_SELECT = (
    "SELECT e.id, e.name, e.type, e.aliases, e.status, count(DISTINCT m.unit_id),"
    # Seen = when a conversation mentioned it, not when what was said happens:
    # a plan for next year must not make an entity "last seen" in the future.
    " min(coalesce(u.mentioned_at, u.occurred_start)),"
    " max(coalesce(u.mentioned_at, u.occurred_start))"
    " FROM entities e LEFT JOIN mentions m ON m.entity_id = e.id"
    # An active entity is seen in its active facts; a retracted one keeps showing
    # when it was seen (its facts are hidden with it, its mentions still counted).
    " LEFT JOIN units u ON u.id = m.unit_id AND (u.status = 'active' OR e.status <> 'active')"
)
_ENTITY_GROUP = "GROUP BY e.id, e.name, e.type, e.aliases, e.status"


def _row_to_entity(row: tuple) -> Entity:
    return Entity(
        id=row[0],
        name=row[1],
        type=row[2],
        aliases=tuple(row[3] or ()),
        status=UnitStatus(row[4]),
        mention_count=int(row[5] or 0),
        first_seen=row[6],
        last_seen=row[7],
    )


def list_entities(
    con: duckdb.DuckDBPyConnection, *, include_retracted: bool = False
) -> list[Entity]:
    """Entities, most mentioned first."""
    where = "" if include_retracted else " WHERE e.status = 'active'"
    rows = con.execute(
        f"{_ENTITY_SELECT}{where} {_ENTITY_GROUP} ORDER BY 6 DESC, lower(e.name), e.id"
    ).fetchall()
    return [_row_to_entity(r) for r in rows]


def entity_comentions(
    con: duckdb.DuckDBPyConnection, min_count: int = 1
) -> list[tuple[str, str, int]]:
    """(entity a, entity b, active units mentioning both) for every pair of
    active entities mentioned together at least `min_count` times; a < b."""
    return [
        (a, b, int(n))
        for a, b, n in con.execute(
            """
            WITH m AS (
                SELECT DISTINCT m.unit_id, m.entity_id FROM mentions m
                JOIN units u ON u.id = m.unit_id AND u.status = 'active'
                JOIN entities e ON e.id = m.entity_id AND e.status = 'active'
            )
            SELECT a.entity_id, b.entity_id, count(*) AS n
            FROM m a JOIN m b ON a.unit_id = b.unit_id AND a.entity_id < b.entity_id
            GROUP BY 1, 2 HAVING count(*) >= ? ORDER BY n DESC, 1, 2
            """,
            [int(min_count)],
        ).fetchall()
    ]


def get_entity(con: duckdb.DuckDBPyConnection, entity_id: str) -> Entity | None:
    rows = con.execute(f"{_ENTITY_SELECT} WHERE e.id = ? {_ENTITY_GROUP}", [entity_id]).fetchall()
    return _row_to_entity(rows[0]) if rows else None


def entity_names(con: duckdb.DuckDBPyConnection, entity_ids: Sequence[str]) -> dict[str, str]:
    if not entity_ids:
        return {}
    rows = con.execute(
        "SELECT id, name FROM entities WHERE id IN (SELECT unnest(?))", [sorted(set(entity_ids))]
    ).fetchall()
    return dict(rows)


def resolve_entity(con: duckdb.DuckDBPyConnection, ref: str, bank_name: str) -> str:
    """An entity id from an id, a name or an alias (case-insensitive); none, or
    several equally named, is an EngramError."""
    rows = con.execute(
        "SELECT id, name, status FROM entities WHERE id = $r OR lower(name) = lower($r)"
        " OR list_contains(list_transform(aliases, lambda a: lower(a)), lower($r))"
        " ORDER BY id = $r DESC, lower(name) = lower($r) DESC, status, id",
        {"r": ref},
    ).fetchall()
    if not rows:
        raise EngramError(f"no entity {ref!r} in bank {bank_name!r}")
    if rows[0][0] == ref:
        return ref
    exact = [r for r in rows if r[1].lower() == ref.lower()] or rows
    if len(exact) > 1:
        listed = ", ".join(f"{r[1]} ({r[0]}, {r[2]})" for r in exact[:5])
        raise EngramError(f"{ref!r} names several entities: {listed}; use an id")
    return exact[0][0]


def list_decisions(
    con: duckdb.DuckDBPyConnection, entity_id: str | None = None
) -> list[EntityDecision]:
    """Resolution decisions, oldest first; with `entity_id`, those that resolved to
    it or named it as the best candidate."""
    sql = (
        "SELECT id, document_id, surface, entity_type, entity_id, candidate_id, decision, score,"
        " name_score, cooccurrence_score, time_score, threshold, decided_at FROM entity_decisions"
    )
    params: list = []
    if entity_id is not None:
        sql += " WHERE entity_id = ? OR candidate_id = ?"
        params = [entity_id, entity_id]
    rows = con.execute(sql + " ORDER BY decided_at, surface, id", params).fetchall()
    return [
        EntityDecision(
            id=r[0],
            document_id=r[1],
            surface=r[2],
            entity_type=r[3],
            entity_id=r[4],
            candidate_id=r[5],
            decision=r[6],
            score=r[7],
            name_score=r[8],
            cooccurrence_score=r[9],
            time_score=r[10],
            threshold=r[11],
            decided_at=r[12],
        )
        for r in rows
    ]
