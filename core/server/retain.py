"""Hindsight retain items as Engram documents.

Items sharing a `document_id` become one document, one turn per item in the
order given; an item without one is a document of its own. `context` is the
document's title, `timestamp` the turn's time, `metadata["speaker"]` its
speaker. Each document is ingested in its own transaction, so a retain answers
only once everything it reports is committed. Retaining the same content under
a document id again changes nothing; other content replaces the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from core.bank import Bank
from core.server.errors import RetainFailed, not_supported, refuse
from core.server.guard import current_cancel
from core.server.models import MemoryItem, RetainRequest
from core.timeparse import naive_utc
from core.types import Change, Document, Turn

MODES = ("auto", "llm", "rules", "verbatim")
ITEM_REFUSALS = {
    "entities": "Engram finds and resolves entities itself",
    "tags": "Engram has no tags",
    "observation_scopes": "Engram keeps one observation per entity",
}


def check_request(request: RetainRequest) -> str:
    """Refuse what Engram cannot honour; the extraction mode the items ask for."""
    refuse(
        {"document_tags": request.document_tags},
        {"document_tags": "Engram has no tags"},
    )
    modes = set()
    for item in request.items:
        refuse(item.model_dump(), ITEM_REFUSALS)
        if not isinstance(item.content, str):
            raise not_supported("content", "content blocks (images); send text")
        if item.update_mode not in (None, "replace"):
            raise not_supported("update_mode", "only 'replace' (the default)")
        extra = set(item.metadata or {}) - {"speaker"}
        if extra:
            raise not_supported("metadata", f"keys {sorted(extra)}: Engram keeps only 'speaker'")
        mode = (item.strategy or "auto").strip().lower()
        if mode not in MODES:
            raise not_supported("strategy", f"{mode!r}; Engram's modes are {', '.join(MODES)}")
        modes.add(mode)
    if len(modes) > 1:
        raise not_supported("strategy", "one extraction mode per request")
    return modes.pop()


def documents_of(items: Sequence[MemoryItem]) -> list[Document]:
    groups: dict[str, list[MemoryItem]] = {}
    for n, item in enumerate(items):
        key = item.document_id if item.document_id else f"\0{n}"
        groups.setdefault(key, []).append(item)
    return [_document(key, group) for key, group in groups.items()]


def _document(key: str, items: list[MemoryItem]) -> Document:
    doc_id = "" if key.startswith("\0") else key
    turns = tuple(
        Turn(
            id=f"t{i}",
            speaker=(item.metadata or {}).get("speaker", ""),
            text=item.content,
            timestamp=_naive_utc(item.timestamp),
            index=i,
        )
        for i, item in enumerate(items)
    )
    title = items[0].context or doc_id or _headline(items[0].content)
    return Document(id=doc_id, title=title, turns=turns, format="hindsight")


def _headline(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59] + "…"


def _naive_utc(value: datetime | str | None) -> datetime | None:
    if not isinstance(value, datetime):
        return None  # None or "unset": a timeless fact
    return naive_utc(value)


def retain(bank: Bank, request: RetainRequest, mode: str) -> tuple[Change, dict[str, Any]]:
    """Ingest the request's items; the change and what was written. Call under the
    bank's lock."""
    documents = documents_of(request.items)
    stored = bank.document_hashes([d.id for d in documents if d.id])
    change = Change()
    for document in documents:
        previous = stored.get(document.id) if document.id else None
        if previous is not None and previous != _hash(document):
            # Hindsight replaces a document retained again under its id with other
            # content. Deleting first (audited, undoable) then ingesting is two
            # transactions: a crash between them loses the old content, never
            # an acknowledged new one.
            change |= bank.delete_document(document.id, actor="agent")
    # The request's cancel token (guard.py): a client that left, or a request past
    # its time, stops the ingest between chunks.
    report = bank.ingest(list(documents), mode=mode, cancel=current_cancel())
    failed = [d.id or d.title for d in report.documents if d.status == "failed"]
    if failed:
        # An answer of success here would lose the memory silently. Retrying is
        # safe: the documents that were written are skipped the second time.
        reasons = "; ".join(sorted({f.reason for f in report.failures})) or "no facts"
        written = [d.id for d in report.documents if d.status != "failed"]
        raise RetainFailed(
            f"could not extract {', '.join(failed)} ({reasons}); nothing of it was "
            f"written" + (f" (written: {', '.join(written)})" if written else "")
        )
    summary = {
        "document_ids": [d.id for d in report.documents],
        "units_added": sum(report.facts.values()),
        "mode": report.mode,
        "documents": [{"id": d.id, "status": d.status, "facts": d.facts} for d in report.documents],
    }
    return change | report.change, summary


def _hash(document: Document) -> str:
    from core import document_hash

    return document_hash(document)
