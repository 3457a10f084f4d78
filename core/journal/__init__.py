"""The activity journal: what was done to a bank, by whom, and how it went.

`Journal` (store.py) is one bank's `journal.duckdb`; `ActivityEntry` (entry.py)
one operation in it. What each operation records is decided above, where the
operations are known (core/activity.py).
"""

from core.journal.entry import (
    CANCELLED,
    CURATE,
    ERROR,
    KINDS,
    OK,
    OUTCOMES,
    RECALL,
    REFLECT,
    RETAIN,
    ActivityEntry,
    ActivityNotFoundError,
)
from core.journal.store import JOURNAL_DB, Journal

__all__ = [
    "CANCELLED",
    "CURATE",
    "ERROR",
    "JOURNAL_DB",
    "KINDS",
    "OK",
    "OUTCOMES",
    "RECALL",
    "REFLECT",
    "RETAIN",
    "ActivityEntry",
    "ActivityNotFoundError",
    "Journal",
]
