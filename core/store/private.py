"""The data folder is its owner's alone (issue 27, item 10).

Under the usual umask (022) folders come out 0755 and files 0644: any local
user could read every memory, and take a read lock on a bank's `bank.guard`
to lock its owner out. The data folder and every bank folder are made 0700
(nothing inside can be reached by another user then, whatever the stores'
own files are created with), and a bank's files 0600.

A folder left readable by an older version is repaired when it is opened, and
said once (a warning naming it): after that it is private and the next open
changes nothing.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

OTHERS = stat.S_IRWXG | stat.S_IRWXO  # what only the owner may have


def private_folder(path: Path) -> bool:
    """Create `path` (and its parents) owner-only, or make it so; whether an
    existing folder had to be repaired."""
    if not path.exists():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        _restrict(path)  # mkdir's mode passes through the umask, which may add nothing
        return False
    return _restrict(path)


def private_tree(root: Path) -> int:
    """Make every folder under `root` 0700 and every file 0600 (only bits are
    taken away); how many entries changed."""
    changed = int(_restrict(root))
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            changed += _restrict(Path(folder, name))
    return changed


def repair_bank_folder(folder: Path) -> None:
    """On open: a bank folder others can enter is repaired, whole, and said so.
    A private one costs a look at its own files (the stores may have created
    new ones under the umask: they are unreachable behind the folder, and
    made 0600 anyway)."""
    if _others_have(folder):
        changed = private_tree(folder)
        log.warning(
            "engram: the bank folder %s was readable by other users; made it and its"
            " %d file(s) and folder(s) owner-only",
            folder,
            changed - 1,
        )
        return
    _restrict_files(folder)


def _restrict_files(folder: Path) -> None:
    """The files directly in `folder` (not its subfolders)."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                _restrict(Path(entry.path))


def repair_home(home: Path, banks_dir: Path) -> None:
    """The data folder and its banks folder, created or repaired owner-only (with
    the data folder's own files: settings, token, locks)."""
    repaired = [p for p in (home, banks_dir) if private_folder(p)]
    if repaired:
        _restrict_files(home)
        log.warning(
            "engram: the data folder %s was readable by other users; made it owner-only", home
        )


def _others_have(path: Path) -> bool:
    return bool(path.lstat().st_mode & OTHERS)


def _restrict(path: Path) -> bool:
    """Take the group's and others' bits off `path`; whether it had any."""
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode) or not mode & OTHERS:
            return False
        os.chmod(path, stat.S_IMODE(mode) & ~OTHERS)
        return True
    except OSError:
        return False  # gone meanwhile, or not ours: the folder above still guards it
