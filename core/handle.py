"""What an operation on one bank works with, and all it gets.

Retain, recall, reflect, curation and snapshots take a `BankHandle`: the
bank's stores, its profile and configuration, and the engine's providers (the
embedder and the configured language model, both made only when asked for).
They never reach back into `Bank` or `Engine`: those sit above them and
delegate down (`Bank.ingest` calls `core.retain.ingest(bank.handle, ...)`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.config import stored_config
from core.home import bank_id, read_label
from core.text import has_surrogate
from core.types import (
    MAX_UNIT_CHARS,
    BankProfile,
    Disposition,
    EngramError,
    InvalidInputError,
    Network,
    NewUnit,
    Unit,
)

if TYPE_CHECKING:
    from core.journal import Journal
    from core.providers.embedder import Embedder
    from core.providers.llm import LanguageModel
    from core.store.bank_store import BankStore


class BankHandle:
    def __init__(
        self,
        folder: Path,
        store: BankStore,
        embedder: Callable[[], Embedder],
        language_model: Callable[[], LanguageModel | None],
    ) -> None:
        self.folder = folder
        self.store = store
        # The bank's activity journal (set by Bank): a purge scrubs it too.
        self.journal: Journal | None = None
        self._id: str | None = None
        self._embedder = embedder
        self._language_model = language_model

    @property
    def name(self) -> str:
        """The bank's name as its label says now (another process may rename it)."""
        label = read_label(self.folder)
        return label["name"] if label else self.folder.name

    @property
    def id(self) -> str:
        """The bank's immutable id (core/home.py): read once, it never changes."""
        if self._id is None:
            self._id = bank_id(self.folder, read_label(self.folder) or {})
        return self._id

    # -- providers -------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The engine's embedder (loaded on first use)."""
        return self._embedder()

    def language_model(self) -> LanguageModel | None:
        """A new client for the configured model, or None when none is chosen.
        The caller closes it (see `core.providers.llm.ModelChoice`)."""
        return self._language_model()

    # -- profile -----------------------------------------------------------------

    def profile(self) -> BankProfile:
        return self.read_profile()[0]

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.profile().config)

    def read_profile(self) -> tuple[BankProfile, list[str]]:
        """The profile, and what the stored one holds that this version cannot
        use (ignored when read, dropped when saved again)."""
        stored, warnings = self.stored_profile()
        config, config_warnings = stored_config(stored.get("config"))
        warnings += config_warnings
        try:
            disposition = Disposition.from_dict(stored.get("disposition") or {})
        except (TypeError, ValueError, AttributeError):
            disposition = Disposition()
            warnings.append("the stored disposition is damaged; the default is used")
        text = {}
        for key in ("background", "agent_name"):
            value = stored.get(key, "")
            text[key] = value if isinstance(value, str) else ""
            if not isinstance(value, str):
                warnings.append(f"the stored {key} is not text; it is ignored")
        profile = BankProfile(
            name=self.name,
            background=text["background"],
            agent_name=text["agent_name"],
            disposition=disposition,
            config=config,
        )
        return profile, warnings

    def stored_profile(self) -> tuple[dict, list[str]]:
        stored = self.store.meta("profile", {})
        if isinstance(stored, dict):
            return dict(stored), []
        return {}, [f"the stored profile is not a table ({type(stored).__name__}); it is ignored"]

    # -- units -------------------------------------------------------------------

    def unit(self, unit_id: str) -> Unit:
        from core.store.units import get_units

        found = get_units(self.store.counted_reader(), [unit_id])
        if unit_id not in found:
            raise EngramError(f"no unit {unit_id!r} in bank {self.name!r}")
        return found[unit_id]

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
            vectors[missing] = self.embedder.embed([units[i].text for i in missing])
        return vectors


def validated(unit: NewUnit) -> NewUnit:
    """`unit` as a bank takes it (text trimmed, network checked), or InvalidInputError."""
    # NUL is no text: dropped (as every importer refuses it in a file).
    text = unit.text.replace("\x00", "").strip() if isinstance(unit.text, str) else ""
    if not text:
        raise InvalidInputError("a unit needs non-empty text")
    if has_surrogate(text):
        raise InvalidInputError(
            "a unit's text cannot hold lone UTF-16 surrogates (like \\ud800): not text"
        )
    if len(text) > MAX_UNIT_CHARS:
        raise InvalidInputError(
            f"a unit's text is limited to {MAX_UNIT_CHARS} characters (got {len(text)})"
        )
    if unit.confidence is not None and not 0.0 <= unit.confidence <= 1.0:
        raise InvalidInputError(f"confidence must be in [0, 1], got {unit.confidence}")
    return replace(unit, text=text, network=Network(unit.network))
