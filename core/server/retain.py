"""Hindsight retain items as Engram documents.

Items sharing a `document_id` become one document, one turn per item in the
order given; an item without one is a document of its own. `context` is the
document's title, `timestamp` the turn's time — the time of the request when
none is given, so "yesterday" in the text is read against the day it was said
("unset": no time at all) — `metadata["speaker"]` its speaker; `tags` and
`metadata` are kept on the turn and on every memory drawn from it
(core/tags.py). Each document is ingested in its own transaction, so a retain
answers only once everything it reports is committed.

Under a document id already retained, `update_mode="replace"` (the default)
puts the new content in place of the old, in one transaction (the same
content again changes nothing) and `"append"` adds the items as turns after the stored ones,
extracting only them (Bank.append_turns): the document's earlier memories,
and any curation of them, stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from core import tags as tagging
from core.bank import Bank
from core.server.errors import RetainFailed, not_supported, refuse
from core.server.guard import current_cancel
from core.server.models import MemoryItem, RetainRequest
from core.server.operations import RUNNERS
from core.timeparse import naive_utc
from core.types import Change, Document, Turn

MODES = ("auto", "llm", "rules", "verbatim")
ITEM_REFUSALS = {
    "entities": "Engram finds and resolves entities itself",
    "observation_scopes": "Engram keeps one observation per entity; a tag filter shows one "
    "only when every fact it was made from passes",
}


def _now() -> datetime:
    """The request's time: UTC, without a zone (as the stores keep times)."""
    return datetime.now(UTC).replace(tzinfo=None)


def check_request(request: RetainRequest) -> str:
    """Refuse what Engram cannot honour; the extraction mode the items ask for."""
    modes = set()
    for item in request.items:
        refuse(item.model_dump(), ITEM_REFUSALS)
        if not isinstance(item.content, str):
            raise not_supported("content", "content blocks (images); send text")
        mode = (item.strategy or "auto").strip().lower()
        if mode not in MODES:
            raise not_supported("strategy", f"{mode!r}; Engram's modes are {', '.join(MODES)}")
        modes.add(mode)
    if len(modes) > 1:
        raise not_supported("strategy", "one extraction mode per request")
    return modes.pop()


@dataclass(frozen=True)
class _Group:
    """The items of one document, and whether they extend the stored one."""

    document: Document
    append: bool
    timed: tuple[bool, ...]  # which turns were given a time (the rest: the request's)


def groups_of(request: RetainRequest, now: datetime) -> list[_Group]:
    groups: dict[str, list[MemoryItem]] = {}
    for n, item in enumerate(request.items):
        key = item.document_id if item.document_id else f"\0{n}"
        groups.setdefault(key, []).append(item)
    extra = tuple(request.document_tags or ())
    return [
        _Group(
            _document(key, items, now, extra),
            any(item.update_mode == "append" for item in items),
            tuple(isinstance(item.timestamp, datetime | str) for item in items),
        )
        for key, items in groups.items()
    ]


def documents_of(items: Sequence[MemoryItem], now: datetime | None = None) -> list[Document]:
    """The documents these items make (one per document id, or per item without one)."""
    request = RetainRequest(items=list(items))
    return [g.document for g in groups_of(request, now or _now())]


def _document(key: str, items: list[MemoryItem], now: datetime, extra_tags) -> Document:
    doc_id = "" if key.startswith("\0") else key
    turns = tuple(
        Turn(
            id=f"t{i}",
            speaker=(item.metadata or {}).get("speaker", ""),
            text=item.content,
            timestamp=_when(item.timestamp, now),
            index=i,
            tags=tagging.union([item.tags or (), extra_tags]),
            metadata=dict(item.metadata or {}),
        )
        for i, item in enumerate(items)
    )
    title = items[0].context or doc_id or _headline(items[0].content)
    return Document(id=doc_id, title=title, turns=turns, format="hindsight")


def _headline(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59] + "…"


