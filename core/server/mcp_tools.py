"""MCP tools over the served banks (the official `mcp` SDK's MCPServer):
`retain`, `recall`, `reflect`, and read-only `list_banks`, `list_memories`.

The same server answers over streamable HTTP (mounted on the HTTP app, behind
the same bearer token) and over stdio (`engram mcp BANK`, where BANK is the
default for tools called without one).

Tools are coroutines: each waits in its bank's queue on the event loop (the
HTTP requests' queue, when mounted there) and then runs the engine in a worker
thread, so a retain waiting for the bank's lock holds no thread. Arguments get
the HTTP API's limits (core/limits.py): a tool error naming the argument.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from core import limits
from core.server.admission import Admission, Busy
from core.server.models import MemoryItem, RetainRequest
from core.server.retain import check_request, retain
from core.server.served import ServedBanks
from core.server.version import ENGRAM_VERSION
from core.types import EngramError
from core.vocabulary import LEVELS, NETWORKS

Network = Literal[NETWORKS]
READ_ONLY = ToolAnnotations(read_only_hint=True)


def build_mcp(
    served: ServedBanks, default_bank: str | None = None, admission: Admission | None = None
) -> MCPServer:
    server = MCPServer(
        "engram",
        version=ENGRAM_VERSION,
        log_level="WARNING",
        instructions="Long-term memory in Engram banks: retain what happened, recall "
        "what is relevant to a question, reflect to answer from memory.",
    )
    # The HTTP app's, when mounted there: MCP and HTTP requests share each bank's queue.
    admission = admission or Admission(served.lock_of)

    def bank_name(bank: str | None) -> str:
        name = bank or default_bank
        if not name:
            raise ToolError("name the bank (list_banks shows them)")
        return name

    def checked(**arguments: Any) -> None:
        """Every argument fit to store (and to echo in an error) before anything runs."""
        problem = limits.first_unstorable(arguments)
        if problem is not None:
            raise ToolError(str(problem))

    async def run(name: str, work, *, writes: bool):
        """`work()` in a worker thread once `name`'s queue admits it: a write waits
        for the bank's lock on the event loop, holding no thread."""
        queue = admission.writing(name) if writes else admission.reading(name)
        try:
            async with queue:
                return await anyio.to_thread.run_sync(work)
        except Busy as busy:
            raise ToolError(str(busy)) from None
        except EngramError as error:
            raise ToolError(str(error)) from error

    @server.tool(name="retain")
    async def retain_memory(
        content: str,
        bank: str | None = None,
        timestamp: str | None = None,
        context: str | None = None,
        document_id: str | None = None,
        speaker: str | None = None,
    ) -> dict[str, Any]:
        """Store something that happened or was said. Answers once it is committed."""
        checked(
            content=content, bank=bank, timestamp=timestamp, context=context,
            document_id=document_id, speaker=speaker,
        )  # fmt: skip
        name = bank_name(bank)
        try:
            item = MemoryItem.model_validate(
                {
                    "content": content,
                    "timestamp": timestamp,
                    "context": context,
                    "document_id": document_id,
                    "metadata": {"speaker": speaker} if speaker else None,
                }
            )
        except ValidationError as error:
            raise ToolError(_fields(error)) from None
        request = RetainRequest(items=[item])
        mode = check_request(request)

        def work():
            with served.using(name) as held:
                change, summary = retain(held, request, mode)
            served.changed(name, change)
            return summary

        return await run(name, work, writes=True)

    @server.tool(annotations=READ_ONLY)
    async def recall(
        query: str,
        bank: str | None = None,
        max_tokens: Annotated[int, Field(ge=1, le=limits.PAGE)] = 1024,
        types: list[Network] | None = None,
        budget: Literal[tuple(LEVELS)] = "mid",
    ) -> dict[str, Any]:
        """The remembered facts most relevant to `query`, within `max_tokens`."""
        checked(query=query, bank=bank)
        name = bank_name(bank)

        def work():
            return served.get(name).recall(query, max_tokens, types, level=budget)

        result = await run(name, work, writes=False)
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
    async def reflect(query: str, bank: str | None = None) -> dict[str, Any]:
        """Answer `query` from memory under the bank's disposition; the opinions it
        forms are kept."""
        checked(query=query, bank=bank)
        name = bank_name(bank)

        def work():
            with served.using(name) as held:
                reflection = held.reflect(query, commit=False)
                change = held.commit_reflection(reflection)
            served.changed(name, change)
            return reflection

        reflection = await run(name, work, writes=True)
        return {
            "text": reflection.answer,
            "mode": reflection.mode,
            "based_on": [e.unit_id for e in reflection.evidence],
        }

    @server.tool(annotations=READ_ONLY)
    async def list_banks() -> list[str]:
        """The banks this server serves."""
        return await anyio.to_thread.run_sync(served.names)

    @server.tool(annotations=READ_ONLY)
    async def list_memories(
        bank: str | None = None,
        type: Network | None = None,
        q: str | None = None,
        limit: Annotated[int, Field(ge=0, le=1000)] = 50,
        offset: Annotated[int, Field(ge=0, le=limits.OFFSET)] = 0,
    ) -> dict[str, Any]:
        """A page of stored facts, most recent first."""
        checked(bank=bank, q=q)
        name = bank_name(bank)

        def work():
            held = served.get(name)
            units = held.units(
                type, text=q, order="occurred_start", descending=True, offset=offset, limit=limit
            )
            return held.count(type, text=q), units

        total, units = await run(name, work, writes=False)
        return {
            "total": total,
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


def _fields(error: ValidationError) -> str:
    """A validation error as one line naming each field (not echoing the input)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'] if not str(p).startswith(('constrained', 'list[')))}:"
        f" {e['msg']}"
        for e in error.errors()
    )


def streamable_http_app(served: ServedBanks, admission: Admission) -> tuple[Any, Any]:
    """The MCP app to mount (its endpoint is `/mcp`) and the context manager its
    session manager must run in (the host app's lifespan)."""
    server = build_mcp(served, admission=admission)
    app = server.streamable_http_app(streamable_http_path="/mcp")

    def session() -> AbstractAsyncContextManager[None]:
        return server.session_manager.run()

    return app, session


def run_stdio(served: ServedBanks, bank: str) -> None:
    anyio.run(build_mcp(served, default_bank=bank).run_stdio_async)
