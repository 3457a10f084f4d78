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
them up front (`load`).

Access counts are written without a generation bump (core/store/access.py),
so the `access_count` and `last_accessed_at` of these units are as of the
load: recall reads neither.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

from core.store.units import all_units, get_units
from core.types import Unit

UNITS_IN_MEMORY_MAX = 20_000


class UnitsInMemory:
    """One store's units by id, as of `generation` (None: not loaded, or too many)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.generation: object = None
        self.units: dict[str, Unit] | None = None
        self._loading: threading.Thread | None = None

    def get(self, store, unit_ids: Sequence[str]) -> dict[str, Unit]:
        """These units (any status) by id, as DuckDB holds them now; ids not
        stored are left out."""
        with self.lock:
            current = self.generation == store.generation
            units = self.units if current else None
            if not current and self._loading is None:
                self._loading = threading.Thread(
                    target=self._load_quietly, args=(store,), name="recall-units", daemon=True
                )
                self._loading.start()
        if units is None:
            return get_units(store.reader(), unit_ids)
        return {i: units[i] for i in unit_ids if i in units}

    def load(self, store) -> int | None:
        """Load the bank's units now (None: it is past UNITS_IN_MEMORY_MAX)."""
        # The generation is read before the tables: a commit landing in between
        # makes the units newer than the generation recorded, never older, so
        # they are reloaded rather than trusted stale.
        generation = store.generation
        con = store.reader()
        units = None
        if con.execute("SELECT count(*) FROM units").fetchall()[0][0] <= UNITS_IN_MEMORY_MAX:
            units = {u.id: u for u in all_units(con)}
        with self.lock:
            self.units, self.generation = units, generation
        return None if units is None else len(units)

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
