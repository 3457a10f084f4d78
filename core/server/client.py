"""A bank another process serves, used as if it were open here: `RemoteBank`.

`RemoteBank` satisfies the `Bank` interface declared in core/interface.py:
its methods are made from that declaration, each one call to the owner
(`POST /engram/v1/banks/{bank}/call/{method}`, core/server/routes_cli.py)
that returns the value the method returned there, rebuilt as the same type
(core/server/wire.py). Long operations stream their progress back and stop
when their `CancelToken` is cancelled (the owner rolls back; the call raises
`CancelledError` once it has). What cannot be a plain value travels its own
way: `ingest` reads and parses its files here and sends the conversations;
`export_snapshot` has the owner write the snapshot and streams it into the
path given here. `changes()` follows what anyone changes in the bank.

`RemoteEngine` is the same for the engine's operations on banks (list,
open, create, rename, delete, import a snapshot by upload, re-embed).

    engine = RemoteEngine("http://127.0.0.1:8888", token)
    bank = engine.open_bank("Demo: Juniper")
    bank.units(limit=10); bank.recall("Where did Maya move?")
    bank.ingest("chat.txt", progress=print, cancel=token)
    for event in bank.changes(): ...

Import-light: httpx and the value types a reply holds, never DuckDB or the model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from core.interface import BANK, DOWNLOAD, ENGINE, LOCAL, Operation
from core.server.wire import decode, encode
from core.types import (
    BankExistsError,
    BankInfo,
    BankNotFoundError,
    BankRenamedError,
    CancelledError,
    Change,
    EngramError,
    InvalidInputError,
    Kind,
    PurgedInSnapshotError,
    StorageError,
)

CHUNK = 1 << 20  # bytes per read of a file streamed up or down
# A batch of conversations sent by one ingest call stays well under the
# server's request size limit (8 MiB by default).
UPLOAD_BATCH_BYTES = 2 << 20
CANCEL_WAIT = 30.0  # seconds to wait for the owner to confirm a cancel
CANCEL_POLL = 0.1
# A followed change stream says something at least every 15 s (a heartbeat,
# core/server/routes_cli.py): this long a silence means the connection is gone
# even when no FIN or RST ever arrives (a sleeping laptop, a dropped route).
FOLLOW_SILENCE = 45.0


class RemoteError(EngramError):
    """The owner refused or failed a call; the message is the owner's."""

    def __init__(self, message: str, kind: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.kind, self.status = kind, status


# Errors raised again as themselves: a caller catches the same class either way.
_ERRORS = {
    cls.__name__: cls
    for cls in (
        BankNotFoundError,
        BankRenamedError,
        BankExistsError,
        InvalidInputError,
        CancelledError,
        StorageError,
        PurgedInSnapshotError,
    )
}


def _error(detail: str, kind: str = "", status: int = 0) -> EngramError:
    cls = _ERRORS.get(kind)
    return cls(detail) if cls is not None else RemoteError(detail, kind, status)


def _language_model_spec(value: Any) -> Any:
    """A language model crosses the wire as its settings; the owner builds its own.
    `OwnersModel` (and None) mean the owner's configured model."""
    if value is None or isinstance(value, OwnersModel):
        return {"owners": True} if value is not None else None
    llm = sys.modules.get("core.providers.llm")
    if llm is not None and isinstance(value, llm.LanguageModel):
        return {"host": value.host, "model": value.name, "provider": value.provider}
    return value


class OwnersModel:
    """The language model the owner has configured, whichever it is: the owner
    builds it (a client never talks to Ollama itself)."""

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class ChangeEvent:
    """One change to a followed bank; `reset` when some were missed (reload)."""

    seq: int
    epoch: str
    change: Change = dataclasses.field(default_factory=Change)
    at: datetime | None = None
    reset: bool = False


def _say_who(request) -> None:
    """Who asks (the CLI, a script's --actor, `engram mcp`'s client): the owner records
    it as the actor, as a direct run would (it believes it from its own token only)."""
    from core.context import HOP_HEADER, hop_header

    request.headers[HOP_HEADER] = hop_header()


def tls_context(ca_file: str | Path | None = None, *, pinned: str | Path | None = None):
    """How an https owner's certificate is verified: against the system's
    certificate authorities and, when given, the CA file too (a private CA, or a
    self-signed certificate itself). Verification is never turned off.

    `pinned`: the owner's own certificate file, named in its lock record on this
    machine (a routed command): that certificate is the only one trusted, whatever
    signed it, and the advertised loopback address need not be a name it holds."""
    import ssl

    if pinned:
        context = ssl.create_default_context(cafile=str(pinned))
        context.check_hostname = False  # the certificate itself is what is checked
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # a leaf trusted as is
        return context
    context = ssl.create_default_context()
    if ca_file:
        try:
            context.load_verify_locations(cafile=str(ca_file))
        except (OSError, ssl.SSLError) as error:
            raise InvalidInputError(
                f"the CA file {ca_file} cannot be read as PEM certificates: {error}"
            ) from None
    return context


@functools.cache
def _plain_context():
    """What httpx builds for every client when told `verify=True` (~40 ms of
    reading the certificate authorities): for an http owner it is never used, so
    one serves every client of the process (a studio reconnecting, a test's many
    routed commands)."""
    import httpx

    return httpx.create_ssl_context()


class OwnerClient:
    """HTTP to a bank's owner with its bearer token (httpx, connections reused).
    An https owner's certificate is verified (`tls_context`): `ca_file` adds the
    authority that signed it."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float | None = 600.0,
        ca_file: str | Path | None = None,
        pinned: str | Path | None = None,
    ) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.timeout = timeout
        self.ca_file = str(ca_file or pinned) if ca_file or pinned else None
        secure = self.url.startswith("https:")
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout, connect=5.0),
            event_hooks={"request": [_say_who]},
            verify=tls_context(ca_file, pinned=pinned) if secure else _plain_context(),
        )

    # -- plain calls -------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs) -> Any:
        """The JSON answer of one request; an EngramError naming what the owner said."""
        import httpx

        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise self._unreachable(error) from None
        if response.status_code >= 400:
            raise _refusal(response)
        return response.json()

    def post(self, path: str, body: dict) -> Any:
        return decode(self.request("POST", path, json=body)["value"])

    # -- long calls ----------------------------------------------------------------

    def stream(
        self, path: str, progress=None, cancel=None, **request
    ) -> tuple[Any, dict[str, Any]]:
        """A long call: progress reported as it streams in, cancelled with `cancel`;
        the value and the final line (which may name a download)."""
        import httpx

        request.setdefault("method", "POST")
        headers = {"Accept": "application/x-ndjson", **request.pop("headers", {})}
        watcher = _CancelWatcher(self, cancel)
        try:
            with self._http.stream(url=path, headers=headers, **request) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _refusal(response)
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if "call" in event:
                        watcher.watch(event["call"])
                    elif "progress" in event:
                        if progress is not None:
                            progress(*event["progress"])
                    elif "error" in event:
                        error = event["error"]
                        raise _error(
                            error.get("detail", ""), error.get("kind", ""), error.get("status", 0)
                        )
                    elif "value" in event:
                        return decode(event["value"]), event
        except httpx.HTTPError as error:
            if watcher.cancelled:
                raise CancelledError("cancelled") from None
            raise self._unreachable(error) from None
        finally:
            watcher.stop()
        raise RemoteError(f"the owner at {self.url} ended the call without an answer")

    def cancel(self, call_id: str) -> None:
        with contextlib.suppress(EngramError):
            self.request("POST", f"/engram/v1/calls/{call_id}/cancel")

    def download(self, download_id: str, path: Path, progress=None, cancel=None) -> None:
        """Stream a file the owner left into `path` (written aside, renamed at the end)."""
        import httpx

        partial = path.with_name(path.name + ".partial")
        try:
            with self._http.stream("GET", f"/engram/v1/downloads/{download_id}") as response:
                if response.status_code >= 400:
                    response.read()
                    raise _refusal(response)
                total = int(response.headers.get("content-length") or 0)
                done = 0
                with open(partial, "wb") as out:
                    for chunk in response.iter_bytes(CHUNK):
                        if cancel is not None and cancel.cancelled:
                            raise CancelledError("cancelled")
                        out.write(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total, "downloading")
            os.replace(partial, path)
        except httpx.HTTPError as error:
            raise self._unreachable(error) from None
        finally:
            partial.unlink(missing_ok=True)

    def upload(self, path: str, source: Path, progress=None, cancel=None, **params) -> Any:
        """Stream a file up as a request's body; the owner's long answer's value."""
        total = source.stat().st_size

        def body() -> Iterator[bytes]:
            done = 0
            with open(source, "rb") as file:
                while chunk := file.read(CHUNK):
                    if cancel is not None and cancel.cancelled:
                        raise CancelledError("cancelled")
                    done += len(chunk)
                    if progress is not None:
                        progress(done, total, "uploading")
                    yield chunk

        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(total)}
        params = {k: v for k, v in params.items() if v is not None}
        try:
            value, _ = self.stream(
                path, progress, cancel, content=body(), headers=headers, params=params
            )
        except CancelledError:
            raise
        return value

    def close(self) -> None:
        self._http.close()

    def _unreachable(self, error: Exception) -> RemoteError:
        return unreachable(self.url, error, self.ca_file)


