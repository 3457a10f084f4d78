"""The plan: turning a document's extracted facts into the rows to write.

Read only — nothing here writes, so a cancel or an error while planning leaves
the bank as it was. For one document's facts (and their vectors) the plan
resolves every entity surface (the speakers first, as persons), merges
near-duplicates into one unit (an earlier fact of the document, or an existing
unit), lays the four kinds of links and assesses the opinions the facts bear on
(model calls in `llm` mode). write.py stores the result in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import duckdb
import numpy as np
import pyarrow as pa

from core import tags as tagging
from core.retain.entities import EntityResolver, ResolverSettings
from core.retain.facts import MAX_UNIT_CHARS, Fact
from core.retain.links import (
    LinkSet,
    Timed,
    plan_entity_links,
    plan_semantic_links,
    plan_temporal_links,
)
from core.retain.networks import holder
from core.retain.opinions import (
    FORMED,
    Assessment,
    OpinionPlan,
    OpinionState,
    Relation,
    apply_evidence,
    event,
    evidence_source,
    has_topic,
    independence,
    load_opinions,
    related_opinions,
)
from core.store.bank_store import utcnow
from core.store.filters import sql_string_list
from core.types import FACT_NETWORKS, Document, Network, NewUnit, Turn, new_id

if TYPE_CHECKING:
    from core.handle import BankHandle

# The vector index is asked for this many neighbours per new fact (semantic
# links and near-duplicates are taken from them).
SEARCH_K = 8
FACT_NETWORKS_SQL = "(" + ", ".join(f"'{n.value}'" for n in FACT_NETWORKS) + ")"
ACTIVE_FACTS = f"status = 'active' AND network IN {FACT_NETWORKS_SQL}"


class IngestRun(Protocol):
    """What the plan needs from the ingest run in progress (pipeline.py): the bank
    and its settings, embedding (a rewritten opinion needs a new vector) and
    opinion assessment (only the run knows whether the model still answers)."""

    bank: BankHandle
    config: Mapping[str, Any]

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def assessment(
        self,
        evidence: str,
        state: OpinionState,
        similarity: float,
        shared_entity: bool,
        plan: OpinionPlan,
        same_holder: bool = False,
        participants: frozenset[str] = frozenset(),
    ) -> Assessment: ...


@dataclass
class Plan:
    """One document's rows, ready for write.py."""

    units: list[NewUnit]
    vectors: np.ndarray
    mentions: list[tuple[str, str, str]]  # unit id, entity id, surface
    merged_sources: dict[str, list[str]]  # existing unit id -> its new source_ids
    merged_mentions: list[tuple[str, str, str]]
    links: LinkSet
    opinions: OpinionPlan
    job_entities: set[str]
    resolver: EntityResolver
    duplicates: int


def plan_document(
    run: IngestRun,
    document: Document,
    document_id: str,
    facts: list[Fact],
    vectors: np.ndarray,
    replaced: list[str],
) -> Plan:
    con = run.bank.store.reader()
    now = utcnow()
    excluded = set(replaced)
    resolver = EntityResolver(
        con,
        ResolverSettings.from_config(run.config),
        document_id=document_id,
        now=now,
        exclude_units=replaced,
    )
    speaker_entities = _resolve_entities(document, facts, resolver)
    hits = _search(run, vectors, excluded)
    existing = _unit_facts(con, {uid for row in hits for uid, _ in row})
    scopes = _turn_scopes(document)
    units, unit_vectors, merged_sources, merged_mentions = _deduplicate(
        run, facts, vectors, hits, existing, scopes
    )
    survivors = [i for i, f in enumerate(facts) if not f.duplicate]
    links = LinkSet()
    _link(run, con, facts, survivors, unit_vectors, hits, excluded, links)
    opinions = _opinions(run, con, facts, vectors, units, speaker_entities, replaced, document_id)
    for unit_index, unit in enumerate(units):
        state = opinions.states.get(unit.id)
        if state is not None:
            # The opinion as it stands after the rest of this document's evidence.
            units[unit_index] = replace(unit, text=state.text, confidence=state.confidence)
            unit_vectors[unit_index] = state.vector
    mentions = [
        (f.unit_id, e, s)
        for f in facts
        if not f.duplicate
        for e, s in zip(f.entity_ids, f.surfaces, strict=True)
    ]
    # Observations are built from world and experience facts only.
    job_entities = {e for f in facts if f.network is not Network.OPINION for e in f.entity_ids}
    if replaced:
        job_entities |= {
            r[0]
            for r in con.execute(
                "SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT unnest(?))",
                [replaced],
            ).fetchall()
        }
    return Plan(
        units=units,
        vectors=unit_vectors,
        mentions=mentions,
        merged_sources=merged_sources,
        merged_mentions=merged_mentions,
        links=links,
        opinions=opinions,
        job_entities=job_entities,
        resolver=resolver,
        duplicates=sum(1 for f in facts if f.duplicate),
    )


