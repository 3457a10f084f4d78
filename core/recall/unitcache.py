"""The units of a small bank in memory, for recall's load stage.

Recall reads the candidates it ranks (~50-150 units) and the observations it
packs. From DuckDB that is two queries and a row conversion per unit (~5 ms
idle, 6-17 under load); from memory, dictionary lookups. The whole bank is
held, as `Unit`s, up to UNITS_IN_MEMORY_MAX units (~1 KB each); a larger bank
reads from DuckDB as before.

Kept current like the link graph, by the store's `generation` (committed
write transactions): units loaded at another generation are not used. The
reload is whole, because writes do not say which units they changed (an entity
merge changes mentions, an opinion update a confidence, ...), and it costs a
scan of the bank (~25 ms at 1,000 units under load, far more at 20,000), so
it runs in the background: a recall that finds the units stale reads its own
from DuckDB, exactly as before, and starts the reload for the recalls after
it. Either way recall sees what DuckDB holds. `Bank.prepare_recall` loads
them up front (`load`). Two things recall asked DuckDB on every call are
derived from them too: each entity's active observations (`observations_of`)
and the bank's latest activity, its reference time (`latest_activity`).

Read in the same snapshot, what a served recall shows beside the units and
what speaker focus asks (`Labels`): every unit's source turns, entity names,
document titles, observation sources, the bank's speakers. Each of those was a
DuckDB query of 1.5-5 ms per recall over HTTP (a 400-turn bank, idle), more
than the in-memory stages they served.

Access counts are written without a generation bump (core/store/access.py),
so the `access_count` and `last_accessed_at` of these units are as of the
load: recall reads neither.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from core.recall.focus import speaker_names
from core.store.turns import TURN_COLUMNS, labels_of, sources_of, turn_of_row
from core.store.units import get_units, read_snapshot, scan_units
from core.types import Network, Turn, Unit, UnitStatus

UNITS_IN_MEMORY_MAX = 20_000


class Labels(NamedTuple):
    """What is shown and asked beside a small bank's units, as `Bank.unit_labels`,
    `Bank.sources` and speaker focus would read it."""

    sources: dict[str, list[Turn]]  # unit id -> its source turns in its own document
    entity_names: dict[str, str]  # every entity's, whatever its status
    titles: dict[str, str]  # document id -> title
    observation_sources: dict[str, list[str]]  # observation id -> its facts, in order
    speakers: dict[str, frozenset[str]]  # everyone who speaks in a turn -> their names


class Loaded(NamedTuple):
    """What recall reads of a small bank, derived from its units at one generation."""

    units: dict[str, Unit]
    observations: dict[str, list[str]]  # entity id -> the active observations mentioning it
    # The latest mention and occurrence of an active unit (`reference_time`).
    latest: tuple[datetime | None, datetime | None]
    labels: Labels


class UnitsInMemory:
    """One store's units, as of `generation` (`loaded` None: not loaded, or too many)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation: object = None
        self.loaded: Loaded | None = None
        self._loading: threading.Thread | None = None

    @property
    def units(self) -> dict[str, Unit] | None:
        return None if self.loaded is None else self.loaded.units

    def current(self, store) -> Loaded | None:
        """What is loaded, if it is what DuckDB holds now; else None, and a
        reload starts in the background."""
        with self.lock:
            if self.generation == store.generation:
                return self.loaded
            if self._loading is None:
                self._loading = threading.Thread(
                    target=self._load_quietly, args=(store,), name="recall-units", daemon=True
                )
                self._loading.start()
            return None

    def get(self, store, unit_ids: Sequence[str]) -> dict[str, Unit]:
        """These units (any status) by id, as DuckDB holds them now; ids not
        stored are left out."""
        loaded = self.current(store)
        if loaded is None:
            return get_units(store.reader(), unit_ids)
        units = loaded.units
        return {i: units[i] for i in unit_ids if i in units}

    def load(self, store) -> int | None:
        """Load the bank's units now (None: it is past UNITS_IN_MEMORY_MAX)."""
        # The generation is read before the tables: a commit landing in between
        # makes the units newer than the generation recorded, never older, so
        # they are reloaded rather than trusted stale.
        generation = store.generation
        con = store.reader()
        loaded = None
        if con.execute("SELECT count(*) FROM units").fetchall()[0][0] <= UNITS_IN_MEMORY_MAX:
            with read_snapshot(con):
                units = {u.id: u for u in scan_units(con)}
                loaded = _derive(units, _read_labels(con, units))
        with self.lock:
            self.loaded, self.generation = loaded, generation
        return None if loaded is None else len(loaded.units)

    def _load_quietly(self, store) -> None:
        try:
            self.load(store)
        except Exception:  # the bank closed meanwhile: recalls read DuckDB, as before
            pass
        finally:
            with self.lock:
                self._loading = None

    def wait(self) -> None:
        """Until a reload in the background (if any) is done."""
        with self.lock:
            loading = self._loading
        if loading is not None:
            loading.join()