def unreachable(url: str, error: Exception, ca_file: str | None = None) -> RemoteError:
    """What a failed connection means for a person: the certificate could not be
    verified (kind "Certificate": say which CA signed it), or the server did not
    answer (kind "Unreachable": it may come back)."""
    import ssl

    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ssl.SSLCertVerificationError):
        cause = cause.__cause__ or cause.__context__
    if cause is not None or "CERTIFICATE_VERIFY_FAILED" in str(error):
        reason = getattr(cause, "verify_message", "") or str(cause or error)
        against = f"the CA file {ca_file}" if ca_file else "this computer's certificate authorities"
        return RemoteError(
            f"the certificate of {url} could not be verified against {against} ({reason}):"
            " give the CA file that signed it (or the server's own certificate, if it is"
            " self-signed)",
            "Certificate",
        )
    return RemoteError(f"the server at {url} did not answer: {error}", "Unreachable")


class _CancelWatcher:
    """Asks the owner to cancel a long call once its token is cancelled (the
    call's own thread is blocked reading the stream meanwhile)."""

    def __init__(self, client: OwnerClient, token) -> None:
        self._client, self._token = client, token
        self._done = threading.Event()
        self.cancelled = False
        self._thread: threading.Thread | None = None

    def watch(self, call_id: str) -> None:
        if self._token is None:
            return
        self._thread = threading.Thread(target=self._run, args=(call_id,), daemon=True)
        self._thread.start()

    def _run(self, call_id: str) -> None:
        while not self._done.wait(CANCEL_POLL):
            if self._token.cancelled:
                self.cancelled = True
                self._client.cancel(call_id)
                return

    def stop(self) -> None:
        self._done.set()