def _resolve_entities(
    document: Document, facts: list[Fact], resolver: EntityResolver
) -> frozenset[str]:
    """Resolve every surface (the speakers first, as persons); returns the speakers' ids.

    A surface's context is every name mentioned with it in the document (its
    facts' other entities and speakers); its times are its facts' times."""
    speakers = list(dict.fromkeys(t.speaker for t in document.turns if t.speaker.strip()))
    contexts: dict[str, set[str]] = {}
    times: dict[str, set[datetime]] = {}
    for fact in facts:
        names = [m.name for m in fact.mentions] + list(fact.speakers)
        for name in names:
            key = name.casefold()
            contexts.setdefault(key, set()).update(n for n in names if n.casefold() != key)
            if fact.when is not None:
                times.setdefault(key, set()).add(fact.when)
    speaker_ids = []
    for speaker in speakers:
        key = speaker.casefold()
        context = contexts.get(key, set()) | (set(speakers) - {speaker})
        spoken = {t.timestamp for t in document.turns if t.speaker == speaker and t.timestamp}
        entity_id = resolver.resolve(speaker, "person", context, spoken | times.get(key, set()))
        if entity_id is not None:
            speaker_ids.append(entity_id)
    for fact in facts:
        ids: list[str] = []
        surfaces: list[str] = []
        pairs = [(m.name, m.type) for m in fact.mentions]
        pairs += [(s, "person") for s in fact.speakers]
        for name, type_ in pairs:
            key = name.casefold()
            entity_id = resolver.resolve(name, type_, contexts.get(key, set()), times.get(key, ()))
            if entity_id is not None and entity_id not in ids:
                ids.append(entity_id)
                surfaces.append(name.strip())
        fact.entity_ids, fact.surfaces = tuple(ids), tuple(surfaces)
    return frozenset(speaker_ids)


def _search(
    run: IngestRun, vectors: np.ndarray, excluded: set[str]
) -> list[list[tuple[str, float]]]:
    """Each fact's nearest existing units in the vector index (active facts only)."""
    k = max(SEARCH_K, int(run.config["retain.semantic_top_k"]) + 1)
    exact = run.bank.store.exact_vectors()
    if exact is not None:
        # A small bank's vectors are in memory (core/store/exact.py): one scan
        # each, where a LanceDB search costs ~15 ms of fixed overhead.
        state = exact.state
        mask = exact.mask(FACT_NETWORKS, state=state)
        if excluded:
            rows = exact.positions(pa.array(sorted(excluded), pa.string()), state)
            mask[rows[rows >= 0]] = False
        return [exact.search(vector, k, mask, state) for vector in vectors]
    index = run.bank.store.vectors
    if len(vectors) == 0 or index.count() == 0:
        return [[] for _ in range(len(vectors))]
    where = ACTIVE_FACTS
    if excluded:
        # A forced re-ingest: the units being replaced would be every fact's
        # nearest neighbour.
        where += f" AND id NOT IN {sql_string_list(sorted(excluded))}"
    out = []
    for vector in vectors:
        hits = index.search(vector, k, where=where)
        out.append([(h.id, h.similarity) for h in hits if h.id not in excluded])
    return out