def _when(value: datetime | str | None, now: datetime) -> datetime | None:
    if value == "unset":
        return None  # asked for: a timeless fact
    if not isinstance(value, datetime):
        return now  # not given: said now, as Hindsight takes it
    return naive_utc(value)


def retain(
    bank: Bank, request: RetainRequest, mode: str, *, now: datetime | None = None
) -> tuple[Change, dict[str, Any]]:
    """Ingest the request's items; the change and what was written. Call under the
    bank's lock. `now`: when the request was made (an item without a time was
    said then), for one run later from the queue."""
    groups = groups_of(request, now or _now())
    stored = bank.document_hashes([g.document.id for g in groups if g.document.id])
    change = Change()
    fresh: list[Document] = []
    reports = []
    unchanged: list[str] = []
    for group in groups:
        document = group.document
        previous = stored.get(document.id) if document.id else None
        if group.append and previous is not None:
            reports.append(bank.append_turns(document.id, list(document.turns), mode=mode))
            continue
        if previous is not None and _unchanged(bank, group, previous):
            unchanged.append(document.id)
            continue
        # Other content under a stored id replaces it (Hindsight's way): in the one
        # transaction that writes it (`replace`), so a crash leaves the old content
        # or the new, never neither.
        fresh.append(document)
    if fresh:
        # The request's cancel token (guard.py): a client that left, or a request
        # past its time, stops the ingest between chunks.
        reports.append(bank.ingest(fresh, mode=mode, cancel=current_cancel(), replace=True))
    results = [d for r in reports for d in r.documents]
    failed = [d.id or d.title for d in results if d.status == "failed"]
    if failed:
        # An answer of success here would lose the memory silently. Retrying is
        # safe: the documents that were written are skipped the second time.
        reasons = "; ".join(sorted({f.reason for r in reports for f in r.failures})) or "no facts"
        written = [d.id for d in results if d.status != "failed"]
        raise RetainFailed(
            f"could not extract {', '.join(failed)} ({reasons}); nothing of it was "
            f"written" + (f" (written: {', '.join(written)})" if written else "")
        )
    for report in reports:
        change |= report.change
    summary = {
        "document_ids": [d.id for d in results] + unchanged,
        "units_added": sum(sum(r.facts.values()) for r in reports),
        "mode": reports[0].mode if reports else mode,
        "documents": [{"id": d.id, "status": d.status, "facts": d.facts} for d in results]
        + [{"id": i, "status": "unchanged", "facts": 0} for i in unchanged],
    }
    return change, summary


def _unchanged(bank: Bank, group: _Group, stored_hash: str) -> bool:
    """Whether the stored document already holds exactly these items (a retry):
    the same turns, times compared only where the items gave one (the request's
    own time is new on every retry)."""
    from core import document_hash

    if document_hash(group.document) == stored_hash:
        return True
    stored = bank.turns(group.document.id)
    new = group.document.turns
    return len(stored) == len(new) and all(
        (a.speaker, a.text, a.tags, dict(a.metadata))
        == (b.speaker, b.text, b.tags, dict(b.metadata))
        and (not timed or a.timestamp == b.timestamp)
        for a, b, timed in zip(stored, new, group.timed, strict=True)
    )


def queued_payload(request: RetainRequest) -> dict[str, Any]:
    """What an `"async": true` retain keeps in the bank's queue to run later."""
    return {
        "request": request.model_dump(mode="json", by_alias=True, exclude_none=True),
        "received_at": _now().isoformat(),
    }


def run_queued(served, bank_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A queued retain, as it was asked (operations.py runs it, after a restart too)."""
    request = RetainRequest.model_validate(payload["request"])
    mode = check_request(request)
    now = datetime.fromisoformat(payload["received_at"])
    with served.using(bank_id) as bank:
        change, summary = retain(bank, request, mode, now=now)
    served.changed(bank_id, change)
    return summary


RUNNERS["retain"] = run_queued
