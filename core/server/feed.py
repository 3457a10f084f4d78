"""The changes made to each served bank, numbered, for clients to follow.

Every `Change` a served bank makes — through the API, a routed command, or
the studio that owns it — is appended to the bank's feed with the next
sequence number. A client follows it (`GET .../changes?after=N`, streamed;
`RemoteBank.changes`) and, after a dropped connection, asks again from the
last number it saw: the feed keeps the latest `KEEP` changes, and a client
that fell further behind is told to reload (`"reset"`) rather than silently
missing some (so is one whose numbers came from an earlier run of the
server: each feed has its own `epoch`). Publishing never blocks: followers wait on asyncio events,
woken from whichever thread made the change.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

from core.types import Change

KEEP = 1000


@dataclass(frozen=True)
class Entry:
    seq: int
    change: Change
    at: datetime


class ChangeFeed:
    def __init__(self, keep: int = KEEP) -> None:
        self._entries: deque[Entry] = deque(maxlen=keep)
        self._seq = 0
        self.epoch = uuid.uuid4().hex[:12]
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    @property
    def last(self) -> int:
        return self._seq

    def publish(self, change: Change) -> int:
        with self._lock:
            self._seq += 1
            self._entries.append(Entry(self._seq, change, datetime.now(UTC)))
        self.wake()
        return self._seq

    def wake(self) -> None:
        """Wake every follower (a change, or the server stopping: they look why)."""
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            # RuntimeError: that follower's loop is closed: it is gone.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)

    def since(self, after: int, epoch: str) -> tuple[list[Entry], bool]:
        """The entries after `after`; or ([], True) when the follower missed some
        (dropped from the feed, or its numbers are another epoch's): it reloads
        what it shows and follows on from `last`."""
        with self._lock:
            oldest = self._entries[0].seq if self._entries else self._seq + 1
            if epoch != self.epoch or not oldest - 1 <= after <= self._seq:
                return [], True
            return [e for e in self._entries if e.seq > after], False

    def waiter(self) -> Waiter:
        return Waiter(self)


class Waiter:
    """One follower's wake-up event, registered while it is in use."""

    def __init__(self, feed: ChangeFeed) -> None:
        self._feed = feed
        self.event = asyncio.Event()
        self._key = (asyncio.get_running_loop(), self.event)

    def __enter__(self) -> Waiter:
        with self._feed._lock:
            self._feed._waiters.add(self._key)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._feed._lock:
            self._feed._waiters.discard(self._key)

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.event.wait(), timeout)
        self.event.clear()