@dataclass(frozen=True)
class TurnScopes:
    """The tags and metadata of a document's turns, by turn id: what a unit drawn
    from some of them inherits (core/tags.py)."""

    by_turn: dict[str, Turn]

    def tags(self, turn_ids: Sequence[str]) -> tuple[str, ...]:
        return tagging.union(self.by_turn[t].tags for t in turn_ids if t in self.by_turn)

    def metadata(self, turn_ids: Sequence[str]) -> dict[str, str]:
        turns = sorted((self.by_turn[t] for t in turn_ids if t in self.by_turn), key=_index)
        return tagging.merged(t.metadata for t in turns)


def _index(turn: Turn) -> int:
    return turn.index


def _turn_scopes(document: Document) -> TurnScopes:
    return TurnScopes({t.id: t for t in document.turns})


def _deduplicate(
    run: IngestRun,
    facts: list[Fact],
    vectors: np.ndarray,
    hits: list[list[tuple[str, float]]],
    existing: dict[str, tuple],
    scopes: TurnScopes,
) -> tuple[list[NewUnit], np.ndarray, dict[str, list[str]], list[tuple[str, str, str]]]:
    """Near-identical facts (cosine >= duplicate_similarity, same network, within
    the duplicate window; opinions at any time) merge into one unit: the earlier
    one, or the existing unit, gains the sources and entities of the later.
    Only facts with the same tags merge: one user's fact never becomes visible
    to another's scope by merging into theirs."""
    threshold = float(run.config["retain.duplicate_similarity"])
    window = timedelta(hours=float(run.config["retain.duplicate_window_hours"]))

    def close_in_time(a: datetime | None, b: datetime | None, network: Network) -> bool:
        if network is Network.OPINION or a is None or b is None:
            return True
        return abs(a - b) <= window

    kept: list[int] = []
    units: list[NewUnit] = []
    unit_of_fact: dict[int, int] = {}
    merged_sources: dict[str, list[str]] = {}
    merged_mentions: list[tuple[str, str, str]] = []
    fact_tags = [scopes.tags(f.source_ids) for f in facts]
    for i, fact in enumerate(facts):
        target: str | None = None
        for uid, sim in hits[i]:
            row = existing.get(uid)
            if sim < threshold or row is None:
                continue
            network, when, sources, tags = row
            if (
                network == fact.network
                and tags == frozenset(fact_tags[i])
                and close_in_time(fact.when, when, fact.network)
            ):
                target = uid
                break
        if target is not None:
            fact.duplicate, fact.unit_id = True, target
            current = merged_sources.setdefault(target, list(existing[target][2]))
            current += [s for s in fact.source_ids if s not in current]
            merged_mentions += [
                (target, e, s) for e, s in zip(fact.entity_ids, fact.surfaces, strict=True)
            ]
            continue
        if kept:
            sims = vectors[kept] @ vectors[i]
            for j in np.argsort(-sims):
                if sims[j] < threshold:
                    break
                other = facts[kept[j]]
                if (
                    other.network == fact.network
                    and set(fact_tags[kept[j]]) == set(fact_tags[i])
                    and close_in_time(fact.when, other.when, fact.network)
                ):
                    target = other.unit_id
                    index = unit_of_fact[kept[j]]
                    unit = units[index]
                    sources = list(unit.source_ids)
                    sources += [s for s in fact.source_ids if s not in sources]
                    ids = list(other.entity_ids)
                    surfaces = list(other.surfaces)
                    for e, s in zip(fact.entity_ids, fact.surfaces, strict=True):
                        if e not in ids:
                            ids.append(e)
                            surfaces.append(s)
                    other.entity_ids, other.surfaces = tuple(ids), tuple(surfaces)
                    units[index] = replace(unit, source_ids=tuple(sources))
                    break
        if target is not None:
            fact.duplicate, fact.unit_id = True, target
            continue
        fact.unit_id = new_id()
        unit_of_fact[i] = len(units)
        kept.append(i)
        units.append(
            NewUnit(
                id=fact.unit_id,
                text=fact.text,
                network=fact.network,
                occurred_start=fact.occurred_start,
                occurred_end=fact.occurred_end,
                mentioned_at=fact.mentioned_at,
                confidence=fact.confidence,
                source_ids=fact.source_ids,
                extraction_mode=fact.mode,
                model=fact.model,
                tags=fact_tags[i],
                metadata=scopes.metadata(fact.source_ids),
            )
        )
    dim = vectors.shape[1] if vectors.ndim == 2 else run.bank.store.dim
    unit_vectors = vectors[kept].copy() if kept else np.zeros((0, dim), dtype=np.float32)
    return units, unit_vectors, merged_sources, merged_mentions


