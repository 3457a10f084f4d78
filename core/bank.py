"""A bank: the engine's handle on one agent's memory.

Every mutating method returns a `Change` naming what it touched, so callers
(the studio's views, the CLI, undo) act on exactly that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.activity import Activity, journaled
from core.config import DEFAULTS, checked_changes, stored_config
from core.handle import BankHandle, validated
from core.journal import (
    CURATE,
    RECALL,
    REFLECT,
    RETAIN,
    ActivityEntry,
    ActivityNotFoundError,
)
from core.journal import KINDS as ACTIVITY_KINDS
from core.limits import BACKGROUND_CHARS, NAME_CHARS, FieldError, check_text
from core.progress import CancelToken, Progress, check, report
from core.store.bank_store import BankStore, utcnow
from core.store.units import (
    UnitFilter,
    count_units,
    insert_units,
    select_units,
)
from core.types import (
    UNSET,
    BankProfile,
    BankStats,
    Change,
    Disposition,
    EngramError,
    InvalidInputError,
    Kind,
    Network,
    NewUnit,
    Subgraph,
    Unit,
    UnitContext,
    VerifyReport,
)

if TYPE_CHECKING:
    from core.curate.audit import AuditEntry
    from core.curate.documents import DocumentPreview
    from core.curate.hints import MergeHint
    from core.curate.retract import RetractPreview
    from core.engine import Engine
    from core.providers.llm import LanguageModel
    from core.recall.replay import RecallReplay
    from core.recall.result import RecallResult
    from core.reflect.values import Comparison, OpinionChange, OpinionTrajectory, Reflection
    from core.retain.documents import StoredDocument
    from core.retain.entities import EntityDecision
    from core.retain.observations import JobsReport
    from core.retain.opinions import OpinionEvent
    from core.retain.report import ChunkFailure, IngestReport
    from core.snapshot.archive import Manifest
    from core.snapshot.export import ExportRecord
    from core.store.oplog import OperationQueue
    from core.tags import TagScope
    from core.types import Document, Entity, Link, Turn

ADD_BATCH = 1000


class Bank:
    def __init__(self, engine: Engine, folder: Path, store: BankStore) -> None:
        self.engine = engine
        self.folder = folder
        self.store = store
        # What the operations below are given: never this Bank, nor the Engine.
        self.handle = BankHandle(folder, store, lambda: engine.embedder, engine.language_model)
        # The activity journal: every @journaled method below records who asked and
        # what it did (core/activity.py); purge reaches it through the handle.
        self._activity = Activity(self.handle)
        self.handle.journal = self._activity.journal

    # -- identity and profile -----------------------------------------------

    @property
    def id(self) -> str:
        """The bank's immutable id: what servers, locks, routes and the studio key
        it by (its name is a label a rename changes)."""
        return self.handle.id

    @property
    def name(self) -> str:
        return self.handle.name

    def profile(self) -> BankProfile:
        return self.handle.profile()

    def profile_warnings(self) -> list[str]:
        """What the stored profile holds that this version cannot use (an unknown
        setting, a damaged value): ignored when read, dropped when saved again."""
        return self.handle.read_profile()[1]

    @journaled(CURATE)
    def set_profile(
        self,
        *,
        background: str | None = None,
        agent_name: str | None = None,
        disposition: Disposition | None = None,
        config: dict[str, Any] | None = None,
    ) -> Change:
        check_text("background", background, BACKGROUND_CHARS)
        check_text("agent_name", agent_name, NAME_CHARS)
        if config is not None and not isinstance(config, Mapping):
            raise FieldError("config", "must be a table of settings (key: value)", "dict_type")
        stored, _ = self.handle.stored_profile()
        if background is not None:
            stored["background"] = background
        if agent_name is not None:
            stored["agent_name"] = agent_name
        if disposition is not None:
            stored["disposition"] = disposition.to_dict()
        if config is not None:
            # The new values, each as its key takes it ("false" -> False); raises
            # naming an unknown key or a bad value (None resets a key).
            config = checked_changes(config)
            # What is stored already and cannot be used (an unknown key) is dropped:
            # saving a config is how such a profile is fixed.
            kept = stored.get("config")
            kept = {
                k: v
                for k, v in (kept.items() if isinstance(kept, dict) else ())
                if k in DEFAULTS and not stored_config({k: v})[1]
            }
            stored["config"] = {k: v for k, v in {**kept, **config}.items() if v is not None}
        with self.store.transaction() as tx:
            self.store.set_meta(tx.con, "profile", stored)
        return Change.of(updated={Kind.PROFILE: [self.id]})

    @property
    def config(self) -> dict[str, Any]:
        return self.handle.config

    def config_overrides(self) -> dict[str, Any]:
        """The settings this bank's profile sets (the rest are the defaults)."""
        stored, _ = self.handle.stored_profile()
        kept = stored.get("config")
        return dict(kept) if isinstance(kept, dict) else {}

    @journaled(CURATE)
    def reset_config(self) -> Change:
        """Every setting back to its default (the disposition and background stay)."""
        stored, _ = self.handle.stored_profile()
        if stored.pop("config", None) is None:
            return Change()
        with self.store.transaction() as tx:
            self.store.set_meta(tx.con, "profile", stored)
        return Change.of(updated={Kind.PROFILE: [self.id]})

    def stats(self) -> BankStats:
        """What the bank holds, counted: units by network, links by kind and by
        their source's network (each link once), documents, entities, pending jobs."""
        from core.retain.observations import pending_jobs
        from core.store.stats import bank_stats

        con = self.store.reader()
        return bank_stats(con, pending_jobs(con))

    # -- units ---------------------------------------------------------------

    @journaled(RETAIN)
    def add_units(
        self,
        units: Sequence[NewUnit],
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
    ) -> Change:
        """Add units in batches; each batch is one unit of work.

        Units without a vector are embedded. A cancel stops before the next
        batch: batches already added stay (each is complete on its own)."""
        units = [validated(u).with_id() for u in units]
        added: list[str] = []
        for start in range(0, len(units), ADD_BATCH):
            check(cancel)
            batch = units[start : start + ADD_BATCH]
            vectors = self.handle.vectors_for(batch)
            with self.store.transaction() as tx:
                ids = insert_units(tx.con, batch, vectors, self.store.embedding_model, utcnow())
                tx.touch(ids)
            added += ids
            report(progress, len(added), len(units), "adding units")
        return Change.of(added={Kind.UNIT: added})

    def vectors_for(self, units: Sequence[NewUnit]) -> np.ndarray:
        """The vectors of `units`: given ones as they are, the rest embedded in one batch."""
        return self.handle.vectors_for(units)

    def unit(self, unit_id: str) -> Unit:
        return self.handle.unit(unit_id)

    def units(
        self,
        network: Network | str | Sequence[Network | str] | None = None,
        *,
        order: str = "occurred_start",
        descending: bool = False,
        offset: int = 0,
        limit: int | None = 100,
        **filters: Any,
    ) -> list[Unit]:
        """A page of units. Filters: status, entity, start, end, text, mode,
        min_confidence, max_confidence, ids (see `UnitFilter`)."""
        flt = UnitFilter(network=network, **filters)
        return select_units(self.store.counted_reader(), flt, order, descending, offset, limit)

    def count(
        self, network: Network | str | Sequence[Network | str] | None = None, **filters: Any
    ) -> int:
        return count_units(self.store.reader(), UnitFilter(network=network, **filters))

    def memories_timeseries(
        self, start: datetime, end: datetime, trunc: str = "day", time_field: str = "created_at"
    ) -> list[tuple[datetime, dict[str, int]]]:
        """Active units per network in each minute / hour / day of [start, end)."""
        from core.store.units import memories_timeseries

        return memories_timeseries(self.store.reader(), start, end, trunc, time_field)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens in each text, as recall counts them for its budgets."""
        from core.recall.packing import TOKEN_COUNTS

        return TOKEN_COUNTS.count(self.handle.embedder, list(texts))

    def units_by_id(self, unit_ids: Sequence[str]) -> dict[str, Unit]:
        """These units (any status) by id; ids not stored are left out."""
        from core.store.units import get_units

        return get_units(self.store.counted_reader(), list(unit_ids))

    def tag_counts(
        self, q: str | None = None, *, offset: int = 0, limit: int | None = 100
    ) -> tuple[list[tuple[str, int]], int]:
        """The tags active units carry, most used first: a page of (tag, units)
        and how many tags there are; `q` keeps those containing it."""
        from core.store.tagged import tag_counts

        return tag_counts(self.store.reader(), q, offset, limit)

    @journaled(CURATE)
    def edit_unit(
        self,
        unit_id: str,
        *,
        text: str | None = None,
        network: Network | str | None = None,
        occurred_start: datetime | None = UNSET,
        occurred_end: datetime | None = UNSET,
        confidence: float | None = UNSET,
        entity_ids: Sequence[str] | None = None,
    ) -> Change:
        """Change a unit in place: a new text is re-embedded and re-indexed; new
        text, time or entities re-link it. Audited, undoable (core/curate)."""
        from core.curate.units import edit_unit

        return edit_unit(
            self.handle,
            unit_id,
            text=text,
            network=network,
            occurred_start=occurred_start,
            occurred_end=occurred_end,
            confidence=confidence,
            entity_ids=entity_ids,
        )

    @journaled(CURATE)
    def delete_units(self, unit_ids: Sequence[str]) -> Change:
        """Delete units with their mentions, links and opinion events. Audited, undoable."""
        from core.curate.units import delete_units

        return delete_units(self.handle, unit_ids)

    @journaled(CURATE)
    def add_memory(
        self,
        text: str,
        *,
        network: Network | str = Network.WORLD,
        occurred_start: datetime | None = None,
        occurred_end: datetime | None = None,
        confidence: float | None = None,
        entity_ids: Sequence[str] = (),
    ) -> Change:
        """Add one memory by hand (embedded, indexed, linked); audited, undoable.
        Its id is in `change.added[Kind.UNIT]`."""
        from core.curate.memories import add_memory

        return add_memory(
            self.handle,
            text,
            network=network,
            occurred_start=occurred_start,
            occurred_end=occurred_end,
            confidence=confidence,
            entity_ids=entity_ids,
        )

    @journaled(CURATE)
    def hide_units(self, unit_ids: Sequence[str], *, reason: str | None = None) -> Change:
        """Hide facts from recall, reflect and the default views without deleting
        them (what was derived from them follows); audited (with `reason`), undoable."""
        from core.curate.memories import set_hidden

        return set_hidden(self.handle, unit_ids, True, reason=reason)

    @journaled(CURATE)
    def unhide_units(self, unit_ids: Sequence[str], *, reason: str | None = None) -> Change:
        from core.curate.memories import set_hidden

        return set_hidden(self.handle, unit_ids, False, reason=reason)

    # -- retain (core/retain) ------------------------------------------------

    @journaled(RETAIN)
    def ingest(
        self,
        source: str | Path | Document | Sequence[Document],
        format: str = "auto",
        mode: str = "auto",
        *,
        force: bool = False,
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
        llm: LanguageModel | None = None,
        replace: bool = False,
    ) -> IngestReport:
        """Retain a conversation file (every conversation in it) or Document(s).

        mode: auto | llm | rules | verbatim; `llm` overrides the engine's
        configured model. One transaction per document; observations are only
        queued (run `process_jobs`). `replace`: a Document under an id the bank
        holds with other content takes its place in that one transaction. See
        `core.retain.pipeline`."""
        from core.retain.pipeline import ingest

        return ingest(
            self.handle, source, format, mode, force, progress, cancel, llm, replace=replace
        )

    @journaled(RETAIN)
    def append_turns(
        self,
        document_id: str,
        turns: Sequence[Turn],
        mode: str = "auto",
        *,
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
        llm: LanguageModel | None = None,
    ) -> IngestReport:
        """Add turns to a stored document, after its own, and retain only them
        (one transaction): its earlier memories, and their curation, stay.
        EngramError when there is no such document."""
        from core.retain.pipeline import append

        return append(self.handle, document_id, turns, mode, progress, cancel, llm)

    @journaled(RETAIN)
    def process_jobs(
        self,
        llm: LanguageModel | None = None,
        limit: int | None = None,
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
    ) -> JobsReport:
        """Regenerate the observations queued by retain (see core.retain.observations)."""
        from core.retain.observations import process_jobs

        return process_jobs(self.handle, llm, limit, progress, cancel)

    @journaled(RETAIN)
    def rebuild_observations(
        self,
        *,
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
    ) -> JobsReport | None:
        """Run the pending observation jobs with the configured model (rules when
        none is chosen or it does not answer); None when nothing was pending. The
        one way the studio and `engram serve` run what a change queued."""
        if not self.pending_jobs():
            return None
        llm = self.handle.language_model()
        try:
            return self.process_jobs(llm=llm, progress=progress, cancel=cancel)
        finally:
            if llm is not None:
                llm.close()

    def pending_jobs(self) -> int:
        from core.retain.observations import pending_jobs

        return pending_jobs(self.store.reader())

    def documents(self, ids: Sequence[str] | None = None) -> list[StoredDocument]:
        """Stored documents (or those with these ids), oldest first, each with its
        counts, tags and metadata."""
        from core.retain.documents import list_documents

        return list_documents(self.store.reader(), ids)

    def document_titles(self, document_ids: Sequence[str]) -> dict[str, str]:
        """The title of each of these documents the bank holds (one indexed lookup)."""
        from core.retain.documents import titles

        return titles(self.store.reader(), document_ids)

    def unit_labels(
        self,
        entity_ids: Sequence[str],
        document_ids: Sequence[str],
        observation_ids: Sequence[str],
    ) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
        """`entity_names`, `document_titles` and `observation_sources` of these
        ids at once (one query, or from memory in a small bank): what a page of
        units shows beside their text."""
        from core.recall.unitcache import unit_labels

        return unit_labels(self.store, entity_ids, document_ids, observation_ids)

    def document_hashes(self, document_ids: Sequence[str]) -> dict[str, str]:
        """The content hash of each of these documents the bank holds (one indexed
        lookup, not a listing of every document)."""
        from core.retain.documents import content_hashes

        return content_hashes(self.store.reader(), document_ids)

    def document_preview(self, document_id: str) -> DocumentPreview:
        """What `delete_document` would remove (each unit listed) and change."""
        from core.curate.documents import document_preview

        return document_preview(self.handle, document_id)

    @journaled(CURATE)
    def delete_document(self, document_id: str) -> Change:
        """Delete an ingested document with everything derived only from it: its
        turns, the units extracted from it (mentions, links), opinion steps it was
        evidence for (those opinions' confidence replayed), entities only it
        mentioned; observations that quoted it are rebuilt. Audited, undoable."""
        from core.curate.documents import delete_document

        return delete_document(self.handle, document_id)

    @journaled(RETAIN)
    def reingest_document(
        self,
        document_id: str,
        mode: str = "auto",
        *,
        failed_only: bool = False,
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
        llm: LanguageModel | None = None,
    ) -> IngestReport:
        """Extract a stored document again from its stored turns (replacing what
        its last ingest wrote, in one transaction); with `failed_only`, only the
        chunks that failed (a partial document's facts are kept and added to).
        Retain, not curation: not undoable."""
        from core.retain.documents import stored_document

        document = stored_document(self.store.reader(), document_id)
        return self.ingest(
            document,
            mode=mode,
            force=not failed_only,
            progress=progress,
            cancel=cancel,
            llm=llm,
        )

    def document_failures(self, document_id: str) -> list[ChunkFailure]:
        """The chunks of a stored document that could not be extracted (nothing of
        them is in the bank): it is partial until an ingest of it again reads them."""
        from core.retain.documents import failures_of

        return failures_of(self.store.reader(), document_id)

    def turns(self, document_id: str) -> list[Turn]:
        from core.retain.documents import document_turns

        return document_turns(self.store.reader(), document_id)

    def unit_context(self, unit_id: str, around: int = 3) -> UnitContext:
        """A unit (read afresh), the turns it came from, and the conversation around
        them (`around` turns either side) with its document's title: a fact's
        detail in one call, found through the unit's document."""
        from core.retain.documents import unit_context

        return unit_context(self.store.reader(), self.handle.unit(unit_id), around)

    def sources(self, unit_ids: Sequence[str]) -> dict[str, list[Turn]]:
        """The source turns of each unit in its own document, in source order."""
        from core.recall.unitcache import unit_sources

        return unit_sources(self.store, unit_ids)

    def observation_sources(self, observation_ids: Sequence[str]) -> dict[str, list[str]]:
        """The facts each observation was made from."""
        from core.retain.observations import sources_by_observation

        return sources_by_observation(self.store.reader(), observation_ids)

    def provenance(self, unit_id: str) -> list[Turn]:
        """The source turns of a unit, in its source order."""
        from core.retain.documents import provenance

        return provenance(self.store.reader(), unit_id)

    def entities(self, *, include_retracted: bool = False) -> list[Entity]:
        """Canonical entities, most mentioned first."""
        from core.retain.entities import list_entities

        return list_entities(self.store.reader(), include_retracted=include_retracted)

    def entity_comentions(self, min_count: int = 1) -> list[tuple[str, str, int]]:
        """Pairs of active entities mentioned in the same active units, with how
        many (a < b, most first): the edges of the studio's entity map."""
        from core.retain.entities import entity_comentions

        return entity_comentions(self.store.reader(), min_count)

    def entity(self, entity_id: str) -> Entity:
        from core.retain.entities import get_entity

        found = get_entity(self.store.reader(), entity_id)
        if found is None:
            raise EngramError(f"no entity {entity_id!r} in bank {self.name!r}")
        return found

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """The name of each of these entities that exists (retracted ones too)."""
        from core.retain.entities import entity_names

        return entity_names(self.store.reader(), entity_ids)

    def resolve_entity(self, ref: str) -> str:
        """An entity id from an id, a name or an alias (case-insensitive); none, or
        several equally named, is an EngramError."""
        from core.retain.entities import resolve_entity

        return resolve_entity(self.store.reader(), ref, self.name)

    def entity_decisions(self, entity_id: str | None = None) -> list[EntityDecision]:
        """How surfaces were resolved to entities, with their scores."""
        from core.retain.entities import list_decisions

        return list_decisions(self.store.reader(), entity_id)

    def entity_specificity(self) -> dict[str, float]:
        """How specific each mentioned entity is: 1 when one unit mentions it,
        towards 0 as nearly every unit does (an IDF). Recall's spreading weighs
        an entity link by it (`recall.entity_fan`); the studio draws by it."""
        from core.recall.linkgraph import entity_specificity

        return entity_specificity(self.store.reader())

    def links(self, unit_id: str, kinds: Sequence[str] | None = None) -> list[Link]:
        """Links leaving a unit (each link is stored in both directions)."""
        from core.retain.links import links_of

        return links_of(self.store.reader(), unit_id, kinds)

    def subgraph(
        self, seeds: Sequence[str], hops: int = 1, limit: int = 300, context: int = 0
    ) -> Subgraph:
        """The units within `hops` links of `seeds` (breadth first, strongest link
        first, `limit` at most), the `context` units one link further with the
        strongest links, and every link among them: a graph view in one call, read
        from the in-memory link graph recall spreads over."""
        from core.recall.subgraph import subgraph

        return subgraph(self.handle, list(seeds), hops, limit, context)

    def opinion_events(self, opinion_id: str) -> list[OpinionEvent]:
        """An opinion's confidence history, oldest first."""
        from core.retain.opinions import events_of

        return events_of(self.store.reader(), opinion_id)

    def observation(self, entity_id: str) -> Unit | None:
        """The entity's observation unit, if one was generated."""
        from core.retain.observations import observation_of

        return observation_of(self.store.reader(), entity_id)

    # -- recall (core/recall) ------------------------------------------------

    @journaled(RECALL)
    def recall(
        self,
        query: str,
        budget_tokens: int = 1024,
        networks: Network | str | Sequence[Network | str] | None = None,
        now: datetime | None = None,
        level: str = "mid",
        **options: Any,
    ) -> RecallResult:
        """The facts most relevant to `query` that fit in `budget_tokens`, with the
        trace of how they were chosen. Options (reranker, channels, start, end,
        observation_budget, settings): see `core.recall.pipeline.recall`.

        `count_access` (default True): count this recall in each returned unit's
        `access_count` and `last_accessed_at`. Callers that only inspect recall
        (the studio's recall debugger, benchmarks) pass False."""
        from core.recall.pipeline import recall

        return recall(self.handle, query, budget_tokens, networks, now, level, **options)

    def reference_time(self) -> datetime:
        """The "now" recall takes when it is given none: the bank's latest activity
        (a 2023 conversation's bank lives in 2023), else the clock. The studio's
        reference-time picker starts here, not at today's date."""
        from core.recall.pipeline import reference_time

        return reference_time(self.store)[0]

    def time_span(
        self, network: Network | str | None = None
    ) -> tuple[datetime | None, datetime | None]:
        """When the bank's (or one network's) active facts occurred: first and last."""
        from core.store.units import occurrence_span

        return occurrence_span(self.store.reader(), network)

    def prepare_recall(self) -> str:
        """Load what recall keeps in memory (the link graph: ~3.5 s at 100,000
        units; a small bank's units) so the first recall is not the slow one; returns what the graph did
        ("rebuilt", "appended" or "current"), and open the search indexes. Read-only
        but for the replay of writes a crash left unindexed."""
        from core.recall.linkgraph import link_graph
        from core.recall.unitcache import units_in_memory

        self.store.open_indexes()
        units_in_memory(self.store).load(self.store)

        graph = link_graph(self.store)
        with graph.lock:
            return graph.refresh(self.store.reader(), self.store.generation)

    # -- reflect and opinions (core/reflect) ---------------------------------

    @journaled(REFLECT)
    def reflect(
        self,
        query: str,
        disposition: Disposition | None = None,
        budget_tokens: int = 4096,
        commit: bool = True,
        llm: LanguageModel | None = None,
        *,
        now: datetime | None = None,
        tags: TagScope | None = None,
        context: str | None = None,
        max_tokens: int | None = None,
    ) -> Reflection:
        """Answer `query` from memory under Θ (default: the bank's) and, with
        `commit`, keep the reflection and apply the opinions it forms. `tags`
        limits the evidence to what that tag scope lets through, `context` is the
        asker's situation (given to the answer and recalled with), `max_tokens`
        the longest answer. See `core.reflect.reflect.reflect`."""
        from core.reflect.reflect import Asked, reflect

        asked = Asked(tags=tags, context=context, max_tokens=max_tokens)
        return reflect(
            self.handle, query, disposition, budget_tokens, commit, llm, now=now, asked=asked
        )

    @journaled(REFLECT)
    def compare(
        self,
        query: str,
        dispositions: Sequence[Disposition],
        budget_tokens: int = 4096,
        llm: LanguageModel | None = None,
        *,
        now: datetime | None = None,
    ) -> Comparison:
        """The same recalled evidence answered under 2–4 dispositions in parallel;
        commits nothing."""
        from core.reflect.reflect import compare

        return compare(self.handle, query, dispositions, budget_tokens, llm, now=now)

    def structured_output(
        self, reflection: Reflection, schema: dict[str, Any], llm: LanguageModel | None = None
    ) -> tuple[dict[str, Any] | None, str | None]:
        """The reflection's answer as a value fitting the JSON Schema `schema`, or
        None and why not (see core/reflect/structured.py). InvalidInputError for a
        schema that is not one."""
        from core.providers.llm import ModelChoice
        from core.reflect.structured import structured_output

        choice = ModelChoice(llm, self.handle.language_model) if not reflection.offline else None
        try:
            return structured_output(reflection, schema, choice.model if choice else None)
        finally:
            if choice is not None:
                choice.close()

    @journaled(REFLECT)
    def commit_reflection(self, reflection: Reflection, *, apply_opinions: bool = True) -> Change:
        """Keep a reflection (from `compare` or `reflect(commit=False)`) and apply
        exactly its opinions."""
        from core.reflect.reflect import commit_reflection

        return commit_reflection(self.handle, reflection, apply_opinions=apply_opinions)

    def reflections(
        self, *, limit: int | None = 100, offset: int = 0, opinion_id: str | None = None
    ) -> list[Reflection]:
        """Kept reflections, newest first (with `opinion_id`: those that touched it)."""
        from core.reflect.keeping import list_reflections

        return list_reflections(self.handle, limit=limit, offset=offset, opinion_id=opinion_id)

    def reflection(self, reflection_id: str) -> Reflection:
        from core.reflect.keeping import get_reflection

        return get_reflection(self.handle, reflection_id)

    def opinions(
        self,
        entity: str | None = None,
        *,
        min_confidence: float | None = None,
        limit: int | None = None,
    ) -> list[Unit]:
        """Active opinions, most confident first; with `entity`, those about it."""
        from core.reflect.history import opinions

        return opinions(self.handle, entity, min_confidence=min_confidence, limit=limit)

    def opinion_history(self, opinion_id: str) -> OpinionTrajectory:
        """An opinion's trajectory: each event with its evidence, reason and past texts."""
        from core.reflect.history import trajectory

        return trajectory(self.handle, opinion_id)

    def opinion_confidence_at(self, opinion_id: str, when: datetime) -> float | None:
        """An opinion's confidence at a past time, replayed from its events."""
        from core.reflect.history import confidence_at

        return confidence_at(self.handle, opinion_id, when)

    def opinions_changed(
        self, start: datetime | None = None, end: datetime | None = None
    ) -> list[OpinionChange]:
        """Opinions with events in [start, end), each with those events."""
        from core.reflect.history import changed_between

        return changed_between(self.handle, start, end)

    # -- curation (core/curate) ----------------------------------------------

    @journaled(CURATE)
    def rename_entity(self, entity_id: str, name: str, *, keep_alias: bool = True) -> Change:
        """Rename an entity; the old name stays an alias unless keep_alias=False."""
        from core.curate.entities import rename_entity

        return rename_entity(self.handle, entity_id, name, keep_alias=keep_alias)

    def merge_hints(self) -> list[MergeHint]:
        """Pairs of entities that may be one (a name inside the other, a near
        spelling, nearly always mentioned together), strongest first, each with
        why. A hint for a curator: nothing is merged."""
        from core.curate.hints import merge_hints

        return merge_hints(self.store.reader())

    @journaled(CURATE)
    def merge_entities(self, source_id: str, target_id: str) -> Change:
        """Merge `source_id` into `target_id`: mentions, links, opinions and
        observations follow; the source's name becomes an alias of the target."""
        from core.curate.entities import merge_entities

        return merge_entities(self.handle, source_id, target_id)

    @journaled(CURATE)
    def split_entity(
        self,
        entity_id: str,
        unit_ids: Sequence[str],
        name: str,
        *,
        type: str | None = None,
    ) -> Change:
        """Move the mentions by `unit_ids` to a new entity `name` (its id is in
        `change.added[Kind.ENTITY]`)."""
        from core.curate.entities import split_entity

        return split_entity(self.handle, entity_id, unit_ids, name, type=type)

    def retract_preview(self, entity_id: str) -> RetractPreview:
        """How many units, opinions, observations, links and source turns an
        entity's retract (or purge) touches."""
        from core.curate.retract import retract_preview

        return retract_preview(self.handle, entity_id)

    @journaled(CURATE)
    def retract_entity(self, entity_id: str) -> Change:
        """Hide the entity and every unit derived from it from recall, reflect and
        the default views; reversible (restore_entity, undo)."""
        from core.curate.retract import retract_entity

        return retract_entity(self.handle, entity_id)

    @journaled(CURATE)
    def restore_entity(self, entity_id: str) -> Change:
        from core.curate.retract import restore_entity

        return restore_entity(self.handle, entity_id)

    @journaled(CURATE)
    def purge_entity(
        self,
        entity_id: str,
        *,
        confirm: bool = False,
        progress: Progress | None = None,
    ) -> Change:
        """Remove the entity and everything derived from it for good, from every
        store of the bank and their old copies on disk; every name it had is
        redacted where it was mentioned. Exported snapshots are outside the bank
        and keep it (see `exports`). THIS CANNOT BE UNDONE: confirm=True."""
        from core.curate.purge import purge_entity

        return purge_entity(self.handle, entity_id, confirm=confirm, progress=progress)

    @journaled(CURATE)
    def undo(self) -> Change:
        """Take back the latest curation action (not a purge); EngramError if none."""
        from core.curate.undo import undo

        return undo(self.handle)

    @journaled(CURATE)
    def redo(self) -> Change:
        from core.curate.undo import redo

        return redo(self.handle)

    def audit(
        self,
        *,
        limit: int | None = 100,
        offset: int = 0,
        action: str | None = None,
        target: str | None = None,
        actor: str | None = None,
    ) -> list[AuditEntry]:
        """Curation actions, newest first: who, when, what, before and after."""
        from core.curate.audit import entries

        return entries(
            self.store.reader(),
            limit=limit,
            offset=offset,
            action=action,
            target=target,
            actor=actor,
        )

    # -- the activity journal (core/journal) ---------------------------------

    def activity(
        self,
        *,
        actor: str | None = None,
        kind: str | None = None,
        operation: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[ActivityEntry]:
        """What was done to the bank, newest first: who (actor, transport), what,
        how it went, how long it took, the change it made. `before`: the next page
        after one that ended at that id. Entries come without their detail."""
        if kind is not None and kind not in ACTIVITY_KINDS:
            raise InvalidInputError(
                f"kind must be one of {', '.join(ACTIVITY_KINDS)}; got {kind!r}"
            )
        return self._activity.journal.entries(
            actor=actor,
            kind=kind,
            operation=operation,
            since=since,
            until=until,
            before=before,
            limit=limit,
        )

    def activity_entry(self, entry_id: int) -> ActivityEntry:
        """One entry with its detail: for a recall, the whole result the caller got
        (`recorded_recall` rebuilds it). EngramError if there is none."""
        found = self._activity.journal.entry(int(entry_id))
        if found is None:
            raise ActivityNotFoundError(f"no activity entry {entry_id} in bank {self.name!r}")
        return found

    def activity_actors(self) -> list[str]:
        """Every actor the journal names, most recent first."""
        return self._activity.journal.actors()

    def activity_usage(self) -> tuple[int, int]:
        """(entries kept, bytes they take): what `journal.keep_mb` bounds."""
        return self._activity.journal.usage()

    def watch_activity(self, listener: Callable[[ActivityEntry], None]) -> Callable[[], None]:
        """Call `listener(entry)` for each entry recorded from now on, on the thread
        that recorded it (keep it quick). Returns the function that stops it."""
        return self._activity.journal.subscribe(listener)

    def prune_activity(self) -> int:
        """Apply the journal's retention now (it is also applied in the background)."""
        return self._activity.journal.prune()

    def recorded_recall(self, entry_id: int) -> RecallResult:
        """The result a journaled recall gave, exactly as its caller got it."""
        from core.recall.result import RecallResult

        entry = self.activity_entry(entry_id)
        if entry.operation != "recall" or not entry.detail:
            why = "its details were removed by a purge" if entry.redacted else "it kept no result"
            if entry.operation != "recall":
                why = f"it is a {entry.operation}, not a recall"
            raise EngramError(f"activity entry {entry_id} cannot be replayed: {why}")
        return RecallResult.from_dict(entry.detail)

    def replay_recall(self, entry_id: int) -> RecallReplay:
        """Run a journaled recall again, with the same arguments, against the bank as
        it is now, and say what changed (facts gained, lost, moved; tokens). Counts
        no access: a replay is an inspection."""
        from core.recall.replay import compare_recalls

        entry = self.activity_entry(entry_id)
        recorded = self.recorded_recall(entry_id)
        arguments = replay_arguments(entry.arguments, recorded)
        replayed = self.recall(**arguments, count_access=False)
        return compare_recalls(recorded, replayed, entry_id=entry.id, arguments=arguments)

    # -- snapshots (core/snapshot) -------------------------------------------

    def export_snapshot(
        self,
        path: str | Path,
        *,
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
        record_as: str | None = None,
        record_host: str = "",
    ) -> Manifest:
        """Write the whole bank to one `.engram` file (a zip of Parquet tables and a
        manifest), streamed; returns the manifest. Import with Engine.import_snapshot.
        Recorded in `exports` under `path` (or `record_as` on `record_host`: where
        a remote client had it sent; "" records nothing)."""
        from core.snapshot.export import export_snapshot

        return export_snapshot(self.handle, path, progress, cancel, record_as, record_host)

    def exports(self) -> list[ExportRecord]:
        """Every file this bank was exported to (`ExportRecord`: path, time, units,
        whether it still exists). A purge cannot reach them: they are outside the bank."""
        from core.snapshot.export import known_exports

        return known_exports(self.handle)

    # -- the queue of asynchronous operations (core/store/oplog.py) -----------

    @property
    def operation_queue(self) -> OperationQueue:
        """What a serving process queues on the bank (`"async": true` retains):
        durable before it is acknowledged, finished by whoever serves it next."""
        from core.store.oplog import OperationQueue

        return OperationQueue(self.store)

    # -- integrity -----------------------------------------------------------

    def verify(self) -> VerifyReport:
        return self.store.verify()

    @journaled(CURATE)
    def repair(self, *, rebuild: bool = False) -> VerifyReport:
        """Re-derive the indexes where they disagree with DuckDB; with `rebuild`,
        rebuild both indexes from scratch first (no old version or stale segment
        survives)."""
        if rebuild:
            self.store.rebuild_indexes()
        return self.store.repair()

    # -- lifecycle -----------------------------------------------------------

    def advertise(
        self, url: str | None, token_file: str | None = None, certificate: str | None = None
    ) -> None:
        """Record in the bank's lock that this process serves it at `url` (None:
        withdraw it), so other processes' commands on it are routed here; an https
        `url` names the server's `certificate`, which those commands trust."""
        self.store.advertise(url, token_file, certificate)

    def close(self) -> None:
        from core.recall.unitcache import units_in_memory

        self.engine._forget(self)
        try:
            self._activity.close()  # what it has queued is committed first
            units_in_memory(self.store).wait()  # no read of a closing bank
        finally:
            self.store.close()

    @property
    def closed(self) -> bool:
        return self.store.closed

    def __enter__(self) -> Bank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Bank({self.name!r})"


# What a replay may pass on to recall, as the journal kept it.
REPLAYED = (
    "budget_tokens",
    "networks",
    "now",
    "level",
    "channels",
    "start",
    "end",
    "observation_budget",
    "settings",
    "reranker",
)


def replay_arguments(kept: Mapping[str, Any], recorded: RecallResult) -> dict[str, Any]:
    """The recall's own arguments again: the query from its result (never cut), the
    times as datetimes, a reranker only when it was named (an object is not kept)."""
    arguments: dict[str, Any] = {"query": recorded.query}
    for key in REPLAYED:
        value = kept.get(key)
        if value is None:
            continue
        if key in ("now", "start", "end") and isinstance(value, str):
            value = datetime.fromisoformat(value)
        if key == "reranker" and value not in ("heuristic", "none"):
            continue
        arguments[key] = value
    return arguments
