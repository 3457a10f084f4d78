"""Which process owns a bank, and how to reach it.

The owner writes its address into the bank's lock record
(`BankLock.advertise`); a CLI command aimed at that bank reads it here and
goes through the owner instead of failing with "open in another process".
Import-light: deciding where a command goes must not load DuckDB.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from core.home import find_bank
from core.server.token import ENV as TOKEN_ENV
from core.store.lock import live_owner


@dataclass(frozen=True)
class Owner:
    bank: str  # the bank's id
    pid: int
    url: str
    token_file: str | None
    name: str = ""  # its name now
    certificate: str | None = None  # an https owner's certificate file (trusted as is)

    def token(self) -> str:
        """The token the owner expects: ENGRAM_API_TOKEN if set (as the server
        reads it), else the token file the owner named."""
        env = os.environ.get(TOKEN_ENV, "").strip()
        if env:
            return env
        if not self.token_file:
            raise PermissionError(
                f"the owner of bank {self.name or self.bank!r} named no token file"
            )
        return Path(self.token_file).read_text("utf-8").strip()


def bank_folder(home: Path, bank: str) -> Path | None:
    """The folder of the bank `bank` names (its id, name, or a former name)."""
    found = find_bank(home / "banks", bank)
    return found.folder if found is not None else None


def find_owner(home: Path, bank: str) -> Owner | None:
    """The live process that owns the bank `bank` names (id, name, or a name it had
    within the grace of a rename) and serves it on this machine, or None (nobody
    holds it, or its owner does not serve it: open it directly)."""
    found = find_bank(home / "banks", bank)
    if found is None or found.expired:
        return None
    record = live_owner(found.folder)
    if record is None or record.get("host") not in (None, socket.gethostname()):
        return None
    return Owner(
        found.id,
        int(record.get("pid", -1)),
        record["url"],
        record.get("token_file"),
        found.name,
        record.get("certificate"),
    )
