"""Who asked, and how: the request context every engine operation runs in.

A `Caller` is an actor (who: "studio", "cli", an API token's name, with the
MCP client's name where it gave one) and a transport (how it came in). It is
set in one place for each way in, and every write and journal entry reads it
from here (`current_caller()`), never from an argument:

- the studio and the CLI set the process's caller once at start-up
  (`set_process_caller`): every thread they run engine work on inherits it;
- the server's guard sets it per request, from the bearer token
  (core/server/guard.py), and MCP refines it with the client's name
  (core/server/mcp_tools.py);
- `engram mcp` (stdio) sets the process's caller to MCP over stdio.

A local tool that reaches the bank's owner over HTTP (a routed `engram`
command, `engram mcp` bridging to a studio) says who it is with `HOP_HEADER`;
the server believes it only from the owner's own (default) token.
"""

from __future__ import annotations

import contextvars
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

# How an operation came in.
STUDIO = "studio"
CLI = "cli"
HTTP = "http"
MCP = "mcp"  # MCP over streamable HTTP
MCP_STDIO = "mcp-stdio"
PYTHON = "python"  # the engine called directly (a script, a test)
ENGINE = "engine"  # the engine's own upkeep (a server's background rebuilds)
TRANSPORTS = (STUDIO, CLI, HTTP, MCP, MCP_STDIO, PYTHON, ENGINE)
# What a local tool that reached the owner over HTTP may say it was.
HOP_TRANSPORTS = (CLI, MCP_STDIO, STUDIO)
HOP_HEADER = "x-engram-caller"  # "<transport>; <actor, percent-encoded>"

MAX_ACTOR = 100


def clean_name(text: object, limit: int = 60) -> str:
    """A name a client gave (an MCP client's, a token's), made safe to show and
    store: no control or format characters, no surrogates, one line, bounded."""
    text = "".join(
        " " if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") else c
        for c in str(text or "")
    )
    text = " ".join(text.split())
    return text[:limit].rstrip()


@dataclass(frozen=True)
class Caller:
    actor: str
    transport: str

    def with_client(self, client: object) -> Caller:
        """This caller, naming the client program it came through (MCP's clientInfo)."""
        name = clean_name(client)
        if not name or name == self.actor:
            return self
        return replace(self, actor=f"{self.actor} ({name})"[:MAX_ACTOR])


DIRECT = Caller("user", PYTHON)
STUDIO_CALLER = Caller("studio", STUDIO)  # the person at the studio (its runner's tasks)
ENGINE_CALLER = Caller("engram", ENGINE)
_process = DIRECT
_current: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "engram_caller", default=None
)


def current_caller() -> Caller:
    """The caller of the operation running now: the request's, else the process's."""
    return _current.get() or _process


def set_process_caller(caller: Caller) -> None:
    """Who this process acts as when no request says otherwise (the studio, the CLI)."""
    global _process
    _process = caller


def process_caller() -> Caller:
    return _process


@contextmanager
def acting_as(caller: Caller) -> Iterator[Caller]:
    """Run the block as `caller` (this thread and the tasks it starts)."""
    token = _current.set(caller)
    try:
        yield caller
    finally:
        _current.reset(token)


# What an operation's lower layers tell the journal about it (an audit entry's
# summary), collected while `noting()` runs.
_notes: contextvars.ContextVar[list | None] = contextvars.ContextVar("engram_notes", default=None)


@contextmanager
def noting() -> Iterator[list]:
    """Collect what `note` is told during the block."""
    notes: list = []
    token = _notes.set(notes)
    try:
        yield notes
    finally:
        _notes.reset(token)


def note(item: object) -> None:
    notes = _notes.get()
    if notes is not None:
        notes.append(item)


def hop_header(caller: Caller | None = None) -> str:
    """What a local tool sends the owner to say who it is (HOP_HEADER's value)."""
    from urllib.parse import quote

    caller = caller or current_caller()
    return f"{caller.transport}; {quote(caller.actor, safe='')}"


def parse_hop(value: str) -> Caller | None:
    """The caller a HOP_HEADER names, or None when it names none we accept."""
    from urllib.parse import unquote

    transport, _, actor = value.partition(";")
    transport = transport.strip().lower()
    if transport not in HOP_TRANSPORTS:
        return None
    return Caller(clean_name(unquote(actor.strip()), MAX_ACTOR) or transport, transport)
