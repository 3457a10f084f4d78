"""MCP tools over the served banks (the official `mcp` SDK's MCPServer):
`retain`, `recall`, `reflect`, and read-only `list_banks`, `list_memories`.

The same server answers over streamable HTTP (mounted on the HTTP app, behind
the same bearer token) and over stdio (`engram mcp BANK`, where BANK is the
default for tools called without one).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from core.server.mcp_caller import CallerMiddleware
from core.server.models import MemoryItem, RetainRequest
from core.server.retain import check_request, retain
from core.server.served import ServedBanks
from core.server.version import ENGRAM_VERSION
from core.types import EngramError
from core.vocabulary import LEVELS, NETWORKS

Network = Literal[NETWORKS]
READ_ONLY = ToolAnnotations(read_only_hint=True)


def build_mcp(served: ServedBanks, default_bank: str | None = None) -> MCPServer:
    server = MCPServer(
        "engram",
        version=ENGRAM_VERSION,
        log_level="WARNING",
        instructions="Long-term memory in Engram banks: retain what happened, recall "
        "what is relevant to a question, reflect to answer from memory.",
        # Each call runs as its caller: the token's name and the client's (the journal's actor).
        middleware=[CallerMiddleware()],
    )

    def bank_name(bank: str | None) -> str:
        name = bank or default_bank
        if not name:
            raise ToolError("name the bank (list_banks shows them)")
        return name

    def engine_call(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except EngramError as error:
            raise ToolError(str(error)) from error

    @server.tool(name="retain")
    def retain_memory(
        content: str,
        bank: str | None = None,
        timestamp: str | None = None,
        context: str | None = None,
        document_id: str | None = None,
        speaker: str | None = None,
    ) -> dict[str, Any]:
        """Store something that happened or was said. Answers once it is committed."""
        name = bank_name(bank)
        item = MemoryItem.model_validate(
            {
                "content": content,
                "timestamp": timestamp,
                "context": context,
                "document_id": document_id,
                "metadata": {"speaker": speaker} if speaker else None,
            }
        )
        request = RetainRequest(items=[item])
        mode = check_request(request)

        def run():
            with served.using(name) as held:
                change, summary = retain(held, request, mode)
            served.changed(name, change)
            return summary

        return engine_call(run)

    @server.tool(annotations=READ_ONLY)
    def recall(
        query: str,
        bank: str | None = None,
        max_tokens: int = 1024,
        types: list[Network] | None = None,
        budget: Literal[tuple(LEVELS)] = "mid",
    ) -> dict[str, Any]:
        """The remembered facts most relevant to `query`, within `max_tokens`."""
        held = engine_call(served.get, bank_name(bank))
        result = engine_call(held.recall, query, max_tokens, types, level=budget)
        return {
            "results": [
                {
                    "id": item.unit_id,
                    "text": item.text,
                    "type": item.network,
                    "occurred_start": item.occurred_start.isoformat()
                    if item.occurred_start
                    else None,
                    "score": item.score,
                }
                for item in result.items
            ]
        }

    @server.tool()
    def reflect(query: str, bank: str | None = None) -> dict[str, Any]:
        """Answer `query` from memory under the bank's disposition; the opinions it
        forms are kept."""
        name = bank_name(bank)

        def run():
            with served.using(name) as held:
                reflection = held.reflect(query, commit=False)
                change = held.commit_reflection(reflection)
            served.changed(name, change)
            return reflection

        reflection = engine_call(run)
        return {
            "text": reflection.answer,
            "mode": reflection.mode,
            "based_on": [e.unit_id for e in reflection.evidence],
        }

    @server.tool(annotations=READ_ONLY)
    def list_banks() -> list[str]:
        """The banks this server serves."""
        return served.names()

    @server.tool(annotations=READ_ONLY)
    def list_memories(
        bank: str | None = None,
        type: Network | None = None,
        q: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> dict[str, Any]:
        """A page of stored facts, most recent first."""
        held = engine_call(served.get, bank_name(bank))
        units = engine_call(
            held.units,
            type,
            text=q,
            order="occurred_start",
            descending=True,
            offset=offset,
            limit=min(max(limit, 0), 1000),
        )
        return {
            "total": held.count(type, text=q),
            "items": [
                {
                    "id": u.id,
                    "text": u.text,
                    "type": str(u.network),
                    "occurred_start": u.occurred_start.isoformat() if u.occurred_start else None,
                }
                for u in units
            ],
        }

    return server


def streamable_http_app(served: ServedBanks) -> tuple[Any, Any]:
    """The MCP app to mount (its endpoint is `/mcp`) and the context manager its
    session manager must run in (the host app's lifespan)."""
    server = build_mcp(served)
    app = server.streamable_http_app(streamable_http_path="/mcp")

    def session() -> AbstractAsyncContextManager[None]:
        return server.session_manager.run()

    return app, session


def run_stdio(served: ServedBanks, bank: str) -> None:
    import anyio

    anyio.run(build_mcp(served, default_bank=bank).run_stdio_async)
