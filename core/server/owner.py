"""Which process owns a bank, and how to reach it.

The owner writes its address into the bank's lock record
(`BankLock.advertise`); a CLI command aimed at that bank reads it here and
goes through the owner instead of failing with "open in another process".
Import-light: deciding where a command goes must not load DuckDB.

The record is a file in the data folder, and what it says is not trusted with
the token: a client goes only to a loopback address (or to the remote its user
configured: `ENGRAM_REMOTE`), and reads the token only from ENGRAM_API_TOKEN or
the data folder's own token file, never from a path the record names.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from core.home import find_bank
from core.server.token import ENV as TOKEN_ENV
from core.server.token import token_file as home_token_file
from core.store.lock import live_owner
from core.types import EngramError

REMOTE_ENV = "ENGRAM_REMOTE"  # the one remote server its user chose (iface's --remote)


@dataclass(frozen=True)
class Owner:
    bank: str  # the bank's id
    pid: int
    url: str
    token_file: str | None  # None: the owner takes its token from ENGRAM_API_TOKEN
    name: str = ""  # its name now
    certificate: str | None = None  # an https owner's certificate file (trusted as is)
    home: Path | None = None  # the data folder: where its token file is

    def token(self) -> str:
        """The token the owner expects: ENGRAM_API_TOKEN if set (as the server
        reads it), else the data folder's token file. Raises EngramError saying
        what to do when neither can be had."""
        env = os.environ.get(TOKEN_ENV, "").strip()
        if env:
            return env
        who = f"bank {self.name or self.bank!r} is open in another process (PID {self.pid})"
        if not self.token_file or self.home is None:
            raise EngramError(
                f"{who}, which serves it at {self.url} with the token it was given in"
                f" {TOKEN_ENV}: set {TOKEN_ENV} to the same value in this terminal (or"
                " stop that process, and this command opens the bank itself)"
            )
        path = home_token_file(self.home)
        try:
            token = path.read_text("utf-8").strip()
        except OSError as error:
            raise EngramError(
                f"{who}; its token is in {path}, which cannot be read here"
                f" ({error.strerror or error}): run this as the user who owns the data"
                f" folder, or set {TOKEN_ENV} to the server's token"
            ) from None
        if not token:
            raise EngramError(f"{who}; its token file {path} is empty")
        return token


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
    url = str(record["url"])
    if not reachable_with_token(url):
        raise EngramError(
            f"bank {found.name!r} is open in another process (PID {record.get('pid', '?')}),"
            f" whose lock names {url!r}, not an address on this machine: the token is sent"
            f" only to loopback, or to the remote you chose ({REMOTE_ENV})"
        )
    return Owner(
        found.id,
        int(record.get("pid", -1)),
        url,
        record.get("token_file"),
        found.name,
        record.get("certificate"),
        home=Path(home),
    )


def reachable_with_token(url: str) -> bool:
    """Whether a client may send its bearer token to `url`: a loopback http(s)
    address, or exactly the remote its user configured."""
    remote = os.environ.get(REMOTE_ENV, "").strip().rstrip("/")
    if remote and url.rstrip("/") == remote:
        return True
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return False
    if parts.scheme not in ("http", "https"):
        return False
    return is_loopback(host)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
