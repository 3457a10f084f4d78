"""MCP with the SDK's own client: over streamable HTTP on the server (same bearer
token, `/mcp` and the per-bank `/mcp/{bank}/`) and over stdio (`engram mcp
BANK`), both while another process owns the bank (bridged to it) and while
nobody does (opened for the calls, released when idle)."""

from __future__ import annotations

import os
import sys
import time
from contextlib import asynccontextmanager
from urllib.parse import quote

import anyio
import httpx
import pytest

from core import Engine
from tests.server.conftest import TOKEN, serving

# The MCP client is imported in the tests that use it: importing it costs every
# xdist worker a second and more at collection.
pytestmark = pytest.mark.slow

READ_ONLY = {
    "recall",
    "list_banks",
    "get_bank",
    "get_bank_stats",
    "list_memories",
    "get_memory",
    "memory_history",
    "list_documents",
    "get_document",
    "list_tags",
}
DESTRUCTIVE = {"invalidate_memory", "delete_document"}
WRITES = {"retain", "reflect", "update_memory"}


def structured(result) -> object:
    assert not result.is_error, result.content
    data = result.structured_content
    return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data


def error_text(result) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


async def check_tools(session, *, per_bank: bool) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) >= READ_ONLY | DESTRUCTIVE | WRITES
    assert ("create_bank" in tools) is not per_bank
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert bool(hints.destructive_hint) is (name in DESTRUCTIVE), name
        assert len(tool.description) > 30, name  # something a model can act on
        properties = tool.input_schema.get("properties", {})
        assert ("bank" in properties) is (not per_bank and name not in ("list_banks",)), name
        for param, schema in properties.items():
            assert schema.get("description"), f"{name}.{param} has no description"
    assert "ISO 8601" in tools["retain"].input_schema["properties"]["timestamp"]["description"]


async def keep_memory_right(session, extra: dict) -> None:
    """What an agent does to keep its own memory right: retain, recall, correct,
    forget, bring back, and be told clearly what was wrong."""
    retained = structured(
        await session.call_tool(
            "retain",
            {
                "content": "Dana keeps her bees on the roof of the library.",
                "tags": ["user:dana"],
                "metadata": {"source": "chat"},
                "timestamp": "2024-06-01T10:00:00Z",
                **extra,
            },
        )
    )
    assert retained["units_added"] >= 1
    recalled = structured(
        await session.call_tool(
            "recall",
            {
                "query": "Where are Dana's bees?",
                "tags": ["user:dana"],
                "tags_match": "any_strict",
                **extra,
            },
        )
    )
    (memory,) = [r for r in recalled["results"] if "bees" in r["text"]]
    assert memory["tags"] == ["user:dana"] and memory["metadata"] == {"source": "chat"}
    corrected = structured(
        await session.call_tool(
            "update_memory",
            {"memory_id": memory["id"], "text": "Dana keeps her bees on the school roof.", **extra},
        )
    )
    assert corrected["text"] == "Dana keeps her bees on the school roof."
    forgotten = structured(
        await session.call_tool(
            "invalidate_memory", {"memory_id": memory["id"], "reason": "she moved them", **extra}
        )
    )
    assert forgotten["state"] == "invalidated"
    after = structured(await session.call_tool("recall", {"query": "Dana's bees", **extra}))
    assert memory["id"] not in {r["id"] for r in after["results"]}
    history = structured(
        await session.call_tool("memory_history", {"memory_id": memory["id"], **extra})
    )
    # Who: the token and the client over HTTP ("default (mcp)"); `engram mcp` over stdio.
    assert len(history["history"]) >= 2
    assert history["history"][0]["actor"] in ("default (mcp)", "mcp")
    restored = structured(
        await session.call_tool(
            "invalidate_memory", {"memory_id": memory["id"], "restore": True, **extra}
        )
    )
    assert restored["state"] == "valid"
    missing = await session.call_tool("get_memory", {"memory_id": "no-such-memory", **extra})
    assert "no-such-memory" in error_text(missing)
    bad = await session.call_tool("recall", {"query": "x", "tags_match": "sometimes", **extra})
    assert "tags_match" in error_text(bad)
    answer = structured(
        await session.call_tool("reflect", {"query": "Where are the bees?", **extra})
    )
    assert answer["text"]
    stats = structured(await session.call_tool("get_bank_stats", extra))
    assert stats["total_nodes"] >= 1