def _link(
    run: IngestRun,
    con: duckdb.DuckDBPyConnection,
    facts: list[Fact],
    survivors: list[int],
    unit_vectors: np.ndarray,
    hits: list[list[tuple[str, float]]],
    excluded: set[str],
    links: LinkSet,
) -> None:
    cfg = run.config
    new = [Timed(facts[i].unit_id, facts[i].when, order) for order, i in enumerate(survivors)]
    # entity
    by_entity: dict[str, list[Timed]] = {}
    for timed, i in zip(new, survivors, strict=True):
        for entity_id in facts[i].entity_ids:
            by_entity.setdefault(entity_id, []).append(timed)
    cap = int(cfg["retain.entity_links_per_entity"])
    existing_by_entity = _recent_by_entity(con, list(by_entity), cap, excluded)
    plan_entity_links(links, by_entity, existing_by_entity, cap)
    # temporal
    window = float(cfg["retain.temporal_window_hours"])
    times = [t.when for t in new if t.when is not None]
    existing_timed = (
        _units_between(
            con,
            min(times) - timedelta(hours=window),
            max(times) + timedelta(hours=window),
            excluded,
        )
        if times
        else []
    )
    plan_temporal_links(
        links,
        new,
        existing_timed,
        window_hours=window,
        decay_hours=float(cfg["retain.temporal_decay_hours"]),
        per_unit=int(cfg["retain.temporal_links_per_unit"]),
    )
    # semantic
    merged_into = {f.unit_id for f in facts if f.duplicate}
    plan_semantic_links(
        links,
        [facts[i].unit_id for i in survivors],
        unit_vectors,
        [[(u, s) for u, s in hits[i] if u not in merged_into] for i in survivors],
        top_k=int(cfg["retain.semantic_top_k"]),
        threshold=float(cfg["retain.semantic_threshold"]),
    )
    # causal
    for fact in facts:
        for target, relation, strength in fact.causal:
            if 0 <= target < len(facts):
                links.add_causal(fact.unit_id, facts[target].unit_id, relation, strength)


