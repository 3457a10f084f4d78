"""One process owns a bank: a lock that names the owner and how to reach it.

Two files in the bank folder:
- `bank.guard` is the lock itself, held with `filelock` (flock on Unix,
  `msvcrt` on Windows, a marker with stale-owner detection where neither
  exists). The OS lock vanishes with the process, so a SIGKILLed owner never
  blocks anyone.
- `bank.lock` is the owner's record, JSON: pid and host, and once the owner
  serves the bank over HTTP, the `url` and the `token_file` a client needs.
  It is separate from the guard because a contender must be able to read it
  (Windows forbids reading a locked range; filelock's marker owns its file).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from filelock import FileLock, Timeout

from core.types import BankLockedError

LOCK_NAME = "bank.lock"
GUARD_NAME = "bank.guard"


def exclusive_lock(path: Path) -> FileLock:
    """A non-blocking, process-wide (not per-thread) lock on `path`: a bank may
    be opened on one thread and closed on another."""
    return FileLock(path, timeout=0, mode=0o600, thread_local=False)  # owner-only


class BankLock:
    def __init__(self, folder: Path, bank_name: str) -> None:
        self.folder = folder
        self.path = folder / LOCK_NAME
        self._bank_name = bank_name
        self._guard: FileLock | None = None

    def acquire(self) -> None:
        guard = exclusive_lock(self.folder / GUARD_NAME)
        try:
            guard.acquire()
        except Timeout:
            owner = read_record(self.folder)
            raise BankLockedError(
                self._bank_name, owner.get("pid", -1), owner.get("host", ""), owner=owner
            ) from None
        self._guard = guard
        # Whatever record was there belonged to a dead owner: we hold the guard now.
        self._write({"pid": os.getpid(), "host": socket.gethostname()})

    def advertise(
        self,
        url: str | None,
        token_file: str | Path | None = None,
        certificate: str | Path | None = None,
    ) -> None:
        """Record that this process serves the bank at `url` (None: no longer serves
        it); over https, with the server's certificate file."""
        if self._guard is None:
            raise RuntimeError("only the owner of a bank can advertise it")
        record = {"pid": os.getpid(), "host": socket.gethostname()}
        if url:
            record.update(url=url, token_file=str(token_file) if token_file else None)
            if certificate:
                record["certificate"] = str(certificate)
        self._write(record)

    def release(self) -> None:
        if self._guard is None:
            return
        self.path.unlink(missing_ok=True)
        self._guard.release()
        self._guard = None

    @property
    def held(self) -> bool:
        return self._guard is not None

    def _write(self, record: dict) -> None:
        # Written aside and renamed, so a contender never reads half a record.
        tmp = self.folder / (LOCK_NAME + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as out:
            json.dump(record, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)


def read_record(folder: Path) -> dict:
    """The owner record as written (possibly a dead owner's); {} if none."""
    try:
        record = json.loads((folder / LOCK_NAME).read_text("utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def is_free(folder: Path) -> bool:
    """True if no live process holds the bank in `folder` (a missing folder is free).

    It briefly takes the guard to find out, so call it only when a live owner is
    likely (a record that names one) or nobody else should be opening the bank."""
    if not folder.is_dir():
        return True
    guard = exclusive_lock(folder / GUARD_NAME)
    try:
        guard.acquire()
    except Timeout:
        return False
    except OSError:
        return True
    guard.release()
    return True


def live_owner(folder: Path) -> dict | None:
    """The record of the live process that owns the bank in `folder`, or None.

    Cheap when nobody serves the bank: without a URL in the record there is
    nothing to route to, and the guard is not touched."""
    record = read_record(folder)
    if not record.get("url") or is_free(folder):
        return None
    return record
