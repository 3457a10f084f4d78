"""Files a server passes to a client or takes from one (issue 27, item 11): a
streamed snapshot export is a full copy of a bank, an uploaded snapshot one of
another. They are written in the data folder's `transfers/`, owner-only (never
the system's shared temp folder), named with the writing process's id and the
bank's folder, so that:

- whoever starts next removes what a killed process left (`clean_leftovers`);
- a purge lists a leftover copy of its bank with the bank's known exports,
  until it is gone (`leftovers`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from core.store.private import private_folder

TRANSFERS = "transfers"


def transfer_path(home: Path, suffix: str, bank_folder: str = "") -> Path:
    """A new empty owner-only file for one transfer (the caller removes it)."""
    folder = Path(home) / TRANSFERS
    private_folder(folder)
    fd, name = tempfile.mkstemp(prefix=f"{os.getpid()}-{bank_folder}-", suffix=suffix, dir=folder)
    os.close(fd)  # mkstemp makes it 0600
    return Path(name)


def leftovers(home: Path, bank_folder: str) -> list[Path]:
    """The transfer files holding a copy of the bank in `bank_folder`."""
    folder = Path(home) / TRANSFERS
    with contextlib.suppress(OSError):
        return sorted(p for p in folder.iterdir() if _bank_of(p.name) == bank_folder)
    return []


def clean_leftovers(home: Path) -> int:
    """Remove the transfer files of processes no longer alive; how many."""
    folder = Path(home) / TRANSFERS
    removed = 0
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            pid = _pid_of(path.name)
            if pid is not None and pid != os.getpid() and not _alive(pid):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
    return removed


def _pid_of(name: str) -> int | None:
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _bank_of(name: str) -> str | None:
    # "<pid>-<bank folder>-<random><suffix>": a bank folder is a slug (it may hold "-").
    parts = name.split("-")
    return "-".join(parts[1:-1]) if len(parts) >= 3 and parts[0].isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: not ours to judge
    return True
