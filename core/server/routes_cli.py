"""The routes `RemoteBank` and `RemoteEngine` go through: one declared operation per call.

`POST /engram/v1/banks/{bank_id}/call/{method}` runs one `Bank` operation of
the interface (core/interface.py) with `{"args": [...], "kwargs": {...}}` in
the wire encoding (core/server/wire.py) and answers `{"value": ...}`; a long
operation answers a stream of JSON lines instead, with its progress, and can
be cancelled (core/server/calls.py). A write runs under the bank's lock and
announces its `Change` (`ServedBanks.changed`: an open studio refreshes its
panes, followers of the bank's changes hear of it); a read takes no lock.
`POST /engram/v1/engine/call/{method}` does the same for the engine's
operations on banks (list, create, rename, delete, re-embed), through
`ServedBanks`, which serves what they make. `GET .../changes` streams a
served bank's changes as they happen.

An engine error answers 4xx with its one-line message and its kind, as the
CLI prints it and `RemoteBank` raises it again.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from core.interface import BANK, DOWNLOAD, ENGINE, UPLOAD, Operation
from core.limits import FieldError, check_document, first_unstorable
from core.server.admission import routed_call
from core.server.calls import Downloads, LongCalls, stream
from core.server.errors import brief, status_of, stopped_why
from core.server.feed import ChangeFeed
from core.server.guard import current_departure
from core.server.wire import decode, encode
from core.types import CancelledError, Change, Document, EngramError

PREFIX = "/engram/v1"
NDJSON = "application/x-ndjson"
FOLLOW_HEARTBEAT = 15.0  # seconds between lines on a quiet change stream


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)


class CallFailed(Exception):
    """A call refused before the engine ran it (unknown method, bad arguments)."""

    def __init__(self, status: int, detail: str, kind: str = "InvalidInputError") -> None:
        super().__init__(detail)
        self.status, self.detail, self.kind = status, detail, kind


def error_event(error: BaseException) -> dict[str, Any]:
    """What a client is told about a failed call (its message, brief, never a traceback)."""
    event = _event(error)
    return {**event, "detail": brief(event["detail"])}


def _event(error: BaseException) -> dict[str, Any]:
    if isinstance(error, CallFailed):
        return {"status": error.status, "kind": error.kind, "detail": error.detail}
    departure = current_departure()
    if isinstance(error, CancelledError) and departure is not None and departure.timed_out:
        return {"status": 504, "kind": "CancelledError", "detail": stopped_why()}
    if isinstance(error, HTTPException):
        return {"status": error.status_code, "kind": "EngramError", "detail": str(error.detail)}
    if isinstance(error, TypeError):  # wrong arguments for the method
        return {"status": 422, "kind": "InvalidInputError", "detail": str(error)}
    if isinstance(error, EngramError):
        return {"status": status_of(error), "kind": type(error).__name__, "detail": str(error)}
    return {
        "status": 500,
        "kind": "InternalError",
        "detail": f"the server failed: {type(error).__name__}",
    }


def _answer(error: BaseException) -> JSONResponse:
    event = error_event(error)
    return JSONResponse(
        {"detail": event["detail"], "kind": event["kind"]}, status_code=event["status"]
    )


def _language_model(engine, spec: Any):
    """None: the owner's configured model (what `llm=None` means to the engine)."""
    if not spec or not isinstance(spec, dict) or spec.get("owners"):
        return None
    from core import LlmSettings, open_model

    return open_model(
        LlmSettings(
            host=str(spec["host"]),
            model=str(spec["model"]),
            timeout=engine.settings.ollama_timeout,
            provider=str(spec.get("provider") or engine.settings.llm_provider),
        )
    )


def _arguments(op: Operation, body: Call) -> tuple[list, dict]:
    # Before decoding (recursive): nothing too deep, no text a store cannot keep.
    raw = first_unstorable(body.args, ("args",)) or first_unstorable(body.kwargs, ("kwargs",))
    if raw is not None and raw.kind == "too_deep":
        raise CallFailed(422, str(raw))
    try:
        args, kwargs = decode(body.args), decode(body.kwargs)
    except (ValueError, TypeError, KeyError) as error:
        raise CallFailed(422, f"arguments: {error}") from None
    if raw is not None:  # named as the method's arguments, not as their wire encoding
        found = first_unstorable(args, ("args",)) or first_unstorable(kwargs, ("kwargs",))
        raise CallFailed(422, str(found or raw))
    for name in ("progress", "cancel"):
        if name in kwargs:
            raise CallFailed(422, f"{op.name}: {name} is the server's to give")
    if (
        op.transfer == UPLOAD
        and op.name == "ingest"
        and not (
            args and isinstance(args[0], list) and all(isinstance(d, Document) for d in args[0])
        )
    ):
        # Never a path: the owner reads no file a client names.
        raise CallFailed(400, "ingest takes the conversations themselves (Documents)")
    if op.transfer == UPLOAD and op.name == "ingest":
        # Before the answer streams: a refusal is the request's own 422.
        for document in args[0]:
            try:
                check_document(document)
            except FieldError as error:
                raise CallFailed(422, str(error), "FieldError") from None
    if op.transfer == DOWNLOAD and args:
        raise CallFailed(422, f"{op.name}: the owner writes the file; the client names none")
    return args, kwargs


