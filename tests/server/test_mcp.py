"""MCP with the SDK's own client: over streamable HTTP on the server (same bearer
token) and over stdio (`engram mcp BANK`)."""

from __future__ import annotations

import os
import sys

import anyio
import httpx
import pytest

from core import Engine
from tests.server.conftest import TOKEN

# The MCP client is imported in the tests that use it: importing it costs every
# xdist worker a second and more at collection.

TOOLS = {"retain", "recall", "reflect", "list_banks", "list_memories"}


def structured(result) -> object:
    assert not result.is_error, result.content
    data = result.structured_content
    return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data


async def exercise(session, bank: str | None) -> None:
    """The five tools, as an agent would use them."""
    listed = await session.list_tools()
    names = {t.name for t in listed.tools}
    assert names >= TOOLS
    read_only = {t.name for t in listed.tools if t.annotations and t.annotations.read_only_hint}
    assert {"list_banks", "list_memories", "recall"} <= read_only
    extra = {"bank": bank} if bank else {}
    retained = structured(
        await session.call_tool(
            "retain",
            {"content": "Dana keeps her bees on the roof of the library.", **extra},
        )
    )
    assert retained["units_added"] >= 1
    recalled = structured(
        await session.call_tool("recall", {"query": "Where are Dana's bees?", **extra})
    )
    assert any("bees" in r["text"] for r in recalled["results"])
    memories = structured(await session.call_tool("list_memories", extra))
    assert memories["total"] >= 1
    answer = structured(
        await session.call_tool("reflect", {"query": "Where are the bees?", **extra})
    )
    assert answer["text"]
    banks = structured(await session.call_tool("list_banks", {}))
    assert bank is None or bank in banks


@pytest.mark.slow
def test_mcp_over_streamable_http(served, http, bank_id):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()

    async def main():
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            client,
            streamable_http_client(served.url + "/mcp", http_client=client) as (
                read,
                write,
                *_,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await exercise(session, bank_id)
            missing = await session.call_tool("recall", {"query": "x", "bank": "nobody"})
            assert missing.is_error and "nobody" in missing.content[0].text

    anyio.run(main)
    assert any(name == bank_id for name, _ in served.changes)  # writes reach the owner
    r = httpx.post(
        served.url + "/mcp", json={}, headers={"Authorization": "Bearer wrong"}, timeout=120
    )
    assert r.status_code == 401


@pytest.mark.slow
def test_mcp_over_stdio(tmp_path, embedder):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank("desk")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app.main", "--home", str(home), "mcp", "desk"],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "QT_QPA_PLATFORM": "offscreen"},
    )

    async def main():
        async with Client(params, read_timeout_seconds=300) as client:
            await exercise(client, None)

    anyio.run(main)
    with Engine(home, embedder=embedder) as engine:
        bank = engine.open_bank("desk")
        assert any("bees" in u.text for u in bank.units(limit=None))
        assert bank.verify().ok