def _opinions(
    run: IngestRun,
    con: duckdb.DuckDBPyConnection,
    facts: list[Fact],
    vectors: np.ndarray,
    units: list[NewUnit],
    speaker_entities: frozenset[str],
    replaced: list[str],
    document_id: str = "",
) -> OpinionPlan:
    """Opinions formed and moved by the document's facts.

    A new opinion that bears on one the bank holds already ("That matches what I
    thought: …", "I have to revise my opinion: …") is evidence for it, not a second
    belief: it moves that opinion and is kept as the agent's experience."""
    cfg = run.config
    alpha = float(cfg["retain.opinion_alpha"])
    plan = OpinionPlan(states=load_opinions(con, replaced))
    confidence_of = {u.id: u.confidence for u in units}
    unit_index = {u.id: i for i, u in enumerate(units)}
    # The people talking: their names are in everything they say or hear, so they
    # are never what an opinion is about for the rules.
    participants = frozenset(sp.casefold() for f in facts for sp in f.speakers)
    for i, fact in enumerate(facts):
        happened = fact.mentioned_at or fact.occurred_start or utcnow()
        vector = vectors[i]
        topical = frozenset(fact.entity_ids) - speaker_entities
        source = evidence_source(holder(fact.speakers), document_id)
        if fact.network is Network.OPINION:
            state = plan.states.get(fact.unit_id)
            if fact.duplicate and state is not None:
                if not has_topic(state.text, participants):
                    continue  # a repeated reaction ("That's a great pic!") says nothing new
                heard = state.heard.get(source, 0)
                weight = independence(heard, True)
                before = state.confidence
                state.confidence = apply_evidence(before, Relation.REINFORCE, alpha, weight)
                state.heard[source] = heard + 1
                state.touched = True
                plan.events.append(
                    event(
                        state,
                        Relation.REINFORCE,
                        before,
                        happened,
                        fact.unit_id,
                        f"the opinion was stated again (independence {weight:.2f})",
                        strength=1.0,
                        independence=weight,
                    )
                )
                continue
            if not fact.duplicate:
                moved = _assess(
                    run, plan, fact, vector, topical, happened, alpha, source, participants
                )
                if (moved and Relation.CONTRADICT not in moved) or not has_topic(
                    fact.text, participants
                ):
                    # Evidence for a belief held already, or a stance about nothing
                    # named ("That changes my view"): the agent's history, no belief.
                    # A belief that contradicts an earlier one is the revised belief.
                    fact.network, fact.confidence = Network.EXPERIENCE, None
                    index = unit_index[fact.unit_id]
                    units[index] = replace(
                        units[index], network=Network.EXPERIENCE, confidence=None
                    )
                    continue
                state = OpinionState(
                    id=fact.unit_id,
                    text=fact.text,
                    confidence=float(confidence_of.get(fact.unit_id) or 0.5),
                    vector=vector.copy(),
                    entity_ids=topical,
                    source_ids=frozenset(fact.source_ids),
                    holders=frozenset(sp.casefold() for sp in fact.speakers),
                    new=True,
                    touched=True,
                )
                plan.events.append(
                    event(
                        state,
                        FORMED,
                        None,
                        happened,
                        None,
                        formed_reason(fact),
                        new_text=fact.text,
                    )
                )
                plan.states[state.id] = state
                continue
        if fact.duplicate:
            continue  # the same evidence again within the window: counted once
        _assess(run, plan, fact, vector, topical, happened, alpha, source, participants)
    return plan


def _assess(
    run: IngestRun,
    plan: OpinionPlan,
    fact: Fact,
    vector: np.ndarray,
    topical: frozenset[str],
    happened: datetime,
    alpha: float,
    source: str,
    participants: frozenset[str] = frozenset(),
) -> list[Relation]:
    """Move the opinions `fact` is evidence for; how it moved each."""
    cfg = run.config
    # Who states the fact: of a question and its answer, the one who answers.
    speakers = frozenset(sp.casefold() for sp in fact.speakers[-1:])
    related = related_opinions(
        list(plan.states.values()),
        vector,
        topical,
        related_similarity=float(cfg["retain.opinion_related_similarity"]),
        entity_similarity=float(cfg["retain.opinion_entity_similarity"]),
        limit=int(cfg["retain.opinion_candidates"]),
        exclude=fact.unit_id,
        source_ids=frozenset(fact.source_ids),
        speakers=speakers,
        holder_similarity=float(cfg["retain.opinion_holder_similarity"]),
    )
    moved: list[Relation] = []
    for state, similarity in related:
        shared = bool(state.entity_ids & topical)
        same_holder = bool(state.holders & speakers)
        assessment = run.assessment(
            fact.text, state, similarity, shared, plan, same_holder, participants
        )
        if assessment.relation is Relation.NEUTRAL:
            continue
        heard = state.heard.get(source, 0)
        free = independence(heard, same_holder)
        before = state.confidence
        state.confidence = apply_evidence(
            before, assessment.relation, alpha, assessment.strength * free
        )
        state.heard[source] = heard + 1
        old_text = new_text = None
        if assessment.new_text:
            old_text, new_text = state.text, assessment.new_text[:MAX_UNIT_CHARS]
            state.text = new_text
            state.vector = run.embed([new_text])[0]
            state.text_changed = True
        state.touched = True
        moved.append(assessment.relation)
        plan.events.append(
            event(
                state,
                assessment.relation,
                before,
                happened,
                fact.unit_id,
                f"{assessment.reason}; strength {assessment.strength:.2f}, independence {free:.2f}",
                old_text,
                new_text,
                strength=assessment.strength,
                independence=free,
            )
        )
    return moved