def _refusal(response) -> EngramError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):  # FastAPI's 422: name the fields
        detail = "; ".join(
            f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" for d in detail
        )
    kind = body.get("kind", "") if isinstance(body, dict) else ""
    message = str(detail or f"HTTP {response.status_code} from the bank's owner")
    return _error(message, kind, response.status_code)


def _quote(segment: str) -> str:
    return quote(segment, safe="")


# -- RemoteBank ----------------------------------------------------------------------


class RemoteBank:
    """A bank another process owns and serves: every call goes through that owner.

    Made from the interface declaration (core/interface.py): each routed
    operation there is a method here (see `_operation`), except the few whose
    data travel their own way, written out below."""

    def __init__(
        self, client: OwnerClient, bank_id: str, name: str = "", *, owns_client: bool = False
    ) -> None:
        self._client = client
        self._owns_client = owns_client
        self._closed = False
        self._id = bank_id
        self._name = name or bank_id
        self._followed = False
        self._streams: set = set()  # the change streams being read (stop_following)
        self._closed_streams = False

    @property
    def id(self) -> str:
        """The bank's immutable id: every call names the bank by it, so a rename
        (here or anywhere) never loses it."""
        return self._id

    @property
    def name(self) -> str:
        """The bank's name, asked of its owner (it may have been renamed) — unless
        `changes()` is followed: then the follower keeps it current (asking again
        when a change touches the bank, or after a reset), so reading it costs no
        round trip and works while the owner is out of reach (a studio reads it on
        its UI thread)."""
        if not self._followed:
            self._name = self._call(BANK["name"], (), {})[0]
        return self._name

    def _path(self, method: str) -> str:
        return f"/engram/v1/banks/{_quote(self._id)}/call/{method}"

    def _call(self, op: Operation, args: Sequence, kwargs: dict, progress=None, cancel=None):
        body = {"args": encode(list(args)), "kwargs": encode(kwargs)}
        if op.long:
            return self._client.stream(self._path(op.name), progress, cancel, json=body)
        return self._client.post(self._path(op.name), body), {}

    # -- what travels its own way ------------------------------------------------

    def ingest(
        self,
        source,
        format: str = "auto",
        mode: str = "auto",
        *,
        force: bool = False,
        progress=None,
        cancel=None,
        llm=None,
    ):
        """The file is read and parsed here, as a direct ingest would, and its
        conversations are sent in batches the owner's size limit takes (each
        batch one call, its documents one transaction each, as directly)."""
        if isinstance(source, str | Path):
            from core import load_documents

            documents = load_documents(source, format)
        else:
            from core import Document

            documents = [source] if isinstance(source, Document) else list(source)
        op = BANK["ingest"]
        kwargs = {"force": force, "llm": _language_model_spec(llm)}
        report = None
        for batch in _batches(documents):
            if cancel is not None and cancel.cancelled:
                raise CancelledError("cancelled")
            value, _ = self._call(op, [batch, format, mode], kwargs, progress, cancel)
            report = value if report is None else _combined(report, value)
        if report is None:
            value, _ = self._call(op, [[], format, mode], kwargs, progress, cancel)
            report = value
        return report

    def export_snapshot(
        self, path, *, progress=None, cancel=None, record_as=None, record_host: str = ""
    ):
        """The owner writes the snapshot (progress, cancel), then it streams into
        `path` here; the bank records the export under this machine's path (or
        `record_as`, as `Bank.export_snapshot` does: "" records nothing)."""
        target = Path(path)
        op = BANK["export_snapshot"]
        if record_as is None:
            record_as, record_host = str(target.resolve()), socket.gethostname()
        kwargs = {"record_as": record_as, "record_host": record_host}
        manifest, event = self._call(op, [], kwargs, progress, cancel)
        self._client.download(event["download"], target, progress, cancel)
        return manifest

    def changes(self, after: int | None = None, epoch: str | None = None) -> Iterator[ChangeEvent]:
        """The bank's changes as anyone makes them, from now (or after `after` of
        `epoch`, a number a previous event carried). Blocks between changes; a
        dropped connection (or FOLLOW_SILENCE without even a heartbeat) ends the
        iteration (follow again from the last event: nothing is missed, or an event
        with `reset` says to reload). From the first call on, `name` is kept
        current by the follower instead of asked each time."""
        self._followed = True
        return self._follow(after, epoch)

    def _follow(self, after: int | None, epoch: str | None) -> Iterator[ChangeEvent]:
        import httpx

        params = {} if after is None else {"after": after, "epoch": epoch or ""}
        path = f"/engram/v1/banks/{_quote(self._id)}/changes"
        try:
            with self._client._http.stream(
                "GET", path, params=params, timeout=httpx.Timeout(FOLLOW_SILENCE, connect=5.0)
            ) as response:
                self._streams.add(response)
                if response.status_code >= 400:
                    response.read()
                    raise _refusal(response)
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if "change" in event:
                        change = decode(event["change"])
                        if change.touches(Kind.BANK):
                            self._ask_name()
                        yield ChangeEvent(
                            event["seq"],
                            event["epoch"],
                            change,
                            datetime.fromisoformat(event["at"]),
                        )
                    elif event.get("reset") or event.get("start"):
                        if event.get("reset"):
                            self._ask_name()
                        yield ChangeEvent(event["seq"], event["epoch"], reset=bool(event["reset"]))
        except httpx.HTTPError:
            return
        except (RuntimeError, AttributeError, ValueError):
            if not self._closed_streams:
                raise
            return  # stop_following closed it under the reader
        finally:
            self._streams = {r for r in self._streams if not r.is_closed}

    def stop_following(self) -> None:
        """End every `changes()` iteration of this bank now (from any thread): their
        streams are closed, so a reader blocked between changes returns at once."""
        self._closed_streams = True
        for response in list(self._streams):
            with contextlib.suppress(Exception):
                response.close()
        self._streams.clear()

    def _ask_name(self) -> None:
        with contextlib.suppress(EngramError):  # out of reach: the last one known stays
            self._name = self._call(BANK["name"], (), {})[0]

    def watch_activity(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        """Call `listener(entry)` for each activity entry the owner records from now
        on (its live stream, read on a thread of its own; a dropped connection is
        resumed after the last entry heard). Returns the function that stops it."""
        import httpx

        from core import ActivityEntry

        path = f"/engram/v1/banks/{_quote(self._id)}/activity/stream"
        stopped = threading.Event()
        held: list[Any] = []

        def follow() -> None:
            last: int | None = None
            while not stopped.is_set():
                headers = {} if last is None else {"Last-Event-ID": str(last)}
                try:
                    with self._client._http.stream(
                        "GET", path, headers=headers, timeout=httpx.Timeout(None, connect=5.0)
                    ) as response:
                        if response.status_code >= 400:
                            return
                        held[:] = [response]
                        for line in response.iter_lines():
                            if stopped.is_set():
                                return
                            if line.startswith("data: ") and '"id"' in line:
                                entry = ActivityEntry.from_dict(json.loads(line[6:]))
                                last = entry.id
                                with contextlib.suppress(Exception):
                                    listener(entry)
                except (httpx.HTTPError, RuntimeError, ValueError):
                    pass
                stopped.wait(1.0)  # the owner went away for a moment: ask again

        thread = threading.Thread(target=follow, name="engram-activity-stream", daemon=True)
        thread.start()

        def stop() -> None:
            stopped.set()
            for response in held:
                with contextlib.suppress(Exception):
                    response.close()

        return stop

    # -- lifecycle: each side closes its own ---------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        self.stop_following()
        if self._owns_client:
            self._client.close()

    def advertise(self, url: str | None, token_file: str | None = None) -> None:
        raise EngramError("only the process that owns a bank advertises it")

    def vectors_for(self, units):
        raise EngramError("vectors are computed by the bank's owner")

    @property
    def operation_queue(self):
        raise EngramError("a bank's queue of operations is its owner's")

    def __enter__(self) -> RemoteBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteBank({self._name!r}, id {self._id!r}, at {self._client.url})"


def _operation(op: Operation):
    """The RemoteBank member for one declared operation."""
    if op.attribute:
        return property(lambda self: self._call(op, (), {})[0], doc=op.doc or None)

    def method(self, *args, **kwargs):
        progress = kwargs.pop("progress", None) if op.progress else None
        cancel = kwargs.pop("cancel", None) if op.cancel else None
        if op.llm:
            args = tuple(_language_model_spec(a) for a in args)
            if "llm" in kwargs:
                kwargs["llm"] = _language_model_spec(kwargs["llm"])
        return self._call(op, args, kwargs, progress, cancel)[0]

    method.__name__ = op.name
    method.__qualname__ = f"RemoteBank.{op.name}"
    method.__doc__ = (
        f"{'A write' if op.writes else 'A read'}: `Bank.{op.name}`, run by the bank's owner."
    )
    return method


for _op in BANK.values():
    if _op.transfer != LOCAL and _op.transfer != DOWNLOAD and _op.name not in vars(RemoteBank):
        setattr(RemoteBank, _op.name, _operation(_op))


def _batches(documents: list) -> Iterator[list]:
    """Consecutive batches of documents, each under UPLOAD_BATCH_BYTES encoded
    (a larger document goes alone; the owner's limit decides)."""
    batch: list = []
    size = 0
    for document in documents:
        n = len(json.dumps(encode(document)))
        if batch and size + n > UPLOAD_BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(document)
        size += n
    if batch:
        yield batch


def _combined(a, b):
    """Two reports of one ingest sent in batches, as one: counts added, lists and
    their parts joined, the change merged, the rest the latest batch's."""
    values = {}
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, bool) or not isinstance(x, int | float | list | dict | Change):
            values[field.name] = y or x
        elif isinstance(x, int | float):
            values[field.name] = x + y
        elif isinstance(x, list):
            values[field.name] = [*x, *y]
        elif isinstance(x, Change):
            values[field.name] = x | y
        else:
            merged = dict(x)
            for key, value in y.items():
                merged[key] = merged.get(key, 0) + value if key in merged else value
            values[field.name] = merged
    return type(a)(**values)


