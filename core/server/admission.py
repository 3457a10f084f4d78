"""Who may work on a bank, and who waits where: no client can stall the server.

Route handlers run in AnyIO's shared thread pool (40 threads). A handler that
waited there for a bank's write lock held a thread while it waited, and ~40
requests queued behind one long retain left nothing for `/health`, for other
banks or for the bank list. So waiting happens on the event loop instead:

- `WriteLock` is a bank's one write lock. A thread takes it as it would an
  RLock (the studio's runner, the background workers, a handler); a request
  takes it *on the event loop*, without a thread (`acquire_async`), before its
  handler starts, and the thread that runs the handler then holds it through
  the request's ticket (a context variable that AnyIO hands to the thread), so
  the handler's own `served.using()` goes straight in. First come, first served.
- `Admission` bounds the queues per bank: at most `writes_waiting` writes wait
  for a bank's lock and `reads_waiting` reads for one of its `reads` read
  slots; past that a request is refused with `Busy` (HTTP 503 with
  `Retry-After`, an MCP tool error), at once, holding nothing.
- `AdmissionMiddleware` finds the route a request goes to, and from it the bank
  and whether it writes (any method but GET/HEAD, unless the endpoint is marked
  `@read_only`; a routed call by its method), and admits it.

Reads never take the write lock (served.py): a recall answers while a retain
on the same bank commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.routing import Match

from core.server.guard import BODY, answer, current_departure

# Who holds a write lock, if not a plain thread: the request (or MCP call) that
# was admitted on the event loop. Context variables follow a request into the
# thread AnyIO runs its handler in.
_TICKET: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "engram_write_ticket", default=None
)

WRITES_WAITING = 32
READS = 8
READS_WAITING = 64
READ_METHODS_HTTP = frozenset({"GET", "HEAD", "OPTIONS"})


def _identity() -> object:
    ticket = _TICKET.get()
    return ticket if ticket is not None else threading.get_ident()


@dataclass(eq=False)
class _Waiter:
    identity: object
    event: threading.Event | None = None  # a thread waiting
    future: asyncio.Future | None = None  # a request waiting on the event loop
    loop: asyncio.AbstractEventLoop | None = None

    def wake(self) -> None:
        if self.event is not None:
            self.event.set()
        else:
            self.loop.call_soon_threadsafe(_resolve, self.future)


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(True)


class WriteLock:
    """A bank's write lock: reentrant for its holder (a thread, or a request's
    ticket), granted first come first served, awaitable without a thread."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._holder: object | None = None
        self._count = 0
        self._waiters: deque[_Waiter] = deque()

    # -- threads ---------------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = _identity()
        with self._mutex:
            if self._take(me):
                return True
            if not blocking:
                return False
            waiter = _Waiter(me, event=threading.Event())
            self._waiters.append(waiter)
        if waiter.event.wait(None if timeout < 0 else timeout):
            return True  # handed over by the releaser
        with self._mutex:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
                return False
        return True  # granted just as the wait timed out

    def release(self) -> None:
        me = _identity()
        with self._mutex:
            if self._holder is not me and self._holder != me:
                raise RuntimeError("release of a bank write lock this caller does not hold")
            self._count -= 1
            if self._count == 0:
                self._hand_over()

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- the event loop ----------------------------------------------------------

    def enqueue(self, ticket: object, max_waiting: int) -> _Waiter | None:
        """Take the lock for `ticket` now (None), or a place in line, to `wait` for
        (on the event loop: no thread held). QueueFull if `max_waiting` requests
        wait already. One step, so the bound holds however many arrive at once."""
        with self._mutex:
            if self._take(ticket):
                return None
            waiting = self.waiting
            if waiting >= max_waiting:
                raise QueueFull(waiting)
            waiter = _Waiter(ticket, future=asyncio.get_running_loop().create_future())
            waiter.loop = waiter.future.get_loop()
            self._waiters.append(waiter)
            return waiter

    def withdraw(self, waiter: _Waiter) -> None:
        """`waiter` gives up (its client left): out of the line, or, granted just
        now, the lock goes on to the next in line."""
        with self._mutex:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            elif self._holder is waiter.identity:
                self._count = 0
                self._hand_over()

    def release_ticket(self, ticket: object) -> None:
        token = _TICKET.set(ticket)
        try:
            self.release()
        finally:
            _TICKET.reset(token)

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if w.future is not None)

    @property
    def locked(self) -> bool:
        return self._holder is not None

    @property
    def held(self) -> bool:
        """Held by the caller: this thread, or the request it works for."""
        holder = self._holder
        return holder is not None and (holder is _identity() or holder == _identity())

    # -- inside the mutex ----------------------------------------------------------

    def _take(self, me: object) -> bool:
        if self._holder is None and not self._waiters:
            self._holder, self._count = me, 1
            return True
        if self._holder is me or (self._holder is not None and self._holder == me):
            self._count += 1
            return True
        return False

    def _hand_over(self) -> None:
        self._holder = None
        while self._waiters:
            waiter = self._waiters.popleft()
            if waiter.future is not None and waiter.future.done():
                continue  # cancelled meanwhile
            self._holder, self._count = waiter.identity, 1
            waiter.wake()
            return