def _change_of(value: Any) -> Change | None:
    if isinstance(value, Change):
        return value
    change = getattr(value, "change", None)
    return change if isinstance(change, Change) else None


class Runner:
    """Runs one declared bank operation in this process, as `RemoteBank` asked."""

    def __init__(self, request: Request, bank_id: str, op: Operation, args, kwargs) -> None:
        self.served = request.app.state.served
        self.downloads: Downloads = request.app.state.downloads
        self.bank_id, self.op, self.args, self.kwargs = bank_id, op, args, kwargs

    def __call__(self, progress=None, cancel=None) -> dict[str, Any]:
        op, kwargs = self.op, dict(self.kwargs)
        if op.progress:
            kwargs["progress"] = progress
        if op.cancel:
            kwargs["cancel"] = cancel
        llm = None
        if op.llm:
            llm = kwargs["llm"] = _language_model(self.served.engine, kwargs.get("llm"))
        temp = self.served.transfer_path(self.bank_id) if op.transfer == DOWNLOAD else None
        args = [temp, *self.args] if temp is not None else self.args
        try:
            if op.writes:
                with self.served.using(self.bank_id) as bank:
                    value = self._run(bank, args, kwargs)
                change = _change_of(value)
                if change is not None:
                    # A routed command runs the observation jobs it queued itself
                    # (`--no-jobs`: its user left them), so a headless server's
                    # worker leaves them to it.
                    self.served.changed(bank.id, change, caller_runs_jobs=True)
            else:
                bank = self.served.get(self.bank_id)
                value = self._run(bank, args, kwargs)
            event = {"value": encode(value)}
            if temp is not None:
                event["download"] = self.downloads.add(temp, f"{_safe_filename(bank.name)}.engram")
                temp = None
            return event
        finally:
            if llm is not None:
                llm.close()
            if temp is not None:
                temp.unlink(missing_ok=True)

    def _run(self, bank, args, kwargs) -> Any:
        try:
            if self.op.attribute:
                return getattr(bank, self.op.name)
            return getattr(bank, self.op.name)(*args, **kwargs)
        except Exception:
            if bank.closed:  # the owner closed it meanwhile (a studio switching banks)
                raise CallFailed(
                    409, f"bank {bank.name!r} was closed by its owner while this ran", "BankClosed"
                ) from None
            raise