def _read_labels(con, units: dict[str, Unit]) -> Labels:
    """`Labels` of `units`, in the caller's snapshot."""
    turns: dict[tuple[str, str], Turn] = {}
    for row in con.execute(f"SELECT document_id, {TURN_COLUMNS} FROM turns").fetchall():
        turns[row[0], row[1]] = turn_of_row(row[1:])
    sources: dict[str, list[Turn]] = {}
    for u in units.values():
        if u.document_id:
            # As `sources_of` joins them: each turn once, at its first place.
            found = [turns.get((u.document_id, t)) for t in dict.fromkeys(u.source_ids)]
            if any(found):
                sources[u.id] = [t for t in found if t is not None]
    observation_sources: dict[str, list[str]] = {}
    for observation, fact in con.execute(
        "SELECT observation_id, unit_id FROM observation_sources ORDER BY rowid"
    ).fetchall():
        observation_sources.setdefault(observation, []).append(fact)
    return Labels(
        sources,
        dict(con.execute("SELECT id, name FROM entities").fetchall()),
        dict(con.execute("SELECT id, title FROM documents").fetchall()),
        observation_sources,
        speaker_names(con),
    )


def _derive(units: dict[str, Unit], labels: Labels) -> Loaded:
    observations: dict[str, list[str]] = {}
    mentioned, occurred = [], []
    for u in units.values():
        if u.status is not UnitStatus.ACTIVE:
            continue
        if u.network is Network.OBSERVATION:
            for entity_id in u.entity_ids:
                observations.setdefault(entity_id, []).append(u.id)
        if u.mentioned_at is not None:
            mentioned.append(u.mentioned_at)
        end = u.occurred_end if u.occurred_end is not None else u.occurred_start
        if end is not None:
            occurred.append(end)
    latest = (max(mentioned, default=None), max(occurred, default=None))
    return Loaded(units, observations, latest, labels)


def latest_activity(store) -> tuple[datetime | None, datetime | None]:
    """The latest mention and occurrence (its end, else its start) of an active
    unit (from memory in a small bank)."""
    loaded = units_in_memory(store).current(store)
    if loaded is not None:
        return loaded.latest
    return tuple(
        store.reader()
        .execute(
            "SELECT max(mentioned_at), max(coalesce(occurred_end, occurred_start))"
            " FROM units WHERE status = ?",
            [UnitStatus.ACTIVE.value],
        )
        .fetchall()[0]
    )


_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def units_in_memory(store) -> UnitsInMemory:
    """The store's units in memory (one per open store)."""
    with _caches_lock:
        cache = _caches.get(store)
        if cache is None:
            cache = _caches[store] = UnitsInMemory()
        return cache


def recall_units(store, unit_ids: Sequence[str]) -> dict[str, Unit]:
    """`get_units` for recall: from memory in a small bank (see the module)."""
    return units_in_memory(store).get(store, unit_ids)


def observations_of(store, entity_ids: Sequence[str]) -> dict[str, list[str]]:
    """The active observation units that mention each of these entities (from
    memory in a small bank; in no particular order)."""
    loaded = units_in_memory(store).current(store)
    if loaded is not None:
        known = loaded.observations
        return {e: list(known[e]) for e in entity_ids if e in known}
    rows = (
        store.reader()
        .execute(
            "SELECT m.entity_id, u.id FROM mentions m JOIN units u ON u.id = m.unit_id"
            " WHERE m.entity_id IN (SELECT unnest(?)) AND u.network = ? AND u.status = ?",
            [list(entity_ids), Network.OBSERVATION.value, UnitStatus.ACTIVE.value],
        )
        .fetchall()
    )
    found: dict[str, list[str]] = {}
    for entity_id, unit_id in rows:
        found.setdefault(entity_id, []).append(unit_id)
    return found


def labels_in_memory(store) -> Labels | None:
    """A small bank's `Labels`, if they are what DuckDB holds now."""
    loaded = units_in_memory(store).current(store)
    return None if loaded is None else loaded.labels


def unit_labels(
    store, entity_ids: Sequence[str], document_ids: Sequence[str], observation_ids: Sequence[str]
) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
    """`labels_of`, from memory in a small bank."""
    labels = labels_in_memory(store)
    if labels is None:
        return labels_of(store.reader(), entity_ids, document_ids, observation_ids)
    names, titles, sources = labels.entity_names, labels.titles, labels.observation_sources
    return (
        {e: names[e] for e in entity_ids if e in names},
        {d: titles[d] for d in document_ids if d in titles},
        {o: list(sources[o]) for o in observation_ids if o in sources},
    )


def unit_sources(store, unit_ids: Sequence[str]) -> dict[str, list[Turn]]:
    """`sources_of`, from memory in a small bank."""
    labels = labels_in_memory(store)
    if labels is None:
        return sources_of(store.reader(), unit_ids)
    known = labels.sources
    return {i: list(known[i]) for i in unit_ids if i in known}