# -- reads used by the plan -------------------------------------------------------------


def _unit_facts(con: duckdb.DuckDBPyConnection, ids: set[str]) -> dict[str, tuple]:
    """id -> (network, time, source_ids) of existing units."""
    if not ids:
        return {}
    rows = con.execute(
        "SELECT id, network, coalesce(occurred_start, mentioned_at), source_ids, tags FROM units"
        " WHERE id IN (SELECT unnest(?))",
        [sorted(ids)],
    ).fetchall()
    return {r[0]: (Network(r[1]), r[2], list(r[3] or ()), frozenset(r[4] or ())) for r in rows}


def _recent_by_entity(
    con: duckdb.DuckDBPyConnection, entity_ids: list[str], cap: int, excluded: set[str]
) -> dict[str, list[Timed]]:
    """The `cap` most recent existing fact units mentioning each entity."""
    if not entity_ids or cap <= 0:
        return {}
    rows = con.execute(
        "SELECT entity_id, unit_id, t FROM ("
        " SELECT m.entity_id, u.id AS unit_id, coalesce(u.occurred_start, u.mentioned_at) AS t,"
        " row_number() OVER (PARTITION BY m.entity_id ORDER BY"
        "  coalesce(u.occurred_start, u.mentioned_at) DESC NULLS LAST, u.id) AS rn"
        " FROM mentions m JOIN units u ON u.id = m.unit_id"
        " WHERE m.entity_id IN (SELECT unnest(?)) AND u.status = 'active'"
        f" AND u.network IN {FACT_NETWORKS_SQL}"
        ") WHERE rn <= ?",
        [entity_ids, cap + len(excluded)],
    ).fetchall()
    out: dict[str, list[Timed]] = {}
    for entity_id, unit_id, when in rows:
        if unit_id not in excluded:
            out.setdefault(entity_id, []).append(Timed(unit_id, when, -1))
    return out


def _units_between(
    con: duckdb.DuckDBPyConnection, start: datetime, end: datetime, excluded: set[str]
) -> list[Timed]:
    rows = con.execute(
        "SELECT id, coalesce(occurred_start, mentioned_at) AS t FROM units"
        f" WHERE {ACTIVE_FACTS} AND coalesce(occurred_start, mentioned_at) BETWEEN ? AND ?",
        [start, end],
    ).fetchall()
    return [Timed(r[0], r[1], -1) for r in rows if r[0] not in excluded]


def formed_reason(fact: Fact) -> str:
    """Why an opinion formed, as its timeline shows it: who said it (turn ids
    mean nothing to a person; the step's time is beside it)."""
    if fact.speakers:
        return f"formed from what {' and '.join(fact.speakers)} said"
    return f"formed from turns {', '.join(fact.source_ids)}"


__all__ = ["ACTIVE_FACTS", "FACT_NETWORKS_SQL", "SEARCH_K", "IngestRun", "Plan", "plan_document"]
