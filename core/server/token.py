"""The bearer tokens a server accepts, and whose each one is.

The default token: one per data folder, kept in `home/api-token` with
owner-only permissions (local tools — a routed `engram` command, the studio's
"how to connect" — read it there); `ENGRAM_API_TOKEN` replaces it (scripts,
CI, a server bound beyond loopback). Its name is "default".

Named tokens (`engram tokens add support-bot`), one per agent, so each
request's actor is the agent that sent it: kept in `home/api-tokens.json`
(owner-only) as SHA-256 hashes — a token is shown once, when it is made, and
never stored. A token is 32 random bytes, so an unsalted hash is as strong as
the token. Checking a header hashes it and compares it with every token's hash
in constant time, whichever matches; a running server re-reads the file when
it changes, so a revoked token is refused from its next request on.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from core.types import InvalidInputError

ENV = "ENGRAM_API_TOKEN"
TOKEN_FILE = "api-token"
NAMED_FILE = "api-tokens.json"
DEFAULT_NAME = "default"
NAME_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


def token_file(home: str | Path) -> Path:
    return Path(home) / TOKEN_FILE


def named_file(home: str | Path) -> Path:
    return Path(home) / NAMED_FILE


def api_token(home: str | Path) -> str:
    """`ENGRAM_API_TOKEN` if set, else the folder's token (created 0600 on first use)."""
    env = os.environ.get(ENV, "").strip()
    if env:
        return env
    path = token_file(home)
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    try:
        # O_EXCL: two processes starting at once agree on the first one's token.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return token


def _read(path: Path) -> str:
    token = path.read_text("utf-8").strip()
    if not token:
        raise ValueError(f"{path} is empty: delete it and a new token is made")
    return token


def bearer(header: str | None) -> str | None:
    """The token an `Authorization: Bearer …` header carries, or None."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def token_matches(expected: str, header: str | None) -> bool:
    """Whether an `Authorization` header carries the token (constant-time compare)."""
    value = bearer(header)
    return value is not None and hmac.compare_digest(value.encode(), expected.encode())


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


# -- named tokens ------------------------------------------------------------------


class TokenError(InvalidInputError):
    """A token name refused, taken, or unknown; the message says which."""


@dataclass(frozen=True)
class TokenInfo:
    name: str
    created_at: str  # ISO 8601, UTC; "" for the default token
    default: bool = False
    from_env: bool = False  # the default token comes from ENGRAM_API_TOKEN


def check_name(name: str) -> str:
    if name == DEFAULT_NAME:
        raise TokenError(f"{DEFAULT_NAME!r} is the data folder's own token: pick another name")
    if not NAME_RULE.fullmatch(name or ""):
        raise TokenError(
            f"a token name is 1 to 40 letters, digits, '.', '_' or '-', starting with a"
            f" letter or digit; got {name!r}"
        )
    return name


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    """Serialise changes to the token file between processes (`engram tokens add` twice).
    filelock, as the bank and names locks: flock on Unix, msvcrt on Windows (which has
    no fcntl: `engram tokens add` failed there on its import)."""
    from filelock import FileLock

    home.mkdir(parents=True, exist_ok=True)
    with FileLock(home / (NAMED_FILE + ".lock"), mode=0o600):
        yield


def _load(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as error:
        raise TokenError(f"{path} cannot be read ({error}): fix or delete it") from None
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list):
        raise TokenError(f"{path} holds no token list: fix or delete it")
    return [
        t
        for t in tokens
        if isinstance(t, dict)
        and isinstance(t.get("name"), str)
        and isinstance(t.get("sha256"), str)
    ]


def _save(path: Path, tokens: list[dict]) -> None:
    temp = path.with_name(path.name + f".{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"version": 1, "tokens": tokens}, out, indent=1)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)


def add_token(home: str | Path, name: str) -> str:
    """Make a token named `name` and return it: the only time it is seen."""
    check_name(name)
    home = Path(home)
    with _locked(home):
        tokens = _load(named_file(home))
        if any(t["name"] == name for t in tokens):
            raise TokenError(
                f"a token named {name!r} exists: revoke it first, or pick another name"
            )
        secret = secrets.token_urlsafe(32)
        tokens.append(
            {
                "name": name,
                "sha256": _digest(secret).hex(),
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
        _save(named_file(home), tokens)
    return secret


def revoke_token(home: str | Path, name: str) -> None:
    if name == DEFAULT_NAME:
        raise TokenError(
            f"the default token cannot be revoked; to replace it, delete {token_file(home)}"
            " (a new one is made) and restart what serves the banks"
        )
    home = Path(home)
    with _locked(home):
        tokens = _load(named_file(home))
        kept = [t for t in tokens if t["name"] != name]
        if len(kept) == len(tokens):
            raise TokenError(f"no token named {name!r} (engram tokens list shows them)")
        _save(named_file(home), kept)


def list_tokens(home: str | Path) -> list[TokenInfo]:
    """The default token first, then the named ones in the order they were made."""
    from_env = bool(os.environ.get(ENV, "").strip())
    return [
        TokenInfo(DEFAULT_NAME, "", default=True, from_env=from_env),
        *(TokenInfo(t["name"], str(t.get("created_at", ""))) for t in _load(named_file(home))),
    ]


class TokenRing:
    """What a server checks a request's bearer token against: the default token
    and the named ones in the data folder's token file (re-read when it changes)."""

    def __init__(self, default: str, home: str | Path | None = None) -> None:
        self._default = _digest(default)
        self._path = named_file(home) if home is not None else None
        self._stamp: tuple | None = None
        self._named: list[tuple[str, bytes]] = []
        self._guard = threading.Lock()

    @classmethod
    def for_home(cls, home: str | Path) -> TokenRing:
        return cls(api_token(home), home)

    def _current(self) -> list[tuple[str, bytes]]:
        if self._path is None:
            return []
        try:
            st = self._path.stat()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        with self._guard:
            if stamp != self._stamp:
                named: list[tuple[str, bytes]] = []
                if stamp is not None:
                    try:
                        tokens = _load(self._path)
                    except TokenError:
                        tokens = []  # a damaged file admits no named token
                    for t in tokens:
                        with contextlib.suppress(ValueError):
                            named.append((t["name"], bytes.fromhex(t["sha256"])))
                self._named, self._stamp = named, stamp
            return self._named

    def identify(self, header: str | None) -> str | None:
        """The name of the token an `Authorization` header carries, or None (no
        token, or one this server does not accept). Every hash is compared, in
        constant time, so the time taken says nothing about which token matched."""
        value = bearer(header)
        if value is None:
            return None
        digest = _digest(value)
        found = DEFAULT_NAME if hmac.compare_digest(digest, self._default) else None
        for name, stored in self._current():
            if hmac.compare_digest(digest, stored) and found is None:
                found = name
        return found