# -- RemoteEngine ----------------------------------------------------------------------


class RemoteEngine:
    """The engine's operations on the banks another process serves."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        home: Path | None = None,
        timeout: float | None = 600.0,
        ca_file: str | Path | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.home = home
        self.banks_dir = f"the banks served at {self.url}"
        self._client = OwnerClient(self.url, token, timeout=timeout, ca_file=ca_file)

    def _call(self, name: str, *args, progress=None, cancel=None, **kwargs):
        op = ENGINE[name]
        body = {"args": encode(list(args)), "kwargs": encode(kwargs)}
        path = f"/engram/v1/engine/call/{name}"
        if op.long:
            return self._client.stream(path, progress, cancel, json=body)[0]
        return self._client.post(path, body)

    def banks(self) -> list[BankInfo]:
        return self._call("banks")

    def open_bank(self, name: str) -> RemoteBank:
        info = self._call("open_bank", name)
        return RemoteBank(self._client, info.id, info.name)

    def create_bank(self, name: str, *, background: str = "", agent_name: str = "") -> RemoteBank:
        info = self._call("create_bank", name, background=background, agent_name=agent_name)
        return RemoteBank(self._client, info.id, info.name)

    def rename_bank(self, old: str, new: str) -> Change:
        return self._call("rename_bank", old, new)

    def delete_bank(self, name: str) -> Change:
        return self._call("delete_bank", name)

    def reembed_bank(self, name: str, progress=None, cancel=None) -> Change:
        return self._call("reembed_bank", name, progress=progress, cancel=cancel)

    def import_snapshot(
        self,
        path,
        name: str | None = None,
        replace: bool = False,
        *,
        progress=None,
        cancel=None,
        restore_purged: bool = False,
    ) -> RemoteBank:
        """Upload a `.engram` file; the owner imports it (progress, cancel) and serves it."""
        info = self._client.upload(
            "/engram/v1/snapshots/import",
            Path(path),
            progress,
            cancel,
            name=name,
            replace="true" if replace else None,
            restore_purged="true" if restore_purged else None,
        )
        return RemoteBank(self._client, info.id, info.name)

    def language_model(self) -> OwnersModel:
        return OwnersModel()

    def preload_embedder(self) -> None:
        """Nothing to load here: the owner's model is already warm."""

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemoteEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_remote(bank: Any) -> bool:
    return isinstance(bank, RemoteBank)


Progress = Callable[[int, int, str], None]
