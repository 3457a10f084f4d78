"""`engram mcp BANK`: one bank's tools on stdin/stdout, for the desktop agents
that start it (Claude Desktop, Claude Code, Cursor), whoever has the bank open.

Each tool call goes where the bank is:

- another process owns it and serves it (the studio, `engram serve`): the call
  is bridged to that owner's per-bank MCP endpoint (`/mcp/{bank}/`, with the
  token the owner names in the bank's lock), and the owner's answer returned —
  its panes see the agent's writes live;
- nobody does: this process opens the bank for the call (`LeasedBanks`) and
  closes it again once no call has come for `IDLE` seconds (and the
  observation rebuilds the calls queued are done), so a desktop agent kept
  running all day never locks the studio out of its bank.

The owner is looked up again for every call: open the studio while the agent
runs and the next call goes through it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from core.engine import Engine
from core.server.errors import public
from core.server.mcp_tools import build_mcp
from core.server.mcp_wire import run_guarded
from core.server.owner import Owner, find_owner
from core.server.served import ServedBanks
from core.types import EngramError

log = logging.getLogger(__name__)

IDLE = 3.0  # seconds without a call before the bank is closed again


class LeasedBanks(ServedBanks):
    """Banks opened for the calls that need them and closed when idle."""

    def __init__(self, engine: Engine, idle: float = IDLE) -> None:
        super().__init__(engine, open_on_demand=True)
        self.idle = idle
        self._active = 0
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._releaser = threading.Thread(
            target=self._release_loop, name="engram-lease", daemon=True
        )
        self._releaser.start()

    @contextmanager
    def call(self) -> Iterator[None]:
        """Around each tool call: no bank closes while one runs."""
        with self._guard:
            self._active += 1
        try:
            yield
        finally:
            with self._guard:
                self._active -= 1
                self._last = time.monotonic()

    def held(self) -> list[str]:
        with self._guard:
            return [n for n in self._opened if n in self._banks and not self._banks[n].closed]

    def release_idle(self) -> list[str]:
        """Close the banks opened here if nothing uses them; the names closed."""
        rebuilding = self.rebuilds is not None and self.rebuilds.busy()
        if rebuilding:
            return []
        closed = []
        for name in self.held():
            lock = self.lock(name)
            if not lock.acquire(blocking=False):
                continue  # a write or a rebuild holds it
            try:
                # Under the guard, so a call starting now waits for the close and
                # then opens the bank afresh.
                with self._guard:
                    if self._active or time.monotonic() - self._last < self.idle:
                        return closed
                    bank = self._banks.pop(name, None)
                    self._opened.discard(name)
                    if bank is not None and not bank.closed:
                        bank.close()
                        closed.append(name)
            finally:
                lock.release()
        return closed

    def _release_loop(self) -> None:
        while not self._stop.wait(max(0.05, self.idle / 4)):
            try:
                self.release_idle()
            except Exception:  # noqa: BLE001 - the releaser must keep running
                log.exception("closing an idle bank failed")

    def close(self) -> None:
        self._stop.set()
        self._releaser.join(timeout=10)
        super().close()


class BridgingServer(MCPServer):
    """The stdio server: a call goes to the bank's owner when there is one."""

    bank: str = ""
    leased: LeasedBanks | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None):
        assert self.leased is not None
        try:
            owner = find_owner(self.leased.engine.home, self.bank)
        except EngramError as error:  # an owner it must not send the token to
            raise ToolError(public(str(error))) from None
        if owner is not None:
            return await self._bridge(owner, name, arguments)
        with self.leased.call():
            return await super().call_tool(name, arguments, context)

    async def _bridge(self, owner: Owner, name: str, arguments: dict[str, Any]):
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        from core.context import HOP_HEADER, hop_header

        url = f"{owner.url}/mcp/{quote(self.bank, safe='')}/"
        try:
            token = owner.token()
        except EngramError as error:  # it says what to do
            raise ToolError(public(str(error))) from None
        try:
            # The SDK's own timeouts: 30 s to connect, 300 s between reads.
            # Who asks goes along: the owner records `mcp (client)` over stdio, as here.
            http = create_mcp_http_client(
                headers={"Authorization": f"Bearer {token}", HOP_HEADER: hop_header()}
            )
            async with (
                http,
                streamable_http_client(url, http_client=http) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.call_tool(name, arguments)
        except ToolError:
            raise
        except Exception as error:  # noqa: BLE001 - say where the call could not go
            log.warning("bridging %s to %s failed", name, owner.url, exc_info=True)
            raise ToolError(
                f"bank {self.bank!r} is open in another process (PID {owner.pid}) that serves it "
                f"at {owner.url}, and it did not answer: {type(error).__name__}"
            ) from None


def run_stdio(engine: Engine, bank: str, *, idle: float = IDLE) -> None:
    """Serve `bank`'s tools on stdin/stdout until the client closes them."""
    import anyio

    leased = LeasedBanks(engine, idle)
    server = build_mcp(leased, per_bank=True, default_bank=bank, server_class=BridgingServer)
    server.bank, server.leased = bank, leased
    try:
        # Every line answered, the unreadable ones too (core/server/mcp_wire.py).
        anyio.run(run_guarded, server)
    finally:
        leased.close()