class QueueFull(Exception):
    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} waiting")
        self.waiting = waiting


class ClientLeft(Exception):
    """The request's client disconnected while it waited: nobody to answer."""


async def _until_admitted(place: asyncio.Future, departure, give_up: Callable[[], None]) -> None:
    """Await `place` (a place in line coming up); if the request's client leaves
    or its time runs out first (or this task is cancelled), `give_up()` hands the
    place back and ClientLeft (TimeoutError for the time) says why."""
    leaving = asyncio.ensure_future(departure.left.wait()) if departure is not None else None
    either = {place, leaving} - {None}
    try:
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        give_up()
        raise
    finally:
        if leaving is not None:
            leaving.cancel()
    if not place.done():
        give_up()
        raise ClientLeft() if not departure.timed_out else TimeoutError()


class Busy(Exception):
    """A bank's queue is full: refused at once, with when to try again."""

    def __init__(self, bank: str, what: str, waiting: int, retry_after: int) -> None:
        super().__init__(
            f"bank {bank!r} is busy: {waiting} {what} already waiting; retry in {retry_after} s"
        )
        self.retry_after = retry_after


@dataclass
class _Bank:
    reads: asyncio.Semaphore | None = None
    reads_waiting: int = 0
    # Recent write durations (s): how long a place in the queue takes.
    durations: deque[float] = field(default_factory=lambda: deque(maxlen=16))


