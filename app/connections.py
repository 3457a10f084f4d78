"""Servers the studio connects to: their addresses, their tokens, their banks.

A `Connection` is what File → Connect to server… asks for: the server's URL
and, for an https server whose certificate no system authority signed, the CA
file to verify it with (never "don't verify"). Connections are remembered in
QSettings; their tokens are not: `TokenStore` keeps them in the OS keyring
(the `keyring` package: Keychain, Windows Credential Locker, Secret Service)
and, on a machine without one, in a file only its owner can read (0600) in the
data folder.

`RemoteServers` is the studio's list of connected servers: each one's
`RemoteEngine`, its banks as last listed, and whether it answers. The bank
list shows them beside the local banks; the window opens a bank through the
engine of the server that lists it.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from PySide6.QtCore import QObject, QSettings, Signal

from core import InvalidInputError

if TYPE_CHECKING:
    from app.runner import Runner
    from core import BankInfo, RemoteEngine

SETTINGS_KEY = "remote/connections"
KEYRING_SERVICE = "Engram Studio"
TOKENS_FILE = "remote-tokens.json"  # in the data folder, mode 0600, without a keyring


@dataclass(frozen=True)
class Connection:
    url: str  # normalised: scheme://host:port, no trailing slash
    ca_file: str = ""  # a PEM file of the CA that signed an https server's certificate

    @property
    def label(self) -> str:
        """host:port, as the bank list and the status bar name the server."""
        return urlsplit(self.url).netloc

    @property
    def secure(self) -> bool:
        return self.url.startswith("https://")


def normalise_url(text: str) -> str:
    """The URL a person typed as the studio keeps it: a scheme (http:// when none is
    given), a host, the port if any; refused (naming what is wrong) otherwise."""
    text = text.strip()
    if not text:
        raise InvalidInputError("the server's URL is empty")
    if "://" not in text:
        text = f"http://{text}"
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise InvalidInputError(
            f"the URL must start with http:// or https://, not {parts.scheme}://"
        )
    if not parts.hostname:
        raise InvalidInputError(f"the URL {text!r} names no host")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise InvalidInputError(f"the port in {text!r} is not a number from 0 to 65535") from None
    if parts.path.strip("/") or parts.query:
        raise InvalidInputError(
            f"give the server's address only (like https://host:8888), not a path: {text!r}"
        )
    return f"{parts.scheme}://{parts.netloc}"


def saved_connections(settings: QSettings | None = None) -> list[Connection]:
    settings = settings or QSettings()
    try:
        rows = json.loads(str(settings.value(SETTINGS_KEY, "[]")))
    except ValueError:
        return []
    out = []
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("url"), str):
            out.append(Connection(row["url"], str(row.get("ca_file") or "")))
    return out


def save_connections(connections: list[Connection], settings: QSettings | None = None) -> None:
    settings = settings or QSettings()
    rows = [{"url": c.url, "ca_file": c.ca_file} for c in connections]
    settings.setValue(SETTINGS_KEY, json.dumps(rows))
    settings.sync()


class TokenStore:
    """Tokens by server URL: the OS keyring where there is one, else a 0600 file."""

    def __init__(self, home: Path) -> None:
        self.file = Path(home) / TOKENS_FILE

    @property
    def where(self) -> str:
        """Where tokens go, for the connect dialog to say."""
        backend = _keyring()
        return f"the system keyring ({backend.name})" if backend is not None else str(self.file)

    def get(self, url: str) -> str:
        backend = _keyring()
        if backend is not None:
            with contextlib.suppress(Exception):  # a locked or broken keyring: the file
                token = backend.get_password(KEYRING_SERVICE, url)
                if token:
                    return token
        return self._read().get(url, "")

    def set(self, url: str, token: str) -> None:
        backend = _keyring()
        if backend is not None:
            try:
                backend.set_password(KEYRING_SERVICE, url, token)
            except Exception:  # noqa: BLE001 - refused (locked, no session bus): the file
                pass
            else:
                self._write({k: v for k, v in self._read().items() if k != url})
                return
        self._write({**self._read(), url: token})

    def forget(self, url: str) -> None:
        backend = _keyring()
        if backend is not None:
            with contextlib.suppress(Exception):
                backend.delete_password(KEYRING_SERVICE, url)
        tokens = self._read()
        if url in tokens:
            del tokens[url]
            self._write(tokens)

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.file.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write(self, tokens: dict[str, str]) -> None:
        if not tokens and not self.file.exists():
            return
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(self.file.name + ".tmp")
        # Created 0600 (never readable by others, not even for a moment), then renamed.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(tokens, out)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.file)


def _keyring() -> Any:
    """The OS keyring's backend, or None where there is none (keyring's `fail`
    backend, or a chainer with nothing in it)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring):
        return None
    if getattr(backend, "backends", None) == []:
        return None
    return backend


