"""Telling a person what a failed write did and did not do.

A full or failing disk reaches us as an `OSError` (our own files, LanceDB,
Tantivy) or as a DuckDB error whose text carries the OS message. Either way
the message must say plainly which part was saved: DuckDB commits are
all-or-nothing, and whatever was committed but not yet indexed is replayed by
the next open (`BankStore.recover`).
"""

from __future__ import annotations

import errno

import duckdb

from core.types import StorageError

_DISK_WORDS = ("no space left", "disk is full", "disk full", "quota exceeded", "read-only file")
NEXT_OPEN = "the next open of the bank finishes what was committed"


def is_storage_failure(error: BaseException) -> bool:
    """An error from the disk (not from bad input or a bug)."""
    if isinstance(error, OSError):
        return True
    if isinstance(error, duckdb.Error):
        text = str(error).lower()
        return isinstance(error, duckdb.IOException | duckdb.FatalException) or any(
            w in text for w in _DISK_WORDS
        )
    text = str(error).lower()
    return any(w in text for w in _DISK_WORDS)


def cause(error: BaseException) -> str:
    """The disk's complaint in a few words."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if any(w in text.lower() for w in ("no space left", "disk is full", "disk full")):
        return f"the disk is full ({text})"
    return text


def stopped_by_disk(error: BaseException) -> StorageError | None:
    """What to tell a person when a disk failure stopped a command that did not
    wrap it itself (None when `error` is not a disk failure): DuckDB commits all
    or nothing, so what the command reported as done is saved."""
    if not is_storage_failure(error):
        return None
    return storage_error(
        error,
        f"the command stopped; what it reported as done is saved, the rest was not; {NEXT_OPEN}",
    )


def storage_error(error: BaseException, done: str) -> StorageError:
    """A StorageError for `error`; `done` says what was and was not saved."""
    return StorageError(f"{cause(error)}: {done}")