class Admission:
    """The per-bank queues of one serving process (HTTP and MCP share them)."""

    def __init__(
        self,
        lock_of: Callable[[str], WriteLock | None],
        *,
        writes_waiting: int = WRITES_WAITING,
        reads: int = READS,
        reads_waiting: int = READS_WAITING,
    ) -> None:
        self.lock_of = lock_of
        self.writes_waiting = writes_waiting
        self.reads = reads
        self.reads_waiting = reads_waiting
        self._banks: dict[str, _Bank] = {}

    def _bank(self, name: str) -> _Bank:
        state = self._banks.get(name)
        if state is None:  # only ever touched on the event loop: no lock needed
            state = self._banks[name] = _Bank(asyncio.Semaphore(self.reads))
        return state

    def _retry_after(self, state: _Bank, waiting: int) -> int:
        typical = sorted(state.durations)[len(state.durations) // 2] if state.durations else 1.0
        return max(1, min(300, math.ceil(typical * (waiting + 1))))

    @contextlib.asynccontextmanager
    async def writing(self, bank: str) -> AsyncIterator[None]:
        """Hold `bank`'s write lock for this request (its ticket set for the
        threads it runs), waiting in line on the event loop; Busy past the bound."""
        lock = self.lock_of(bank)
        if lock is None:  # no such bank: its 404 waits for nobody
            yield
            return
        state = self._bank(bank)
        ticket = object()
        try:
            waiter = lock.enqueue(ticket, self.writes_waiting)
        except QueueFull as full:
            raise Busy(
                bank, "writes", full.waiting, self._retry_after(state, full.waiting)
            ) from None
        token = _TICKET.set(ticket)
        try:
            if waiter is not None:
                try:
                    await _until_admitted(
                        waiter.future, current_departure(), lambda: lock.withdraw(waiter)
                    )
                except TimeoutError:
                    retry = self._retry_after(state, lock.waiting)
                    raise Busy(bank, "writes", lock.waiting, retry) from None
            started = time.monotonic()
            try:
                yield
            finally:
                state.durations.append(time.monotonic() - started)
                lock.release_ticket(ticket)
        finally:
            _TICKET.reset(token)

    @contextlib.asynccontextmanager
    async def reading(self, bank: str) -> AsyncIterator[None]:
        """One of `bank`'s read slots; Busy when too many reads wait already."""
        state = self._bank(bank)
        if state.reads.locked() and state.reads_waiting >= self.reads_waiting:
            raise Busy(bank, "reads", state.reads_waiting, 1)
        state.reads_waiting += 1
        slot = asyncio.ensure_future(state.reads.acquire())

        def give_up() -> None:
            # Taken already (or about to be): given back once it is.
            slot.add_done_callback(lambda s: s.cancelled() or state.reads.release())
            slot.cancel()

        try:
            await _until_admitted(slot, current_departure(), give_up)
        except TimeoutError:
            raise Busy(bank, "reads", state.reads_waiting, 1) from None
        finally:
            state.reads_waiting -= 1
        try:
            yield
        finally:
            state.reads.release()


def queued_when(asks: Callable[[dict], bool]) -> Callable[[Callable], Callable]:
    """Mark a write route that, when its JSON body `asks(body)` (an `"async": true`
    retain), only queues work: it needs no place in the lock's line."""

    def mark(endpoint: Callable) -> Callable:
        endpoint.engram_queued_when = asks  # type: ignore[attr-defined]
        return endpoint

    return mark


def read_only(endpoint: Callable) -> Callable:
    """Mark a route that reads only, whatever its HTTP method (a POST recall):
    it needs no write lock and waits in the bank's read queue."""
    endpoint.engram_read_only = True  # type: ignore[attr-defined]
    return endpoint


# A routed call (`/call/{method}`) reads or writes by its method: this says which.
CallKind = Callable[[str], bool]


class AdmissionMiddleware:
    """Admit each bank request to its bank's queue before it reaches a thread."""

    def __init__(self, app, routes: list, admission: Admission, call_writes: CallKind) -> None:
        self.app = app
        self.routes = routes  # the app's APIRoutes, as declared (their paths are whole)
        self.admission = admission
        self.call_writes = call_writes

    def classify(self, scope: dict) -> tuple[str, bool] | None:
        """(bank, writes) for a request aimed at one bank, else None."""
        for route in self.routes:
            match, child = route.matches(scope)
            if match is not Match.FULL:
                continue  # PARTIAL: the path, not the method (a later route may take it)
            params = child.get("path_params", {})
            bank = params.get("bank_id")
            if not isinstance(bank, str):
                return None
            endpoint = getattr(route, "endpoint", None)
            if "method" in params and getattr(endpoint, "engram_routed_call", False):
                return bank, self.call_writes(params["method"])
            writes = scope["method"] not in READ_METHODS_HTTP and not getattr(
                endpoint, "engram_read_only", False
            )
            asks = getattr(endpoint, "engram_queued_when", None)
            if writes and asks is not None and _asks(asks, scope.get(BODY)):
                writes = False
            return bank, writes
        return None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        target = self.classify(scope) if scope["type"] == "http" else None
        if target is None:
            await self.app(scope, receive, send)
            return
        bank, writes = target
        queue = self.admission.writing(bank) if writes else self.admission.reading(bank)
        try:
            async with queue:
                await self.app(scope, receive, send)
        except Busy as busy:
            await _refuse(send, busy)
        except ClientLeft:
            pass  # it gave up waiting; its place went to the next in line


def _asks(asks: Callable[[dict], bool], body: bytes | None) -> bool:
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        return False  # the route answers its 422
    return isinstance(parsed, dict) and bool(asks(parsed))


async def _refuse(send: Any, busy: Busy) -> None:
    await answer(send, 503, str(busy), [(b"retry-after", str(busy.retry_after).encode())])


def routed_call(endpoint: Callable) -> Callable:
    """Mark the route whose `{method}` path parameter says whether it writes."""
    endpoint.engram_routed_call = True  # type: ignore[attr-defined]
    return endpoint
