"""The banks a process serves, and the one lock per bank its writes take.

Reads (recall, listings) run without the lock: every read takes its own DuckDB
cursor and sees committed data only, and the indexes are updated under the
store's own write lock. Writes through the server take the bank's lock, so
they are serialised with each other and with the studio's runner, which takes
the same lock (`lock(name)`). The lock is a `WriteLock` (admission.py): a
request waits for it on the event loop, never in a shared worker thread. The observation rebuilds a change queues are run
by the owner: the studio's pending-jobs indicator, or headless (no `on_change`)
a background worker here (core/server/rebuilds.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from core.bank import Bank
from core.engine import Engine
from core.server.admission import WriteLock
from core.server.rebuilds import ObservationRebuilds
from core.types import BankNotFoundError, Change, Kind

OnChange = Callable[[str, Change], None]


class ServedBanks:
    """The banks this process owns and serves, each with its lock."""

    def __init__(
        self, engine: Engine, *, open_on_demand: bool, on_change: OnChange | None = None
    ) -> None:
        self.engine = engine
        self.open_on_demand = open_on_demand
        self.on_change = on_change
        self._banks: dict[str, Bank] = {}
        self._opened: set[str] = set()  # opened here (closed by `close`), not adopted
        self._locks: dict[str, WriteLock] = {}
        self._guard = threading.Lock()
        # (url, token file) written into each served bank's lock record, so other
        # processes' `engram` commands on it are routed here (core/server/owner.py).
        self._address: tuple[str, str | None] | None = None
        # Headless, nobody else runs what a change queued.
        self.rebuilds = ObservationRebuilds(self) if on_change is None else None

    # -- the studio hands banks over -------------------------------------------------

    def adopt(self, bank: Bank) -> None:
        """The studio opened `bank`: serve it."""
        with self._guard:
            self._banks[bank.name] = bank
            self._locks.setdefault(bank.name, WriteLock())
        self._advertise(bank)

    def release(self, bank_name: str) -> None:
        """The studio closed it: stop serving it (the bank stays open for the caller)."""
        with self._guard:
            bank = self._banks.pop(bank_name, None)
            self._opened.discard(bank_name)
        if bank is not None:
            self._advertise(bank, withdraw=True)

    def advertise(self, url: str | None, token_file: str | None = None) -> None:
        """Record this server's address (None: withdraw it) in the lock of every bank
        served, now and opened later, so `engram` commands elsewhere come here."""
        with self._guard:
            self._address = (url, token_file) if url else None
            banks = list(self._banks.values())
        for bank in banks:
            self._advertise(bank)

    def _advertise(self, bank: Bank, *, withdraw: bool = False) -> None:
        if bank.closed:
            return
        url, token_file = self._address if self._address and not withdraw else (None, None)
        # RuntimeError/OSError: closed meanwhile, and its lock record went with it.
        with contextlib.suppress(OSError, RuntimeError):
            bank.store.advertise(url, token_file)

    # -- lookups -----------------------------------------------------------------------

    def get(self, bank_id: str) -> Bank:
        """The served bank named `bank_id`; opened on demand under `engram serve`.

        `bank_id` is only ever compared with the names in the banks' labels, never
        joined to a path. Raises BankNotFoundError."""
        with self._guard:
            bank = self._banks.get(bank_id)
            if bank is not None and not bank.closed:
                return bank
            if not self.open_on_demand:
                raise BankNotFoundError(f"no bank named {bank_id!r} is served here")
            bank = self.engine.open_bank(bank_id)
            self._banks[bank_id] = bank
            self._opened.add(bank_id)
            self._advertise(bank)
            self._locks.setdefault(bank_id, WriteLock())
            return bank

    def lock(self, bank_name: str) -> WriteLock:
        """The lock that serialises writes to `bank_name` (the studio's runner takes it too)."""
        with self._guard:
            return self._locks.setdefault(bank_name, WriteLock())

    @contextmanager
    def using(self, bank_id: str) -> Iterator[Bank]:
        """The bank, under its lock: for every engine call that writes."""
        bank = self.get(bank_id)
        with self.lock(bank_id):
            yield bank

    def names(self) -> list[str]:
        """The banks a client may reach: all of the data folder's under `engram serve`,
        the adopted ones in the studio."""
        if self.open_on_demand:
            return [info.name for info in self.engine.banks()]
        with self._guard:
            return sorted((n for n, b in self._banks.items() if not b.closed), key=str.lower)

    def changed(self, bank_name: str, change: Change, *, caller_runs_jobs: bool = False) -> None:
        """Tell the owner (the studio) what a request changed; called after the
        commit. Headless, the observation rebuilds it queued start in the
        background, unless the caller runs them itself (a routed `engram`
        command does, right after, and prints what they did as a direct run)."""
        if change.empty:
            return
        if self.on_change is not None:
            self.on_change(bank_name, change)
        elif self.rebuilds is not None and change.added.get(Kind.JOB) and not caller_runs_jobs:
            self.rebuilds.trigger(bank_name)

    # -- banks come and go ---------------------------------------------------------------

    def create(self, bank_id: str, *, background: str = "", agent_name: str = "") -> Bank:
        """Create a bank and serve it. Raises BankExistsError, InvalidInputError."""
        with self.lock(bank_id):
            bank = self.engine.create_bank(bank_id, background=background, agent_name=agent_name)
        return self.serve_new(bank)

    def serve_new(self, bank: Bank) -> Bank:
        """Serve a bank created here (a create, a snapshot import) and announce it."""
        with self._guard:
            self._banks[bank.name] = bank
            self._opened.add(bank.name)
            self._locks.setdefault(bank.name, WriteLock())
        self._advertise(bank)
        self.changed(bank.name, Change.of(added={Kind.BANK: [bank.name]}))
        return bank

    def delete(self, bank_id: str) -> Change:
        """Stop serving the bank and delete it with its folder."""
        self.get(bank_id)  # 404 for a bank this process does not serve
        with self.lock(bank_id):
            with self._guard:
                bank = self._banks.pop(bank_id, None)
                self._opened.discard(bank_id)
            if bank is not None and not bank.closed:
                bank.close()
            change = self.engine.delete_bank(bank_id)
        self.changed(bank_id, change)
        return change

    def close(self) -> None:
        """Stop the background rebuilds, then close the banks opened here
        (adopted ones belong to the studio)."""
        if self.rebuilds is not None:
            self.rebuilds.close()
        with self._guard:
            opened = [self._banks.pop(n) for n in list(self._opened) if n in self._banks]
            self._opened.clear()
        for bank in opened:
            if not bank.closed:
                with self.lock(bank.name):
                    bank.close()
