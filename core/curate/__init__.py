"""Curation: edit and delete units; rename, merge, split, retract, restore and
purge entities; the audit log with undo and redo.

Every action is one DuckDB transaction that also records its audit entry and
row delta (`core.curate.rows`) and queues observation refresh; the indexes
follow for the units it touched. Bank methods delegate here.
"""

from core.curate.audit import AuditEntry
from core.curate.documents import DocumentPreview
from core.curate.retract import PreviewFact, RetractPreview

__all__ = ["AuditEntry", "DocumentPreview", "PreviewFact", "RetractPreview"]
