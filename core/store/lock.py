"""One process owns a bank: a lock file that names the owner.

An OS-level `flock` on the file is what actually excludes a second process
(it vanishes with the process, so a SIGKILLed owner never blocks anyone); the
PID written inside lets the refusal name who holds the bank.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from pathlib import Path

from core.types import BankLockedError

LOCK_NAME = "bank.lock"


class BankLock:
    def __init__(self, folder: Path, bank_name: str) -> None:
        self.path = folder / LOCK_NAME
        self._bank_name = bank_name
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = self._read_owner(fd)
            os.close(fd)
            raise BankLockedError(
                self._bank_name, owner.get("pid", -1), owner.get("host", "")
            ) from None
        # Whatever was in the file belonged to a dead owner: we hold the flock now.
        owner = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, owner, 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    @staticmethod
    def _read_owner(fd: int) -> dict:
        try:
            return json.loads(os.pread(fd, 4096, 0) or b"{}")
        except (ValueError, OSError):
            return {}
