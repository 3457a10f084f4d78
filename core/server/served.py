"""The banks a process serves, and the one lock per bank its writes take.

Banks are served by their immutable id (core/home.py): a request may name one
by its id, its name, or a name it had before a rename (for the grace period),
and every one of those reaches the same bank, the same lock and the same
change feed, so renaming a served bank (in the studio, or through the API)
leaves every client working. Reads (recall, listings) run without the lock:
every read takes its own DuckDB cursor and sees committed data only, and the
indexes are updated under the store's own write lock. Writes through the
server take the bank's lock, so they are serialised with each other and with
the studio's runner, which takes the same lock (`lock(bank.id)`). The lock
is a `WriteLock` (admission.py): a request waits for it on the event loop,
never in a shared worker thread. The observation rebuilds a change queues are run by the owner: the studio's
pending-jobs indicator, or headless (no `on_change`) a background worker here
(core/server/rebuilds.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from core.bank import Bank
from core.engine import Engine
from core.server.admission import WriteLock
from core.server.feed import ChangeFeed
from core.server.rebuilds import ObservationRebuilds
from core.types import (
    BankExistsError,
    BankInfo,
    BankNotFoundError,
    BankRenamedError,
    Change,
    EngramError,
    Kind,
)

OnChange = Callable[[str, Change], None]


class ServedBanks:
    """The banks this process owns and serves, each with its lock, keyed by id."""

    def __init__(
        self, engine: Engine, *, open_on_demand: bool, on_change: OnChange | None = None
    ) -> None:
        self.engine = engine
        self.open_on_demand = open_on_demand
        # Told (bank id, change) of what requests change: the studio refreshes its panes.
        self.on_change = on_change
        self._banks: dict[str, Bank] = {}
        self._opened: set[str] = set()  # opened here (closed by `close`), not adopted
        self._locks: dict[str, WriteLock] = {}
        self._feeds: dict[str, ChangeFeed] = {}  # what clients follow (core/server/feed.py)
        self._guard = threading.Lock()
        # (url, token file) written into each served bank's lock record, so other
        # processes' `engram` commands on it are routed here (core/server/owner.py).
        self._address: tuple[str, str | None, str | None] | None = None
        # Told the id of each bank this process begins to serve (the operations
        # queued on it are resumed: core/server/operations.py).
        self.opened: list[Callable[[str], None]] = []
        # Headless, nobody else runs what a change queued.
        self.rebuilds = ObservationRebuilds(self) if on_change is None else None

    # -- the studio hands banks over -------------------------------------------------

    def adopt(self, bank: Bank) -> None:
        """The studio opened `bank`: serve it."""
        with self._guard:
            self._banks[bank.id] = bank
            self._locks.setdefault(bank.id, WriteLock())
        self._advertise(bank)
        self._tell_opened(bank.id)

    def release(self, bank_id: str) -> None:
        """The studio closed it: stop serving it (the bank stays open for the caller)."""
        with self._guard:
            bank = self._banks.pop(bank_id, None)
            self._opened.discard(bank_id)
        if bank is not None:
            self._advertise(bank, withdraw=True)

    def advertise(
        self, url: str | None, token_file: str | None = None, certificate: str | None = None
    ) -> None:
        """Record this server's address (None: withdraw it) in the lock of every bank
        served, now and opened later, so `engram` commands elsewhere come here (an
        https server's certificate with it, which they trust)."""
        with self._guard:
            self._address = (url, token_file, certificate) if url else None
            banks = list(self._banks.values())
        for bank in banks:
            self._advertise(bank)

    def _advertise(self, bank: Bank, *, withdraw: bool = False) -> None:
        if bank.closed:
            return
        url, token_file, certificate = (
            self._address if self._address and not withdraw else (None, None, None)
        )
        # RuntimeError/OSError: closed meanwhile, and its lock record went with it.
        with contextlib.suppress(OSError, RuntimeError):
            bank.advertise(url, token_file, certificate)

    # -- lookups -----------------------------------------------------------------------

    def key_of(self, ref: str) -> str:
        """The id of the bank `ref` names (its id, its name, or a name it had within
        the grace of a rename) among those this process serves, or may open.

        `ref` is only ever compared with the ids and names in the banks' labels,
        never joined to a path. Raises BankNotFoundError (naming the new name of
        a bank renamed longer ago than the grace)."""
        with self._guard:
            served = {k: b for k, b in self._banks.items() if not b.closed}
        if ref in served:
            return ref
        for key, bank in served.items():
            if bank.name == ref:
                return key
        try:
            found = self.engine.find(ref)
        except BankRenamedError:
            raise
        except BankNotFoundError:
            if self.open_on_demand:
                # The engine's message names the data folder: a client sees the name only.
                raise BankNotFoundError(f"no bank named {ref!r}") from None
            raise BankNotFoundError(f"no bank named {ref!r} is served here") from None
        if not self.open_on_demand and found.id not in served:
            raise BankNotFoundError(f"no bank named {ref!r} is served here")
        return found.id

    def get(self, ref: str) -> Bank:
        """The served bank `ref` names (see `key_of`); opened on demand under
        `engram serve`. Raises BankNotFoundError."""
        key = self.key_of(ref)
        with self._guard:
            bank = self._banks.get(key)
            if bank is not None and not bank.closed:
                return bank
            if not self.open_on_demand:
                raise BankNotFoundError(f"no bank named {ref!r} is served here")
            bank = self.engine.open_bank(key)
            self._banks[key] = bank
            self._opened.add(key)
            self._advertise(bank)
            self._locks.setdefault(key, WriteLock())
        self._tell_opened(key)
        return bank

    def transfer_path(self, bank_id: str | None = None) -> Path:
        """An owner-only file in the data folder for a snapshot sent or received
        (of the bank `bank_id`, when one): never the shared temp folder, and a
        kill's leftover is known to the bank's purge and removed at next start."""
        from core import transfer_path

        folder = self.get(bank_id).folder.name if bank_id is not None else ""
        return transfer_path(self.engine.home, ".engram", folder)

    def open_ids(self) -> list[str]:
        """The ids of the banks served and open now."""
        with self._guard:
            return [key for key, bank in self._banks.items() if not bank.closed]

    def _tell_opened(self, bank_id: str) -> None:
        """Outside the guard: a listener may look the bank up again."""
        for listener in list(self.opened):
            listener(bank_id)

    def lock(self, bank_id: str) -> WriteLock:
        """The lock that serialises writes to the bank with this id (the studio's
        runner takes it too)."""
        with self._guard:
            return self._locks.setdefault(bank_id, WriteLock())

    def lock_of(self, ref: str) -> WriteLock | None:
        """The lock of the bank `ref` names, or None for no such bank (a request
        naming one needs no place in any queue: it is answered 404)."""
        try:
            return self.lock(self.key_of(ref))
        except EngramError:
            return None

    @contextmanager
    def using(self, ref: str) -> Iterator[Bank]:
        """The bank, under its lock: for every engine call that writes."""
        bank = self.get(ref)
        with self.lock(bank.id):
            yield bank

    def info(self, ref: str) -> BankInfo:
        """The served bank as a listing shows it; its folder is this machine's business."""
        key = self.key_of(ref)
        return next(i for i in self.infos() if i.id == key)

    def infos(self) -> list[BankInfo]:
        """Every bank a client may reach, without opening any: all of the data
        folder's under `engram serve`, the adopted ones in the studio."""
        with self._guard:
            served = {k for k, b in self._banks.items() if not b.closed}
        return [
            BankInfo(info.name, None, info.created_at, info.id)
            for info in self.engine.banks()
            if self.open_on_demand or info.id in served
        ]

    def names(self) -> list[str]:
        """The names of the banks a client may reach (see `infos`)."""
        return [info.name for info in self.infos()]

    def wake_followers(self) -> None:
        """Wake everyone following a feed (the server is stopping: their streams end)."""
        with self._guard:
            feeds = list(self._feeds.values())
        for feed in feeds:
            feed.wake()

    def feed(self, bank_id: str) -> ChangeFeed:
        """The bank's numbered changes, which clients follow."""
        with self._guard:
            return self._feeds.setdefault(bank_id, ChangeFeed())

    def _key(self, ref: str) -> str:
        """`ref`'s id, or `ref` itself when no bank has it (a bank just deleted)."""
        try:
            return self.key_of(ref)
        except BankNotFoundError:
            return ref

    def changed(self, ref: str, change: Change, *, caller_runs_jobs: bool = False) -> None:
        """Tell the owner (the studio) and the bank's followers what a request
        changed; called after the commit. Headless, the observation rebuilds it
        queued start in the background, unless the caller runs them itself (a
        routed `engram` command does, right after, and prints what they did as a
        direct run)."""
        if change.empty:
            return
        key = self._key(ref)
        self.feed(key).publish(change)
        if self.on_change is not None:
            self.on_change(key, change)
        elif self.rebuilds is not None and change.added.get(Kind.JOB) and not caller_runs_jobs:
            self.rebuilds.trigger(key)

    def published(self, bank_id: str, change: Change) -> None:
        """The owner (the studio) changed the bank itself: tell its followers."""
        if not change.empty:
            self.feed(bank_id).publish(change)

    # -- banks come and go ---------------------------------------------------------------

    def get_or_create(self, ref: str) -> Bank:
        """The served bank `ref` names, created first (`ref` its id and name) when
        there is none: a Hindsight bank comes into being on its first retain. A bank on disk
        that this process does not serve (the studio serves only what it opened)
        stays a BankNotFoundError: it is not this process's to create."""
        try:
            return self.get(ref)
        except BankNotFoundError:
            on_disk = {r for info in self.engine.banks() for r in (info.id, info.name)}
            if not self.open_on_demand and ref in on_disk:
                raise
        try:
            # The client's bank_id is the bank's id (and its first name): its handle for good.
            return self.create(ref, bank_id=ref)
        except BankExistsError:
            return self.get(ref)  # two first retains at once: the other made it

    def create(
        self,
        name: str,
        *,
        background: str = "",
        agent_name: str = "",
        bank_id: str | None = None,
    ) -> Bank:
        """Create a bank and serve it (`bank_id`: the id a client chose for it).
        Raises BankExistsError, InvalidInputError."""
        bank = self.engine.create_bank(
            name, background=background, agent_name=agent_name, bank_id=bank_id
        )
        return self.serve_new(bank)

    def serve_new(self, bank: Bank) -> Bank:
        """Serve a bank created here (a create, a snapshot import) and announce it."""
        with self._guard:
            self._banks[bank.id] = bank
            self._opened.add(bank.id)
            self._locks.setdefault(bank.id, WriteLock())
        self._advertise(bank)
        self.changed(bank.id, Change.of(added={Kind.BANK: [bank.id]}))
        return bank

    def rename(self, ref: str, new_name: str) -> Change:
        """Rename a bank this process serves (under its lock) and announce it. Its
        id, its lock and its feed stay; its old name reaches it for the grace."""
        key = self.key_of(ref)
        with self.lock(key):
            change = self.engine.rename_bank(key, new_name)
        self.changed(key, change)
        return change

    def reembed(self, ref: str, *, progress=None, cancel=None) -> Change:
        """Re-embed a bank of the data folder that no process has open (one this
        process serves is embedded with its model already: nothing to do)."""
        key = self.engine.find(ref).id
        with self.lock(key):
            return self.engine.reembed_bank(key, progress, cancel)

    def import_snapshot(
        self,
        path,
        name: str | None = None,
        replace: bool = False,
        *,
        progress=None,
        cancel=None,
        restore_purged: bool = False,
    ) -> Bank:
        """Import a snapshot as a new bank, or in place of one this process opened
        (under its lock; it keeps its id), and serve it. A bank the studio has
        open is replaced there, not under it."""
        if not replace:
            bank = self.engine.import_snapshot(path, name, progress=progress, cancel=cancel)
            return self.serve_new(bank)
        if name is None:
            from core import read_snapshot_manifest

            name = read_snapshot_manifest(path).bank_name
        try:
            key = self.engine.find(name).id
        except BankNotFoundError:  # nothing to replace: a new bank
            key = None
        if key is None:
            bank = self.engine.import_snapshot(
                path, name, True, progress=progress, cancel=cancel, restore_purged=restore_purged
            )
            return self.serve_new(bank)
        self._refuse_adopted(key, "replace it there (Snapshots)")
        with self.lock(key):
            with self._guard:
                self._banks.pop(key, None)
                self._opened.discard(key)
            bank = self.engine.import_snapshot(
                path, name, True, progress=progress, cancel=cancel, restore_purged=restore_purged
            )
        return self.serve_new(bank)

    def _refuse_adopted(self, key: str, what: str) -> None:
        with self._guard:
            bank = self._banks.get(key)
            adopted = bank is not None and key not in self._opened
        if adopted:
            raise EngramError(
                f"bank {bank.name!r} is open in the studio: {what}, or switch the studio"
                " to another bank first"
            )

    def delete(self, ref: str) -> Change:
        """Stop serving the bank and delete it with its folder. One the studio has
        open is deleted there (its panes hold it), not from under it."""
        key = self.get(ref).id  # 404 for a bank this process does not serve
        self._refuse_adopted(key, "delete it there")
        with self.lock(key):
            with self._guard:
                bank = self._banks.pop(key, None)
                self._opened.discard(key)
            if bank is not None and not bank.closed:
                bank.close()
            change = self.engine.delete_bank(key)
        self.changed(key, change)
        return change

    def close(self) -> None:
        """Stop the background rebuilds, then close the banks opened here
        (adopted ones belong to the studio)."""
        if self.rebuilds is not None:
            self.rebuilds.close()
        with self._guard:
            opened = [(k, self._banks.pop(k)) for k in list(self._opened) if k in self._banks]
            self._opened.clear()
        for key, bank in opened:
            if not bank.closed:
                with self.lock(key):
                    bank.close()
