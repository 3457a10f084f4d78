"""The activity journal over HTTP: pages of entries, one entry with its detail, a
recall replayed against the bank as it is now, and a live stream.

The stream is server-sent events (`text/event-stream`): one `activity` event
per entry recorded (its id is the event id), a comment every few seconds to
keep proxies from closing it. A client that reconnects with `Last-Event-ID`
(or `?after=ID`) gets what it missed from the journal first. A client too slow
to keep up gets an `overflow` event and the stream ends: it reconnects with
`Last-Event-ID` and reads the gap from the journal, so no client holds another
back and no memory grows without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from core import ACTIVITY_KINDS as KINDS
from core.server.routes_hindsight import Served

router = APIRouter(prefix="/engram/v1", tags=["Activity"])
ACTIVITY = "/banks/{bank_id}/activity"
Kind = Literal[KINDS]
QUEUE = 1000  # entries a stream holds for a slow client before it is told to reconnect
TICK = 1.0  # seconds between checks that the server or the bank is not going away
KEEP_ALIVE = 15.0  # seconds between comments on an idle stream


def entry_json(entry) -> dict[str, Any]:
    return entry.to_dict()


@router.get(ACTIVITY)
def activity(
    bank_id: str,
    served: Served,
    actor: str | None = None,
    kind: Kind | None = None,
    operation: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    before: Annotated[int | None, Query(ge=1, description="ids below this: the next page")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """What was done to the bank, newest first: who, how (transport), what, how it
    went, how long it took, the change it made. Page with `before` = the
    `next_before` of the page you have."""
    entries = served.get(bank_id).activity(
        actor=actor,
        kind=kind,
        operation=operation,
        since=since,
        until=until,
        before=before,
        limit=limit,
    )
    more = len(entries) == limit and entries[-1].id > 1
    return {
        "entries": [entry_json(e) for e in entries],
        "next_before": entries[-1].id if more else None,
    }


@router.get(ACTIVITY + "/actors")
def activity_actors(bank_id: str, served: Served) -> dict[str, Any]:
    """Every actor the journal names, most recent first."""
    return {"actors": served.get(bank_id).activity_actors()}


@router.get(ACTIVITY + "/stream", response_class=StreamingResponse)
async def activity_stream(
    bank_id: str,
    request: Request,
    served: Served,
    actor: str | None = None,
    kind: Kind | None = None,
    after: Annotated[int | None, Query(ge=0)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Entries as they are recorded, as server-sent events (`event: activity`,
    `id:` the entry's id, `data:` the entry's JSON)."""
    bank = await run_in_threadpool(served.get, bank_id)
    if last_event_id and last_event_id.strip().isdigit():
        after = int(last_event_id.strip())
    stopping = request.app.state.stopping
    return StreamingResponse(
        _events(bank, actor, kind, after, stopping),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _events(bank, actor, kind, after, stopping) -> AsyncIterator[str]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    overflowed = False

    def put(entry) -> None:
        nonlocal overflowed
        if queue.qsize() >= QUEUE:
            overflowed = True
        else:
            queue.put_nowait(entry)

    def heard(entry) -> None:  # on the recording thread
        if (actor is None or entry.actor == actor) and (kind is None or entry.kind == kind):
            with contextlib.suppress(RuntimeError):  # the loop is gone: the stream ended
                loop.call_soon_threadsafe(put, entry)

    unsubscribe = bank.watch_activity(heard)
    sent = after or 0
    try:
        yield ": engram activity\n\n"
        if after is not None:
            missed = await run_in_threadpool(_since, bank, actor, kind, after)
            for entry in missed:
                sent = entry.id
                yield _event(entry)
        idle = 0.0
        while not stopping.is_set() and not bank.closed:
            try:
                entry = await asyncio.wait_for(queue.get(), timeout=TICK)
            except TimeoutError:
                idle += TICK
                if idle >= KEEP_ALIVE:
                    idle = 0.0
                    yield ": keep-alive\n\n"
                continue
            idle = 0.0
            if entry.id <= sent:
                continue  # read from the journal already
            sent = entry.id
            yield _event(entry)
            if overflowed and queue.empty():
                yield f"event: overflow\ndata: {json.dumps({'last_id': sent})}\n\n"
                return
    finally:
        unsubscribe()


def _since(bank, actor, kind, after: int) -> list:
    """Entries after `after`, oldest first (at most a page: more is a reconnect)."""
    entries = bank.activity(actor=actor, kind=kind, limit=1000)
    return [e for e in reversed(entries) if e.id > after]


def _event(entry) -> str:
    data = json.dumps(entry_json(entry), ensure_ascii=False)
    return f"id: {entry.id}\nevent: activity\ndata: {data}\n\n"


@router.get(ACTIVITY + "/{entry_id}")
def activity_entry(bank_id: str, entry_id: int, served: Served) -> dict[str, Any]:
    """One entry with its detail: for a recall, the whole result its caller got
    (items, token count, the full trace)."""
    return {"entry": entry_json(served.get(bank_id).activity_entry(entry_id))}


@router.post(ACTIVITY + "/{entry_id}/replay")
def replay(bank_id: str, entry_id: int, served: Served) -> dict[str, Any]:
    """Run a journaled recall again with its arguments against the bank as it is
    now: the facts gained, lost and moved, the tokens then and now, and the new
    result (with its trace)."""
    replayed = served.get(bank_id).replay_recall(entry_id)
    return {
        "entry_id": replayed.entry_id,
        "summary": replayed.summary(),
        "gained": [i.to_dict() for i in replayed.gained],
        "lost": [i.to_dict() for i in replayed.lost],
        "moved": [
            {"unit_id": m.unit_id, "text": m.text, "was": m.was, "now": m.now}
            for m in replayed.moved
        ],
        "tokens_before": replayed.tokens_before,
        "tokens_after": replayed.tokens_after,
        "replayed": replayed.replayed.to_dict(),
    }
