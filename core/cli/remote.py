"""The CLI's engine when banks may be owned by another process: each bank is
reached where it lives.

`engram` commands call `engine.open_bank(name)` and then `Bank` methods.
`RoutingEngine` wraps the data folder's `Engine` and, for a bank another
live process owns and serves (its lock names the address: core/server/owner.py),
hands out a `RemoteBank` instead (core/server/client.py): the same interface,
each call run by the owner and answered in the same value types, so the
handlers' printing code is the same for both. Banks nobody serves open here
as always; the engine's other operations on a served bank (rename, delete,
replace by import, re-embed) go to its owner too. Import-light: no DuckDB
and no model until a bank is opened here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.server.client import OwnerClient, OwnersModel, RemoteBank
from core.server.owner import Owner, find_owner


class RoutingEngine:
    """An `Engine` whose banks are reached where they live. `primary` is the
    command's own bank: when its owner serves it, the language model a command
    asks for is the owner's (a routed command never talks to Ollama itself)."""

    def __init__(self, home: Path, primary: str | None = None, *, engine=None) -> None:
        self.home = Path(home)
        self._engine = engine
        self._clients: dict[str, OwnerClient] = {}
        self._primary_owner = self.owner_of(primary) if primary else None

    # -- where a bank lives -----------------------------------------------------------

    @property
    def local(self):
        """The data folder's own Engine (made on first use)."""
        if self._engine is None:
            from core import Engine

            self._engine = Engine(self.home)
        return self._engine

    def owner_of(self, name: str) -> Owner | None:
        return find_owner(self.home, name) if isinstance(name, str) else None

    @property
    def routed(self) -> bool:
        """Whether the command's own bank goes through its owner."""
        return self._primary_owner is not None

    def _client(self, owner: Owner) -> OwnerClient:
        if owner.url not in self._clients:
            self._clients[owner.url] = OwnerClient(
                owner.url, owner.token(), pinned=owner.certificate
            )
        return self._clients[owner.url]

    def _remote(self, owner: Owner):
        from core.server.client import RemoteEngine

        remote = RemoteEngine.__new__(RemoteEngine)
        remote.url, remote.home, remote.banks_dir = owner.url, self.home, self.local.banks_dir
        remote._client = self._client(owner)
        return remote

    # -- what goes to an owner ----------------------------------------------------------

    def open_bank(self, name: str):
        owner = self.owner_of(name)
        if owner is None:
            return self.local.open_bank(name)
        return RemoteBank(self._client(owner), owner.bank, owner.name)

    def rename_bank(self, old: str, new: str):
        owner = self.owner_of(old)
        return (
            self.local.rename_bank(old, new)
            if owner is None
            else self._remote(owner).rename_bank(old, new)
        )

    def delete_bank(self, name: str):
        owner = self.owner_of(name)
        return (
            self.local.delete_bank(name) if owner is None else self._remote(owner).delete_bank(name)
        )

    def reembed_bank(self, name: str, progress=None, cancel=None):
        owner = self.owner_of(name)
        if owner is None:
            return self.local.reembed_bank(name, progress, cancel)
        return self._remote(owner).reembed_bank(name, progress, cancel)

    def import_snapshot(
        self, path, name=None, replace=False, *, progress=None, cancel=None, restore_purged=False
    ):
        """A new bank is made here; a bank replaced in place is replaced by its
        owner, when one serves it (the archive is uploaded to it)."""
        target = name
        if replace and target is None:
            from core import read_snapshot_manifest

            target = read_snapshot_manifest(path).bank_name
        owner = self.owner_of(target) if replace and target else None
        if owner is None:
            return self.local.import_snapshot(
                path, name, replace, progress=progress, cancel=cancel, restore_purged=restore_purged
            )
        return self._remote(owner).import_snapshot(
            path, name, replace, progress=progress, cancel=cancel, restore_purged=restore_purged
        )

    def language_model(self):
        return OwnersModel() if self.routed else self.local.language_model()

    def preload_embedder(self) -> None:
        if not self.routed:  # routed, the owner's model is already warm
            self.local.preload_embedder()

    # -- the rest is the local engine's ---------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.local, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "settings":  # `--ollama-timeout` for this run
            setattr(self.local, name, value)
        else:
            object.__setattr__(self, name, value)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._engine is not None:
            self._engine.close()
