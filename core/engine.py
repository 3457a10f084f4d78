"""The engine: where banks live, and the providers they share.

One bank is one folder under the data folder (`ENGRAM_HOME`, else the
platform's user data dir). The folder name is a slug of the bank's name; the
name itself is kept in `bank.json` beside the stores, so listing banks never
opens a database another process may hold.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from core.settings import EngineSettings
from core.types import BankExistsError, BankNotFoundError, Change, InvalidInputError, Kind

if TYPE_CHECKING:
    from core.bank import Bank

# The stores (DuckDB, LanceDB, Tantivy) load when a bank opens, not with the
# engine: listing banks or `engram --help` must not pay for them.

LABEL = "bank.json"
MAX_NAME = 100
# The default embedding model's identity is known without loading it, so
# opening a bank to list memories does not pay for loading the model.
DEFAULT_EMBEDDING = ("sentence-transformers/all-MiniLM-L6-v2", 384)


@dataclass(frozen=True)
class BankInfo:
    name: str
    folder: Path
    created_at: str


def default_home() -> Path:
    env = os.environ.get("ENGRAM_HOME")
    return Path(env) if env else Path(platformdirs.user_data_dir("engram-studio", "engram"))


def _slug(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return slug[:60] or "bank"


def validate_bank_name(name: str) -> str:
    if not isinstance(name, str):
        raise InvalidInputError("a bank name must be text")
    name = name.strip()
    if not name:
        raise InvalidInputError("a bank name cannot be empty")
    if len(name) > MAX_NAME:
        raise InvalidInputError(f"a bank name is at most {MAX_NAME} characters")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise InvalidInputError("a bank name cannot contain control characters")
    return name


class Engine:
    def __init__(self, home: str | Path | None = None, embedder=None) -> None:
        self.home = Path(home) if home is not None else default_home()
        self.banks_dir = self.home / "banks"
        self.banks_dir.mkdir(parents=True, exist_ok=True)
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
    ) -> Bank:
        """Import a `.engram` snapshot as a new bank (default: its exported name), or
        in place of the bank of that name with `replace=True` (atomic: the old bank
        stays until the new one is complete). Re-embeds if the model differs.
        Refuses unsafe or inconsistent files with an EngramError, changing nothing."""
        from core.snapshot.importer import import_snapshot

        return import_snapshot(self, path, name, replace, progress, cancel)

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
        from core.providers.llm import LanguageModel, LlmSettings

        return LanguageModel(
            LlmSettings(
                host=self.settings.ollama_host,
                model=self.settings.ollama_model,
                timeout=self.settings.ollama_timeout,
            )
        )

    def mode(self) -> str:
        """What produces extraction and answers right now, for a person to read."""
        lm = self.language_model()
        if lm is None:
            return "offline rules (no language model chosen)"
        if lm.available():
            return f"Ollama: {lm.name}"
        return f"offline rules ({lm.name} not reachable at {lm.host})"

    # -- banks ---------------------------------------------------------------

    def banks(self) -> list[BankInfo]:
        infos = []
        for folder in sorted(self.banks_dir.iterdir()):
            label = _read_label(folder)
            if label is not None:
                infos.append(BankInfo(label["name"], folder, label.get("created_at", "")))
        return sorted(infos, key=lambda b: b.name.lower())

    def _find(self, name: str) -> Path:
        for info in self.banks():
            if info.name == name:
                return info.folder
        raise BankNotFoundError(f"no bank named {name!r} in {self.banks_dir}")

    def bank_name(self, folder: Path) -> str:
        label = _read_label(folder)
        return label["name"] if label else folder.name

    def create_bank(self, name: str, *, background: str = "", agent_name: str = "") -> Bank:
        name = validate_bank_name(name)
        if any(info.name == name for info in self.banks()):
            raise BankExistsError(f"a bank named {name!r} already exists")
        slug = _slug(name)
        folder = self.banks_dir / slug
        n = 2
        while folder.exists():
            folder = self.banks_dir / f"{slug}-{n}"
            n += 1
        folder.mkdir()
        # The label is written last: a folder without one is not a bank yet.
        bank = self._open_folder(folder, name)
        if background or agent_name:
            bank.set_profile(background=background, agent_name=agent_name)
        from core.store.bank_store import utcnow

        _write_label(folder, {"name": name, "created_at": utcnow().isoformat()})
        return bank

    def open_bank(self, name: str) -> Bank:
        folder = self._find(name)
        return self._open_folder(folder, name)

    def _open_folder(self, folder: Path, name: str) -> Bank:
        if folder in self._open and not self._open[folder].closed:
            return self._open[folder]
        from core.bank import Bank
        from core.curate.purge import finish_pending_purge
        from core.store.bank_store import BankStore

        model, dim = self.embedding_spec
        store = BankStore(folder, name, model, dim)
        bank = Bank(self, folder, store)
        # A purge killed after its commit still has old copies on disk to destroy.
        finish_pending_purge(bank)
        self._open[folder] = bank
        return bank

    def _forget(self, bank: Bank) -> None:
        self._open.pop(bank.folder, None)

    def rename_bank(self, old: str, new: str) -> Change:
        new = validate_bank_name(new)
        folder = self._find(old)
        if new != old and any(info.name == new for info in self.banks()):
            raise BankExistsError(f"a bank named {new!r} already exists")
        label = _read_label(folder) or {}
        _write_label(folder, {**label, "name": new})
        if folder in self._open:
            self._open[folder].store.name = new
        return Change.of(updated={Kind.BANK: [new]}, removed={Kind.BANK: [old]})

    def delete_bank(self, name: str) -> Change:
        folder = self._find(name)
        if folder in self._open:
            self._open[folder].close()
        from core.store.lock import BankLock

        # Refuse while another process holds it; the lock error names the PID.
        lock = BankLock(folder, name)
        lock.acquire()
        try:
            # Without its label the folder is no longer listed, even if the
            # removal below is interrupted.
            (folder / LABEL).unlink()
        finally:
            lock.release()
        shutil.rmtree(folder)
        return Change.of(removed={Kind.BANK: [name]})

    def close(self) -> None:
        for bank in list(self._open.values()):
            bank.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _import_leftovers(banks_dir: Path) -> bool:
    """Whether a killed snapshot import may have left something to clean up,
    seen without importing core.snapshot.importer (it loads DuckDB and Arrow).
    The names are its IMPORT_LOCK and REPLACED_PREFIX (a test keeps them equal)."""
    return any(
        folder.name.startswith(".replaced-") or (folder / "import.lock").exists()
        for folder in banks_dir.iterdir()
    )


def _read_label(folder: Path) -> dict | None:
    try:
        return json.loads((folder / LABEL).read_text("utf-8"))
    except (OSError, ValueError):
        return None


def _write_label(folder: Path, label: dict) -> None:
    tmp = folder / (LABEL + ".tmp")
    tmp.write_text(json.dumps(label), "utf-8")
    os.replace(tmp, folder / LABEL)