def _safe_filename(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "bank"


class CallStream(StreamingResponse):
    """A streamed call whose work is stopped when its client goes away: the
    stream is closed however the response ends (uvicorn reports a gone client
    as a failed send, which leaves the generator suspended otherwise)."""

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.body_iterator.aclose()


def _streamed(request: Request, work) -> CallStream:
    calls: LongCalls = request.app.state.calls
    return CallStream(stream(calls, work, error_event), media_type=NDJSON)


router = APIRouter(prefix=PREFIX, tags=["Engram remote calls"])


def writes(method: str) -> bool:
    """Whether the bank operation `method` writes (admission.py queues it for
    the bank's lock); an unknown one is refused before it needs any."""
    op = BANK.get(method)
    return op is not None and op.writes


@router.post("/banks/{bank_id}/call/{method}")
@routed_call
async def call(bank_id: str, method: str, body: Call, request: Request):
    """Run one declared `Bank` operation in this process (what `RemoteBank` and a
    routed `engram` command do); a long one streams its progress."""
    op = BANK.get(method)
    if op is None or not op.routed:
        return _answer(CallFailed(404, f"no bank method {method!r} can be called here"))
    try:
        args, kwargs = _arguments(op, body)
    except CallFailed as error:
        return _answer(error)
    runner = Runner(request, bank_id, op, args, kwargs)
    if op.long:
        return _streamed(request, runner)
    try:
        return await run_in_threadpool(runner)
    except Exception as error:  # noqa: BLE001 - answered with its message
        return _answer(error)


@router.post("/calls/{call_id}/cancel", status_code=202)
def cancel(call_id: str, request: Request) -> dict[str, bool]:
    """Cancel a long call in flight: it stops at its next check and rolls back;
    its stream ends with a CancelledError."""
    return {"cancelled": request.app.state.calls.cancel(call_id)}


@router.get("/downloads/{download_id}", response_class=FileResponse)
def download(download_id: str, request: Request) -> FileResponse:
    """The file a long call left (a snapshot export), once: it is deleted after."""
    found = request.app.state.downloads.take(download_id)
    if found is None:
        raise HTTPException(404, "no such download (fetched already, or expired)")
    path, filename = found
    return FileResponse(
        path,
        media_type="application/zip",
        filename=filename,
        background=BackgroundTask(path.unlink, missing_ok=True),
    )


# -- the engine's operations on banks --------------------------------------------


def _engine_call(served, op: Operation, args: list, kwargs: dict, progress, cancel) -> Any:
    if op.name == "banks":
        return served.infos()
    if op.name == "open_bank":
        return served.info(*args, **kwargs)
    if op.name == "create_bank":
        return served.info(served.create(*args, **kwargs).id)
    if op.name == "rename_bank":
        return served.rename(*args, **kwargs)
    if op.name == "delete_bank":
        return served.delete(*args, **kwargs)
    if op.name == "reembed_bank":
        return served.reembed(*args, progress=progress, cancel=cancel, **kwargs)
    raise CallFailed(404, f"no engine method {op.name!r} can be called here")


@router.post("/engine/call/{method}")
async def engine_call(method: str, body: Call, request: Request):
    """Run one declared `Engine` operation on the banks this process serves
    (what `RemoteEngine` does); snapshots are imported by upload (routes_engram)."""
    op = ENGINE.get(method)
    if op is None or op.transfer == UPLOAD:
        return _answer(CallFailed(404, f"no engine method {method!r} can be called here"))
    try:
        args, kwargs = _arguments(op, body)
    except CallFailed as error:
        return _answer(error)
    served = request.app.state.served

    def work(progress=None, cancel=None) -> dict[str, Any]:
        return {"value": encode(_engine_call(served, op, args, kwargs, progress, cancel))}

    if op.long:
        return _streamed(request, work)
    try:
        return await run_in_threadpool(work)
    except Exception as error:  # noqa: BLE001 - answered with its message
        return _answer(error)


# -- following a bank's changes ----------------------------------------------------


@router.get("/banks/{bank_id}/changes")
async def changes(
    bank_id: str, request: Request, after: int | None = None, epoch: str | None = None
):
    """The bank's changes as they happen, one JSON line each:
    `{"seq": n, "epoch": e, "at": time, "change": ...}`; first a line naming
    where the stream starts. With `after` (and the `epoch` it came with), from
    the change after that one; `{"reset": true, ...}` when some were missed
    (the client reloads what it shows). Heartbeat lines keep it open."""
    served = request.app.state.served
    try:
        key = await run_in_threadpool(served.key_of, bank_id)
    except Exception as error:  # noqa: BLE001 - answered with its message
        return _answer(error)
    feed: ChangeFeed = served.feed(key)
    # Set when the server stops: a follower's stream ends then (it follows again from
    # where it was, elsewhere or later) instead of holding the shutdown up.
    stopping = getattr(request.app.state, "stopping", None) or threading.Event()

    async def lines():
        def line(event: dict) -> bytes:
            return json.dumps(event, separators=(",", ":")).encode() + b"\n"

        with feed.waiter() as waiter:
            last = feed.last
            reset = False
            if after is not None:
                entries, reset = feed.since(after, epoch or "")
                last = after if not reset else feed.last
            yield line({"seq": last, "epoch": feed.epoch, "reset": reset, "start": True})
            while not stopping.is_set():
                entries, missed = feed.since(last, feed.epoch)
                if missed:
                    last = feed.last
                    yield line({"seq": last, "epoch": feed.epoch, "reset": True})
                for entry in entries:
                    last = entry.seq
                    yield line(
                        {
                            "seq": entry.seq,
                            "epoch": feed.epoch,
                            "at": entry.at.isoformat(),
                            "change": encode(entry.change),
                        }
                    )
                before = feed.last
                await waiter.wait(FOLLOW_HEARTBEAT)
                if feed.last == before and not stopping.is_set():
                    yield line({"heartbeat": True, "seq": last})

    return CallStream(lines(), media_type=NDJSON)
