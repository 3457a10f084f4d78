"""The bearer token every request must carry.

One per data folder, kept in `home/api-token` with owner-only permissions;
`ENGRAM_API_TOKEN` replaces it (scripts, CI, a server bound beyond loopback).
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

ENV = "ENGRAM_API_TOKEN"
TOKEN_FILE = "api-token"


def token_file(home: str | Path) -> Path:
    return Path(home) / TOKEN_FILE


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


def token_matches(expected: str, header: str | None) -> bool:
    """Whether an `Authorization` header carries the token (constant-time compare)."""
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), expected.encode())
