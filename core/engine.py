"""The engine: where banks live, and the providers they share.

One bank is one folder under the data folder (`ENGRAM_HOME`, else the
platform's user data dir). The folder name is a slug of the bank's name when
it was made; `bank.json` beside the stores holds its immutable id (by default
that folder name) and its name, a label that renames change (and the names it
had, which it answers to for a while: core/home.py), so listing banks never
opens a database another process may hold. A bank is found by its id, its
name, or a former name.
"""

from __future__ import annotations

import re
import shutil
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from core.home import (
    LABEL,
    Found,
    bank_id,
    default_home,
    find_bank,
    labelled_folders,
    renamed_label,
    validate_bank_id,
    validate_bank_name,
    write_label,
)
from core.home import read_label as _read_label
from core.settings import EngineSettings
from core.types import (
    BankExistsError,
    BankInfo,
    BankNotFoundError,
    BankRenamedError,
    Change,
    EngramError,
    Kind,
)

if TYPE_CHECKING:
    from core.bank import Bank
    from core.progress import CancelToken, Progress

# The stores (DuckDB, LanceDB, Tantivy) load when a bank opens, not with the
# engine (imports inside the methods): listing banks or `engram --help` must
# not pay for them.

# Beside the banks folder (not in it: it is no bank): held while a name is taken.
NAMES_LOCK = "bank-names.lock"
NAMES_LOCK_TIMEOUT = 30.0
# The default embedding model's identity is known without loading it, so
# opening a bank to list memories does not pay for loading the model.
DEFAULT_EMBEDDING = ("sentence-transformers/all-MiniLM-L6-v2", 384)


