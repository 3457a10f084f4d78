"""A bank: the engine's handle on one agent's memory.

Every mutating method returns a `Change` naming what it touched, so callers
(the studio's views, the CLI, undo) act on exactly that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.config import bank_config
from core.progress import CancelToken, Progress, check, report
from core.store.bank_store import BankStore, utcnow
from core.store.units import (
    UnitFilter,
    count_units,
    delete_units,
    get_units,
    insert_units,
    select_units,
)
from core.types import (
    BankProfile,
    Change,
    Disposition,
    EngramError,
    InvalidInputError,
    Kind,
    Network,
    NewUnit,
    Unit,
    VerifyReport,
)

if TYPE_CHECKING:
    from core.engine import Engine

ADD_BATCH = 1000
MAX_UNIT_CHARS = 20_000


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


class Bank:
    def __init__(self, engine: Engine, folder: Path, store: BankStore) -> None:
        self.engine = engine
        self.folder = folder
        self.store = store

    # -- identity and profile -----------------------------------------------

    @property
    def name(self) -> str:
        return self.engine.bank_name(self.folder)

    def profile(self) -> BankProfile:
        stored = self.store.meta("profile", {})
        return BankProfile(
            name=self.name,
            background=stored.get("background", ""),
            agent_name=stored.get("agent_name", ""),
            disposition=Disposition.from_dict(stored.get("disposition", {})),
            config=bank_config(stored.get("config")),
        )

    def set_profile(
        self,
        *,
        background: str | None = None,
        agent_name: str | None = None,
        disposition: Disposition | None = None,
        config: dict[str, Any] | None = None,
    ) -> Change:
        stored = dict(self.store.meta("profile", {}))
        if background is not None:
            stored["background"] = background
        if agent_name is not None:
            stored["agent_name"] = agent_name
        if disposition is not None:
            stored["disposition"] = disposition.to_dict()
        if config is not None:
            merged = {**stored.get("config", {}), **config}
            bank_config(merged)  # raises on unknown keys or bad values
            stored["config"] = merged
        with self.store.transaction() as tx:
            self.store.set_meta(tx.con, "profile", stored)
        return Change.of(updated={Kind.PROFILE: [self.name]})

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.profile().config)

    # -- units ---------------------------------------------------------------

    def add_units(
        self,
        units: Sequence[NewUnit],
        progress: Progress | None = None,
        cancel: CancelToken | None = None,
    ) -> Change:
        """Add units in batches; each batch is one unit of work.

        Units without a vector are embedded. A cancel stops before the next
        batch: batches already added stay (each is complete on its own)."""
        units = [self._validated(u).with_id() for u in units]
        added: list[str] = []
        for start in range(0, len(units), ADD_BATCH):
            check(cancel)
            batch = units[start : start + ADD_BATCH]
            vectors = self.vectors_for(batch)
            with self.store.transaction() as tx:
                ids = insert_units(tx.con, batch, vectors, self.store.embedding_model, utcnow())
                tx.touch(ids)
            added += ids
            report(progress, len(added), len(units), "adding units")
        return Change.of(added={Kind.UNIT: added})

    def vectors_for(self, units: Sequence[NewUnit]) -> np.ndarray:
        """The vectors of `units`: given ones as they are, the rest embedded in one batch."""
        vectors = np.zeros((len(units), self.store.dim), dtype=np.float32)
        missing = [i for i, u in enumerate(units) if u.vector is None]
        for i, u in enumerate(units):
            if u.vector is not None:
                if len(u.vector) != self.store.dim:
                    raise InvalidInputError(
                        f"unit vector has {len(u.vector)} dimensions; this bank uses {self.store.dim}"
                    )
                vectors[i] = u.vector
        if missing:
            vectors[missing] = self.engine.embedder.embed([units[i].text for i in missing])
        return vectors

    @staticmethod
    def _validated(unit: NewUnit) -> NewUnit:
        text = unit.text.strip() if isinstance(unit.text, str) else ""
        if not text:
            raise InvalidInputError("a unit needs non-empty text")
        if len(text) > MAX_UNIT_CHARS:
            raise InvalidInputError(
                f"a unit's text is limited to {MAX_UNIT_CHARS} characters (got {len(text)})"
            )
        if unit.confidence is not None and not 0.0 <= unit.confidence <= 1.0:
            raise InvalidInputError(f"confidence must be in [0, 1], got {unit.confidence}")
        return replace(unit, text=text, network=Network(unit.network))

    def unit(self, unit_id: str) -> Unit:
        found = get_units(self.store.reader(), [unit_id])
        if unit_id not in found:
            raise EngramError(f"no unit {unit_id!r} in bank {self.name!r}")
        return found[unit_id]

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
        return select_units(self.store.reader(), flt, order, descending, offset, limit)

    def count(
        self, network: Network | str | Sequence[Network | str] | None = None, **filters: Any
    ) -> int:
        return count_units(self.store.reader(), UnitFilter(network=network, **filters))

    def edit_unit(
        self,
        unit_id: str,
        *,
        text: str | None = None,
        network: Network | str | None = None,
        occurred_start: datetime | None = UNSET,
        occurred_end: datetime | None = UNSET,
        confidence: float | None = UNSET,
    ) -> Change:
        """Change a unit in place; a text edit re-embeds and re-indexes it."""
        current = self.unit(unit_id)
        fields: dict[str, Any] = {}
        if text is not None and text != current.text:
            fields["text"] = self._validated(NewUnit(text=text)).text
            fields["vector"] = self.engine.embedder.embed_one(fields["text"]).tolist()
        if network is not None:
            fields["network"] = str(Network(network))
        if occurred_start is not UNSET:
            fields["occurred_start"] = occurred_start
        if occurred_end is not UNSET:
            fields["occurred_end"] = occurred_end
        if confidence is not UNSET:
            if confidence is not None and not 0.0 <= confidence <= 1.0:
                raise InvalidInputError(f"confidence must be in [0, 1], got {confidence}")
            fields["confidence"] = confidence
        if not fields:
            return Change()
        fields["updated_at"] = utcnow()
        assignments = ", ".join(f"{column} = ?" for column in fields)
        with self.store.transaction() as tx:
            tx.con.execute(
                f"UPDATE units SET {assignments} WHERE id = ?", [*fields.values(), unit_id]
            )
            tx.touch([unit_id])
        return Change.of(updated={Kind.UNIT: [unit_id]})

    def delete_units(self, unit_ids: Sequence[str]) -> Change:
        with self.store.transaction() as tx:
            removed = delete_units(tx.con, unit_ids)
            tx.touch(removed)
        return Change.of(removed={Kind.UNIT: removed})

    # -- retain (core/retain) ------------------------------------------------

    # -- recall (core/recall) ------------------------------------------------

    # -- reflect and opinions (core/reflect) ---------------------------------

    # -- curation (core/curate) ----------------------------------------------

    # -- snapshots (core/snapshot) -------------------------------------------

    # -- integrity -----------------------------------------------------------

    def verify(self) -> VerifyReport:
        return self.store.verify()

    def repair(self) -> VerifyReport:
        return self.store.repair()

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        self.engine._forget(self)
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
