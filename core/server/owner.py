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

from core.home import labelled_folders
from core.server.token import ENV as TOKEN_ENV
from core.store.lock import live_owner


@dataclass(frozen=True)
class Owner:
    bank: str
    pid: int
    url: str
    token_file: str | None

    def token(self) -> str:
        """The token the owner expects: ENGRAM_API_TOKEN if set (as the server
        reads it), else the token file the owner named."""
        env = os.environ.get(TOKEN_ENV, "").strip()
        if env:
            return env
        if not self.token_file:
            raise PermissionError(f"the owner of bank {self.bank!r} named no token file")
        return Path(self.token_file).read_text("utf-8").strip()


def bank_folder(home: Path, bank: str) -> Path | None:
    for folder, label in labelled_folders(home / "banks"):
        if label.get("name") == bank:
            return folder
    return None


def find_owner(home: Path, bank: str) -> Owner | None:
    """The live process that owns `bank` and serves it on this machine, or None
    (nobody holds it, or its owner does not serve it: open it directly)."""
    folder = bank_folder(home, bank)
    if folder is None:
        return None
    record = live_owner(folder)
    if record is None or record.get("host") not in (None, socket.gethostname()):
        return None
    return Owner(bank, int(record.get("pid", -1)), record["url"], record.get("token_file"))