def _slug(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return slug[:60] or "bank"


class Engine:
    def __init__(self, home: str | Path | None = None, embedder=None) -> None:
        self.home = Path(home) if home is not None else default_home()
        self.banks_dir = self.home / "banks"
        # Owner-only (core/store/private.py): no other local user reads a bank.
        from core.store.private import repair_home

        repair_home(self.home, self.banks_dir)
        # What a killed server left of a transfer: a full copy of a bank.
        from core.store.transfers import clean_leftovers

        clean_leftovers(self.home)
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._open: dict[Path, Bank] = {}
        self.settings = EngineSettings.load(self.home)
        # Finish what an import killed mid-way left (core/snapshot).
        if _import_leftovers(self.banks_dir):
            from core.snapshot.importer import cleanup_stale_imports

            cleanup_stale_imports(self.banks_dir)

    def import_snapshot(
        self,
        path: str | Path,
        name: str | None = None,
        replace: bool = False,
        *,
        progress=None,
        cancel=None,
        restore_purged: bool = False,
    ) -> Bank:
        """Import a `.engram` snapshot as a new bank (default: its exported name), or
        in place of the bank of that name with `replace=True` (atomic: the old bank
        stays until the new one is complete). Re-embeds if the model differs.
        Refuses unsafe or inconsistent files with an EngramError, changing nothing."""
        from core.snapshot.importer import import_snapshot

        folder, name = import_snapshot(
            self, path, name, replace, progress, cancel, restore_purged=restore_purged
        )
        return self._open_folder(folder, name)

    # -- providers -----------------------------------------------------------

    @property
    def embedder(self):
        with self._embedder_lock:
            if self._embedder is None:
                from core.providers.embedder import shared_embedder

                self._embedder = shared_embedder()
            return self._embedder

    def preload_embedder(self) -> None:
        """Load the embedding model in the background: a cold command that will
        embed overlaps it with opening the bank (LanceDB's import is slow)."""
        threading.Thread(target=lambda: self.embedder, name="load-embedder", daemon=True).start()

    @property
    def embedding_spec(self) -> tuple[str, int]:
        if self._embedder is None:
            return DEFAULT_EMBEDDING
        return self._embedder.name, self._embedder.dim

    def set_settings(self, settings: EngineSettings) -> None:
        settings.save(self.home)
        self.settings = settings

    def language_model(self):
        """The configured Ollama model, or None when none is chosen.

        Whether it answers is a separate question (`.available()`): callers in
        `auto` mode fall back to rules when it does not."""
        if not self.settings.ollama_model:
            return None
        from core.providers.llm import LlmSettings, open_model

        return open_model(
            LlmSettings(
                host=self.settings.ollama_host,
                model=self.settings.ollama_model,
                timeout=self.settings.ollama_timeout,
                provider=self.settings.llm_provider,
            )
        )

    def model_status(self):
        """The one connection check (core.providers.llm.ModelStatus) for the
        configured model: ready, or why not (none chosen, server down, not pulled)."""
        from core.providers.llm import ModelChoice

        with ModelChoice(None, self.language_model) as choice:
            return choice.status

    def mode(self) -> str:
        """What produces extraction and answers right now, for a person to read."""
        status = self.model_status()
        if status.ready:
            return f"Ollama: {status.model}"
        return f"offline rules ({status.reason})"

    # -- banks ---------------------------------------------------------------

    def banks(self) -> list[BankInfo]:
        infos = [
            BankInfo(label["name"], folder, label.get("created_at", ""), bank_id(folder, label))
            for folder, label in labelled_folders(self.banks_dir)
        ]
        return sorted(infos, key=lambda b: b.name.lower())

    def find(self, ref: str) -> Found:
        """The bank `ref` names (its id, its name, or a name it had within the
        grace after a rename); BankNotFoundError naming the new name past it."""
        found = find_bank(self.banks_dir, ref) if isinstance(ref, str) else None
        if found is None:
            raise BankNotFoundError(f"no bank named {ref!r} in {self.banks_dir}")
        if found.expired:
            raise BankRenamedError(found.moved_message(ref))
        return found

    def _find(self, ref: str) -> Path:
        return self.find(ref).folder

    def bank_name(self, folder: Path) -> str:
        label = _read_label(folder)
        return label["name"] if label else folder.name

    def names_lock(self) -> FileLock:
        """Held while a bank name is checked and taken (create, import, rename,
        delete): two processes creating "dup" at once get one bank and one
        BankExistsError, never "dup" and "dup-2"."""
        return FileLock(self.home / NAMES_LOCK, timeout=NAMES_LOCK_TIMEOUT, mode=0o600)

    def check_name_free(self, name: str, *, but: Path | None = None) -> None:
        """Raise BankExistsError if a bank (other than the one in `but`) has `name`
        as its name or its id (hold `names_lock` to rely on it): a reference to a
        bank by either must find one bank."""
        for info in self.banks():
            if info.folder == but:
                continue
            if info.name == name:
                raise BankExistsError(f"a bank named {name!r} already exists")
            if info.id == name:
                raise BankExistsError(
                    f"{name!r} is the id of the bank {info.name!r} (an id never changes, so"
                    " clients may still use it): choose another name"
                )

    def free_folder(self, name: str) -> Path:
        """A folder path under the banks folder, not taken, named after `name`."""
        slug = _slug(name)
        folder = self.banks_dir / slug
        n = 2
        while folder.exists():
            folder = self.banks_dir / f"{slug}-{n}"
            n += 1
        return folder

    def create_bank(
        self,
        name: str,
        *,
        background: str = "",
        agent_name: str = "",
        bank_id: str | None = None,
    ) -> Bank:
        """A new bank named `name`; its id is `bank_id` (a client's own handle for
        it, as Hindsight's API lets clients choose) or else its folder's name."""
        name = validate_bank_name(name)
        with self.reserving_names():
            self.check_name_free(name)
            if bank_id is not None:
                bank_id = validate_bank_id(bank_id)
                if bank_id != name:
                    self.check_name_free(bank_id)
            folder = self.free_folder(bank_id or name)
            if bank_id is None:
                # The folder's name is the id: it must not be another bank's name.
                while any(info.name == folder.name for info in self.banks()):
                    folder = self.free_folder(f"{folder.name}-2")
            from core.store.private import private_tree

            folder.mkdir(mode=0o700)
            # The label is written last: a folder without one is not a bank yet.
            try:
                bank = self._open_folder(folder, name)
                if background or agent_name:
                    bank.set_profile(background=background, agent_name=agent_name)
                from core.store.bank_store import utcnow

                write_label(
                    folder,
                    {
                        "name": name,
                        "created_at": utcnow().isoformat(),
                        "id": bank_id or folder.name,
                    },
                )
                private_tree(folder)  # what the stores made under the umask
            except BaseException:
                opened = self._open.pop(folder, None)
                if opened is not None:
                    opened.store.abandon()
                shutil.rmtree(folder, ignore_errors=True)
                raise
        return bank

    @contextmanager
    def reserving_names(self) -> Iterator[None]:
        try:
            with self.names_lock():
                yield
        except Timeout:
            raise EngramError(
                f"another Engram Studio process has been changing the bank list in"
                f" {self.banks_dir} for over {NAMES_LOCK_TIMEOUT:g} s; try again"
            ) from None

    def open_bank(self, ref: str) -> Bank:
        """The bank `ref` names (id, name, or a former name: see `find`)."""
        found = self.find(ref)
        return self._open_folder(found.folder, found.name)

    def _open_folder(self, folder: Path, name: str) -> Bank:
        if folder in self._open and not self._open[folder].closed:
            return self._open[folder]
        model, dim = self.embedding_spec
        from core.bank import Bank
        from core.curate.purge import finish_pending_purge
        from core.store.bank_store import BankStore
        from core.store.private import repair_bank_folder

        repair_bank_folder(folder)
        store = BankStore(folder, name, model, dim)
        bank = Bank(self, folder, store)
        try:
            # A purge killed after its commit still has old copies on disk to destroy.
            finish_pending_purge(bank.handle)
        except BaseException:
            store.abandon()  # a failed open keeps no lock, even in this process
            raise
        self._open[folder] = bank
        return bank

    def is_open(self, folder: Path) -> bool:
        """Whether this process has the bank in `folder` open."""
        return folder in self._open and not self._open[folder].closed

    def purged_names(self, folder: Path) -> list:
        """What the bank in `folder` remembers it purged (core/store/purged.py)."""
        from core.store.purged import KEY, read_records

        if self.is_open(folder):
            return self._open[folder].handle.store.meta(KEY, [])
        return read_records(folder)

    def close_folder(self, folder: Path) -> None:
        """Close the bank in `folder` if this process has it open (before it is replaced)."""
        if folder in self._open:
            self._open[folder].close()

    def _forget(self, bank: Bank) -> None:
        self._open.pop(bank.folder, None)

    def rename_bank(self, ref: str, new: str) -> Change:
        """Give a bank a new name. Its id stays, and so does its old name for a
        while (`RENAME_GRACE`): clients that use either keep reaching it."""
        new = validate_bank_name(new)
        with self.reserving_names():
            found = self.find(ref)
            folder, old = found.folder, found.name
            if new == old:
                return Change()
            self.check_name_free(new, but=folder)
            probe = None
            if folder not in self._open or self._open[folder].closed:
                # Refuse while another process holds it: its name is in that process's hands.
                from core.store.lock import BankLock

                probe = BankLock(folder, old)
                probe.acquire()
            try:
                label = _read_label(folder) or {}
                # The id is recorded before the name changes: a bank made before ids
                # were recorded keeps the one it had.
                label = {"id": bank_id(folder, label), **label}
                write_label(folder, renamed_label(label, old, new))
            finally:
                if probe is not None:
                    probe.release()
        if folder in self._open:
            self._open[folder].store.name = new
        return Change.of(updated={Kind.BANK: [found.id]})

    def reembed_bank(
        self, name: str, progress: Progress | None = None, cancel: CancelToken | None = None
    ) -> Change:
        """Give every unit of a bank recorded with another embedding model a vector from
        this engine's model (core/reembed.py); an empty Change when it uses it already."""
        from core.reembed import reembed_bank

        found = self.find(name)
        if found.folder in self._open and not self._open[found.folder].closed:
            return Change()  # this engine opened it: recorded with its model already
        return reembed_bank(self.embedder, found.folder, found.name, progress, cancel)

    def delete_bank(self, ref: str) -> Change:
        with self.reserving_names():
            found = self.find(ref)
            folder, name = found.folder, found.name
            if folder in self._open:
                self._open[folder].close()
            # Refuse while another process holds it; the lock error names the PID.
            from core.store.lock import BankLock

            lock = BankLock(folder, name)
            lock.acquire()
            try:
                # Without its label the folder is no longer listed, even if the
                # removal below is interrupted.
                (folder / LABEL).unlink()
            finally:
                lock.release()
        shutil.rmtree(folder)
        return Change.of(removed={Kind.BANK: [found.id]})

    def close(self) -> None:
        """Close every open bank, all of them even when one close fails (the
        first failure is raised after)."""
        failure: BaseException | None = None
        for bank in list(self._open.values()):
            try:
                bank.close()
            except Exception as error:  # noqa: BLE001 - re-raised below
                failure = failure or error
        if failure is not None:
            raise failure

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _import_leftovers(banks_dir: Path) -> bool:
    """Whether a killed snapshot import may have left something to clean up,
    seen without importing core.snapshot.importer (it loads DuckDB and Arrow).
    The names are its IMPORT_PREFIX, IMPORT_LOCK and REPLACED_PREFIX (a test keeps
    them equal)."""
    return any(
        folder.name.startswith((".replaced-", ".import-")) or (folder / "import.lock").exists()
        for folder in banks_dir.iterdir()
    )