# -- the servers the studio is connected to ---------------------------------------------


@dataclass(eq=False)
class RemoteServer:
    connection: Connection
    engine: RemoteEngine
    banks: list[BankInfo] = field(default_factory=list)
    error: str = ""  # why the last listing failed ("" when it answered)
    listed: bool = False

    @property
    def url(self) -> str:
        return self.connection.url


@dataclass(frozen=True)
class RemoteListing:
    """A bank as a server lists it: what the bank list hands the window to open."""

    url: str
    info: BankInfo

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def id(self) -> str:
        return self.info.id


class RemoteServers(QObject):
    """The connected servers, their banks, their state. Listing runs in the runner."""

    changed = Signal()  # a server was connected, listed, failed or disconnected
    connected = Signal(str)  # url: listed for the first time after connecting

    def __init__(self, runner: Runner, home: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.runner = runner
        self.tokens = TokenStore(home)
        self.servers: dict[str, RemoteServer] = {}

    def connect_to(self, connection: Connection, token: str, *, remember: bool = True) -> None:
        """Connect (list its banks off the UI thread); remembered in settings (the token
        in the keyring) when `remember`. Replaces a connection to the same URL."""
        from core import RemoteEngine

        self.disconnect(connection.url, keep=True)
        if remember:
            kept = [c for c in saved_connections() if c.url != connection.url]
            save_connections([*kept, connection])
            self.tokens.set(connection.url, token)
        try:
            engine = RemoteEngine(connection.url, token, timeout=120, ca_file=connection.ca_file)
        except InvalidInputError as error:  # an unreadable CA file
            server = RemoteServer(connection, None, error=str(error))  # type: ignore[arg-type]
            self.servers[connection.url] = server
            self.changed.emit()
            return
        self.servers[connection.url] = RemoteServer(connection, engine)
        self.changed.emit()
        self.reload(connection.url)

    def reconnect_saved(self) -> None:
        """At start: the remembered servers, with their stored tokens."""
        for connection in saved_connections():
            if connection.url not in self.servers:
                self.connect_to(connection, self.tokens.get(connection.url), remember=False)

    def reload(self, url: str | None = None) -> None:
        """List the banks of one server (or every one) again."""
        for server in [self.servers[url]] if url in self.servers else list(self.servers.values()):
            if server.engine is None:
                continue
            engine = server.engine
            self.runner.run_query(
                engine.banks,
                lambda infos, s=server: self._listed(s, infos, ""),
                lambda error, s=server: self._listed(s, [], _reason(error)),
                latest=(self, f"list {server.url}"),
            )

    def _listed(self, server: RemoteServer, infos: list[BankInfo], error: str) -> None:
        if self.servers.get(server.url) is not server:
            return  # disconnected meanwhile
        first = not server.listed and not error
        server.banks, server.error = (list(infos), "") if not error else (server.banks, error)
        server.listed = server.listed or not error
        self.changed.emit()
        if first:
            self.connected.emit(server.url)

    def disconnect(self, url: str, *, keep: bool = True) -> None:
        """Stop using a server; `keep=False` also forgets it (settings and token)."""
        server = self.servers.pop(url, None)
        if server is not None and server.engine is not None:
            engine = server.engine
            self.runner.run_query(engine.close, on_error=lambda _e: None)
        if not keep:
            save_connections([c for c in saved_connections() if c.url != url])
            self.tokens.forget(url)
        if server is not None:
            self.changed.emit()

    def engine(self, url: str) -> RemoteEngine | None:
        server = self.servers.get(url)
        return server.engine if server is not None else None

    def close(self) -> None:
        for server in self.servers.values():
            if server.engine is not None:
                server.engine.close()
        self.servers.clear()


def _reason(error: BaseException) -> str:
    from app.runner import describe

    return describe(error)