@asynccontextmanager
async def http_session(url: str):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def test_mcp_over_streamable_http_multi_bank_and_per_bank(served, http, bank_id):
    async def main():
        async with http_session(served.url + "/mcp") as session:
            await check_tools(session, per_bank=False)
            created = structured(
                await session.call_tool("create_bank", {"bank": bank_id, "mission": "Bees."})
            )
            assert created["mission"] == "Bees."
            await keep_memory_right(session, {"bank": bank_id})
            missing = await session.call_tool("recall", {"query": "x", "bank": "nobody"})
            assert "nobody" in error_text(missing) and str(served.engine.home) not in error_text(
                missing
            )
            assert bank_id in structured(await session.call_tool("list_banks", {}))
        other = f"{bank_id}-solo"
        async with http_session(f"{served.url}/mcp/{quote(other)}/") as session:
            await check_tools(session, per_bank=True)
            await keep_memory_right(session, {})  # the bank is made by its first retain

    anyio.run(main)
    assert any(name == bank_id for name, _ in served.changes)  # writes reach the owner
    r = httpx.post(
        served.url + "/mcp", json={}, headers={"Authorization": "Bearer wrong"}, timeout=120
    )
    assert r.status_code == 401


def wait_until(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def can_open(home, embedder, bank: str) -> bool:
    from core.types import BankLockedError

    try:
        with Engine(home, embedder=embedder) as engine:
            engine.open_bank(bank).close()
        return True
    except BankLockedError:
        return False


def test_mcp_over_stdio_bridges_to_the_owner_and_never_holds_the_bank_idle(tmp_path, embedder):
    """`engram mcp desk` while `engram serve` owns the bank: the calls go through
    the owner, which sees the writes. Once the owner stops, the calls open the
    bank themselves, and between calls the bank is free for the studio."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank("desk")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app.main", "--home", str(home), "mcp", "desk"],
        env={
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "QT_QPA_PLATFORM": "offscreen",
            "ENGRAM_API_TOKEN": TOKEN,  # what the owner below expects
        },
    )

    async def main(owner_stops):
        async with Client(params, read_timeout_seconds=300) as client:
            await check_tools(client, per_bank=True)
            await keep_memory_right(client, {})  # bridged: the owner has the bank
            await anyio.to_thread.run_sync(owner_stops)
            recalled = structured(await client.call_tool("recall", {"query": "Dana's bees"}))
            assert any("bees" in r["text"] for r in recalled["results"])  # now opened here
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: can_open(home, embedder, "desk"))
            )  # idle: released, although the agent still runs
            again = structured(await client.call_tool("list_memories", {}))
            assert again["total"] >= 1  # and opened again for the next call

    with serving(home, embedder, headless=True) as owner:
        owner.banks.get("desk")
        owner.banks.advertise(owner.url, None)  # routed here; the token comes from the env
        stopped = []

        def owner_stops():
            owner.handle.stop()
            owner.banks.close()
            stopped.append(True)

        anyio.run(main, owner_stops)
        assert stopped
    with Engine(home, embedder=embedder) as engine:
        bank = engine.open_bank("desk")
        assert any("school roof" in u.text for u in bank.units(limit=None))
        # Bridged from stdio: the owner heard who it was (`engram mcp`; the SDK's
        # client names itself "mcp"), as the calls answered here say too.
        assert {e.actor for e in bank.audit()} == {"mcp"}
        assert {(e.actor, e.transport) for e in bank.activity()} == {("mcp", "mcp-stdio")}
        assert bank.verify().ok
