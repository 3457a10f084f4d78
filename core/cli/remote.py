"""Stand-ins for `Engine` and `Bank` when another process owns the bank and serves it.

The CLI's handlers call `engine.open_bank(name)` and then `Bank` methods;
given a `RemoteEngine`, each of those methods runs in the owner over HTTP
(core/server/client.py) and returns the same value types, so the handlers'
printing code is the same for both paths. Import-light: no DuckDB, no model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from core import EngramError
from core.server.client import READ_METHODS, WRITE_METHODS, OwnerClient
from core.server.owner import Owner


class RemoteBank:
    """A bank another process owns: every call goes through that owner."""

    def __init__(self, client: OwnerClient, owner: Owner) -> None:
        self._client = client
        self._owner = owner
        self.name = owner.bank

    def ingest(self, source, format="auto", mode="auto", *, force=False, progress=None, llm=None):
        """The file is read and parsed here, as a direct ingest would, and its
        conversations are sent: the owner need not see this process's paths."""
        if isinstance(source, str | Path):
            from core import load_documents

            source = load_documents(source, format)
        return self._client.call(
            self.name, "ingest", list(source), format, mode, force=force, llm=_llm(llm)
        )

    def process_jobs(self, *, llm=None, progress=None, **kwargs):
        return self._client.call(self.name, "process_jobs", llm=_llm(llm), **kwargs)

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        if method not in READ_METHODS | WRITE_METHODS:
            raise EngramError(
                f"bank {self.name!r} is open in another process (PID {self._owner.pid}), "
                f"which serves it at {self._owner.url}, and this command cannot go through "
                "it: close the bank there first"
            )

        def call(*args: Any, progress=None, **kwargs: Any):
            given = {k: v for k, v in kwargs.items() if not _unset(v)}
            return self._client.call(self.name, method, *args, **given)

        return call


def _unset(value: Any) -> bool:
    """The engine's "not given" marker: left out, so the owner's method sees its
    default. Looked up where it is defined, without importing anything."""
    return any(
        value is getattr(sys.modules.get(module), "UNSET", object())
        for module in ("core.types", "core.bank")
    )


class OwnersModel:
    """The language model the owner has configured, whichever it is: the owner
    builds it (a routed command never talks to Ollama itself)."""

    def close(self) -> None:
        pass


def _llm(lm) -> dict | None:
    """A language model crosses the wire as its settings; the owner builds its own."""
    if lm is None:
        return None
    if isinstance(lm, OwnersModel):
        return {"owners": True}
    return {"host": lm.host, "model": lm.name}


class RemoteEngine:
    """What a routed command needs of `Engine`: its bank, through the owner."""

    def __init__(self, home: Path, owner: Owner) -> None:
        self.home = home
        self.owner = owner
        self._client = OwnerClient(owner.url, owner.token())

    @property
    def settings(self):
        from core import EngineSettings

        return EngineSettings.load(self.home)

    def language_model(self) -> OwnersModel:
        return OwnersModel()

    def preload_embedder(self) -> None:
        """Nothing to load here: the owner's model is already warm."""

    def open_bank(self, name: str) -> RemoteBank:
        if name != self.owner.bank:
            raise EngramError(f"this command was routed to the owner of {self.owner.bank!r}")
        return RemoteBank(self._client, self.owner)

    def close(self) -> None:
        self._client.close()
