"""MCP tools over the served banks (the official `mcp` SDK's MCPServer): what an
agent needs to keep its own memory right.

- read (readOnlyHint): recall, list_banks, get_bank, get_bank_stats,
  list_memories, get_memory, memory_history, list_documents, get_document,
  list_tags;
- write: retain, reflect (it keeps the reflection and forms opinions),
  update_memory (correct a memory), create_bank (the multi-bank endpoint);
- destructive (destructiveHint): invalidate_memory (forget: hidden from
  recall and reflect, reversible), delete_document.

Corrections and forgetting are the studio's own audited, undoable curation:
a person sees what the agent did in the Audit pane and can undo it. Deleting
a bank or all its memories is not offered to agents (one tool call should not
erase a memory a person cannot restore); the HTTP API and the CLI do it.

Every tool answers in Hindsight's shapes (the HTTP routes are called, so both
ways in give the same answers), and a refusal is a tool error saying what was
wrong. Three endpoints, one tool set: `/mcp` (every tool takes a `bank`),
`/mcp/{bank}/` (the bank is the path's; Hindsight's per-bank endpoint) and
stdio (`engram mcp BANK`, core/server/mcp_stdio.py, which bridges to the bank's
owner when another process has it open).

Each tool waits in its bank's queue on the event loop before it runs (a
write for the bank's lock, a read for a read slot: admission.py, the HTTP
requests' own queues when mounted on the app), then runs in a worker thread:
a retain waiting behind another holds no thread. Its arguments are checked
first for what no store keeps (core/limits.py): a tool error naming them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Annotated, Any, Literal

import anyio
from fastapi import HTTPException
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from core import limits
from core.server import models as m
from core.server import routes_hindsight as hs
from core.server import routes_hindsight_more as hs_more
from core.server.admission import Admission, Busy
from core.server.errors import public
from core.server.mcp_caller import CallerMiddleware
from core.server.mcp_wire import INVALID_PARAMS, screen
from core.server.retain import check_request
from core.server.retain import retain as retain_items
from core.server.served import ServedBanks
from core.server.version import ENGRAM_VERSION
from core.types import EngramError
from core.vocabulary import LEVELS, NETWORKS

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
BANK_SCOPE = "engram.mcp_bank"  # the per-bank endpoint puts its bank in the request scope

INSTRUCTIONS = (
    "Long-term memory in an Engram bank. Call `recall` before answering anything that "
    "depends on the user's history, preferences or earlier work; call `retain` whenever "
    "the user states a fact, a preference, a decision, a plan or an event worth keeping "
    "(one self-contained statement per call, with a timestamp when you know when it "
    "happened). When a memory is wrong, correct it with `update_memory`; when it no "
    "longer holds, `invalidate_memory` it (reversible): both are audited and a person "
    "can undo them. `reflect` answers a question from memory in the bank's own voice."
)

Bank = Annotated[str | None, Field(description="the bank's name (list_banks shows them)")]
Tags = Annotated[
    list[str] | None,
    Field(description="scopes, e.g. ['user:alice', 'project:x']; recall can filter by them"),
]
TagsMatch = Annotated[
    Literal["any", "all", "any_strict", "all_strict", "exact"],
    Field(
        description="'any': memories with one of the tags, or untagged; 'all': with every tag, "
        "or untagged; 'any_strict' / 'all_strict': the same without untagged ones; 'exact': "
        "exactly these tags"
    ),
]
Timestamp = Annotated[
    str | None,
    Field(
        description="ISO 8601, e.g. '2024-01-15T10:30:00Z' (no zone: UTC). Omitted: now, and "
        "'yesterday' in the content is read against it. 'unset': timeless"
    ),
]
Limit = Annotated[int, Field(ge=0, le=1000, description="how many to return (a page)")]
Offset = Annotated[
    int, Field(ge=0, le=limits.OFFSET, description="how many to skip (the next page)")
]
Network = Annotated[
    Literal[NETWORKS] | None,
    Field(description="world (facts), experience (what the agent did), opinion, observation"),
]


def _message(error: Exception) -> str:
    """What a refusal says to the agent: the field and the reason."""
    if isinstance(error, HTTPException):
        detail = error.detail
        if isinstance(detail, list):
            return "; ".join(
                f"{'.'.join(str(p) for p in d.get('loc', [])[1:]) or 'value'}: {d.get('msg')}"
                for d in detail
            )
        return str(detail)
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in error.errors()
        )
    return str(error)


def _to_json(value: Any) -> Any:
    """A response model as the JSON an agent reads: nulls left out."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def build_mcp(
    served: ServedBanks,
    *,
    per_bank: bool = False,
    default_bank: str | None = None,
    operations: Any = None,
    server_class: type[MCPServer] = MCPServer,
    admission: Admission | None = None,
) -> MCPServer:
    """The tools over `served`. `per_bank`: the tools take no `bank` (it is
    `default_bank`, or the request's per-bank endpoint). `admission`: the
    queues to share (the HTTP app's), else the tools' own."""
    admission = admission or Admission(served.lock_of)
    server = server_class(
        "engram",
        version=ENGRAM_VERSION,
        log_level="WARNING",
        instructions=INSTRUCTIONS,
        # Each call runs as its caller: the token's name and the client's (the journal's actor).
        middleware=[CallerMiddleware()],
    )
    home = getattr(served.engine, "home", None)

    def bank_of(bank: str | None, ctx: Context | None) -> str:
        if not per_bank and bank:
            return bank
        if default_bank:
            return default_bank
        request = getattr(ctx.request_context, "request", None) if ctx is not None else None
        scoped = request.scope.get(BANK_SCOPE) if request is not None else None
        if scoped:
            return scoped
        raise ToolError("name the bank: `bank` (list_banks shows them)")

    def call(fn: Callable[[], Any]) -> Any:
        try:
            return _to_json(fn())
        except ToolError:
            raise
        except (EngramError, HTTPException, ValidationError) as error:
            raise ToolError(public(_message(error), home)) from None

    def admitted(fn, annotations: ToolAnnotations):
        """`fn` (a plain function) as a coroutine that checks its arguments,
        waits in its bank's queue and then runs it in a worker thread."""
        writes = not annotations.read_only_hint

        @functools.wraps(fn)
        async def run(**arguments: Any) -> Any:
            problem = limits.first_unstorable({k: v for k, v in arguments.items() if k != "ctx"})
            if problem is not None:
                raise ToolError(str(problem))
            try:
                name = bank_of(arguments.get("bank"), arguments.get("ctx"))
            except ToolError:
                name = None  # a tool of no one bank (list_banks), or one that says so itself
            if name is None:
                return await anyio.to_thread.run_sync(functools.partial(fn, **arguments))
            try:
                async with admission.writing(name) if writes else admission.reading(name):
                    return await anyio.to_thread.run_sync(functools.partial(fn, **arguments))
            except Busy as busy:
                raise ToolError(str(busy)) from None

        return run

    def tool(annotations: ToolAnnotations, *, multi_only: bool = False):
        def register(fn):
            if multi_only and per_bank:
                return fn
            server.add_tool(admitted(fn, annotations), annotations=annotations)
            if per_bank:
                # The bank is the endpoint's: the schema does not offer it.
                params = server._tool_manager.get_tool(fn.__name__).parameters
                params.get("properties", {}).pop("bank", None)
                if "bank" in params.get("required", ()):
                    params["required"].remove("bank")
            return fn

        return register

    # -- write --------------------------------------------------------------------------

    @tool(WRITE)
    def retain(
        content: Annotated[
            str,
            Field(
                description="what to remember, specific and self-contained, e.g. 'Alice "
                "prefers window seats on long flights'"
            ),
        ],
        context: Annotated[
            str | None, Field(description="what it is about or where it came from, e.g. 'travel'")
        ] = None,
        timestamp: Timestamp = None,
        tags: Tags = None,
        metadata: Annotated[
            dict[str, str] | None,
            Field(
                description="string key-values kept with it, e.g. {'source': 'slack'}; "
                "'speaker' names who said it"
            ),
        ] = None,
        document_id: Annotated[
            str | None,
            Field(description="the conversation it belongs to; the same id again replaces it"),
        ] = None,
        update_mode: Annotated[
            Literal["replace", "append"] | None,
            Field(
                description="with a document_id already kept: 'append' adds this as its next turn"
            ),
        ] = None,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Store something worth remembering: a fact, a preference, a decision, an event.
        Answers once it is committed, with how many memories it became."""
        name = bank_of(bank, ctx)

        def run():
            item = m.MemoryItem.model_validate(
                {
                    "content": content,
                    "context": context,
                    "timestamp": timestamp,
                    "tags": tags,
                    "metadata": metadata,
                    "document_id": document_id,
                    "update_mode": update_mode,
                }
            )
            request = m.RetainRequest(items=[item])
            mode = check_request(request)
            served.get_or_create(name)
            with served.using(name) as held:
                change, summary = retain_items(held, request, mode)
            served.changed(name, change)
            return {
                "bank": name,
                **{k: summary[k] for k in ("document_ids", "units_added", "mode")},
            }

        return call(run)

    @tool(WRITE)
    def reflect(
        query: Annotated[str, Field(description="the question to answer from memory")],
        context: Annotated[
            str | None, Field(description="the asker's situation, used to find and answer")
        ] = None,
        max_tokens: Annotated[int, Field(ge=1, description="the longest answer, in tokens")] = 1024,
        budget: Annotated[
            Literal[tuple(LEVELS)], Field(description="evidence: low, mid or high")
        ] = "low",
        tags: Tags = None,
        tags_match: TagsMatch = "any",
        response_schema: Annotated[
            dict[str, Any] | None,
            Field(description="a JSON Schema: the answer also comes as structured_output"),
        ] = None,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Answer a question from memory under the bank's disposition, with the facts it
        rests on. The reflection is kept and the opinions it forms are applied."""
        name = bank_of(bank, ctx)
        return call(
            lambda: hs.reflect(
                name,
                m.ReflectRequest(
                    query=query,
                    context=context,
                    max_tokens=max_tokens,
                    budget=budget,
                    tags=tags,
                    tags_match=tags_match,
                    response_schema=response_schema,
                    include=m.ReflectIncludeOptions(facts={}),
                ),
                served,
            )
        )

    @tool(WRITE)
    def update_memory(
        memory_id: Annotated[
            str, Field(description="the memory's id (from recall or list_memories)")
        ],
        text: Annotated[str | None, Field(description="the corrected statement")] = None,
        occurred_start: Annotated[
            str | None, Field(description="when it began, ISO 8601; '' clears it")
        ] = None,
        occurred_end: Annotated[
            str | None, Field(description="when it ended, ISO 8601; '' clears it")
        ] = None,
        fact_type: Annotated[
            Literal["world", "experience", "opinion"] | None,
            Field(description="move it to another network"),
        ] = None,
        entities: Annotated[
            list[str] | None, Field(description="the entities it mentions, by name or id")
        ] = None,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Correct a memory that is wrong. Audited; a person can undo it in the studio."""
        name = bank_of(bank, ctx)
        values = {
            k: v
            for k, v in {
                "text": text,
                "occurred_start": occurred_start,
                "occurred_end": occurred_end,
                "fact_type": fact_type,
                "entities": entities,
            }.items()
            if v is not None
        }
        return call(
            lambda: hs.update_memory(name, memory_id, m.UpdateMemoryRequest(**values), served)
        )

    @tool(WRITE, multi_only=True)
    def create_bank(
        bank: Annotated[str, Field(description="the new bank's name")],
        mission: Annotated[
            str | None, Field(description="who the agent is and what the bank is for")
        ] = None,
        name: Annotated[str | None, Field(description="the agent's name")] = None,
    ) -> dict[str, Any]:
        """Create a bank (or update its mission and name). A retain into a bank that does
        not exist creates it too."""
        return call(
            lambda: hs.create_or_update_bank(
                bank, m.CreateBankRequest(mission=mission, name=name), served
            )
        )

    # -- destructive (reversible in the studio) ----------------------------------------------

    @tool(DESTRUCTIVE)
    def invalidate_memory(
        memory_id: Annotated[str, Field(description="the memory's id")],
        reason: Annotated[str | None, Field(description="why; kept in the audit")] = None,
        restore: Annotated[
            bool, Field(description="true: bring back a memory invalidated before")
        ] = False,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Forget a memory that no longer holds: it leaves recall and reflect (and what
        was derived from it follows) but is kept, and `restore` or the studio's undo
        brings it back."""
        name = bank_of(bank, ctx)
        state = "valid" if restore else "invalidated"
        return call(
            lambda: hs.update_memory(
                name, memory_id, m.UpdateMemoryRequest(state=state, reason=reason), served
            )
        )

    @tool(DESTRUCTIVE)
    def delete_document(
        document_id: Annotated[str, Field(description="the document's id (list_documents)")],
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Delete a retained document and every memory derived only from it. Audited; a
        person can undo it in the studio."""
        name = bank_of(bank, ctx)
        return call(lambda: hs.delete_document(name, document_id, served))

    # -- read -------------------------------------------------------------------------------

    @tool(READ)
    def recall(
        query: Annotated[
            str, Field(description='what to look for, e.g. "Alice\'s food preferences"')
        ],
        max_tokens: Annotated[
            int, Field(ge=1, description="the token budget the memories' text is packed into")
        ] = 2048,
        budget: Annotated[
            Literal[tuple(LEVELS)],
            Field(description="how hard to search: low, mid or high (candidates per channel)"),
        ] = "mid",
        types: Annotated[
            list[Literal[NETWORKS]] | None,
            Field(
                description="networks to search (default all): world, experience, opinion, "
                "observation"
            ),
        ] = None,
        tags: Tags = None,
        tags_match: TagsMatch = "any",
        query_timestamp: Annotated[
            str | None,
            Field(description="the time 'last week' in the query is read against, ISO 8601"),
        ] = None,
        include_entities: Annotated[
            bool, Field(description="also the profiles of the entities in the results")
        ] = False,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """The memories most relevant to a query, best first, within max_tokens: each with
        its id (for update_memory / invalidate_memory), type, dates, tags and metadata."""
        name = bank_of(bank, ctx)
        include = m.IncludeOptions(entities=m.IncludeMaxTokens() if include_entities else None)
        return call(
            lambda: hs.recall(
                name,
                m.RecallRequest(
                    query=query,
                    max_tokens=max_tokens,
                    budget=budget,
                    types=types,
                    tags=tags,
                    tags_match=tags_match,
                    query_timestamp=query_timestamp,
                    include=include,
                ),
                served,
            )
        )

    @tool(READ)
    def list_banks() -> list[str]:
        """The names of the banks this server serves (a bank is also made by its first
        retain)."""
        return served.names()

    @tool(READ)
    def get_bank(bank: Bank = None, ctx: Context = None) -> dict[str, Any]:
        """The bank's profile: the agent's name, mission and disposition."""
        name = bank_of(bank, ctx)
        return call(lambda: hs.get_profile(name, served))

    @tool(READ)
    def get_bank_stats(bank: Bank = None, ctx: Context = None) -> dict[str, Any]:
        """How many memories of each network, links and documents the bank holds."""
        name = bank_of(bank, ctx)
        return call(lambda: hs.stats(name, served, operations or _NoOperations()))

    @tool(READ)
    def list_memories(
        type: Network = None,
        q: Annotated[str | None, Field(description="only memories containing this text")] = None,
        tags: Tags = None,
        tags_match: TagsMatch = "any",
        document_id: Annotated[str | None, Field(description="only this document's")] = None,
        state: Annotated[
            Literal["valid", "invalidated"] | None,
            Field(description="'invalidated' lists the forgotten ones"),
        ] = None,
        limit: Limit = 50,
        offset: Offset = 0,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """A page of stored memories, most recent first, with how many there are."""
        name = bank_of(bank, ctx)
        return call(
            lambda: hs.list_memories(
                name,
                served,
                type=type,
                q=q,
                entity_id=None,
                time_field=None,
                start_date=None,
                end_date=None,
                limit=limit,
                offset=offset,
                document_id=document_id,
                state=state,
                tags=tags,
                tags_match=tags_match,
                consolidation_state=None,
            )
        )

    @tool(READ)
    def get_memory(
        memory_id: Annotated[str, Field(description="the memory's id")],
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """One memory with its entities, tags, metadata and the turns it was drawn from."""
        name = bank_of(bank, ctx)
        return call(lambda: hs.memory_detail(served.get(name), memory_id))

    @tool(READ)
    def memory_history(
        memory_id: Annotated[str, Field(description="the memory's id")],
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """What curation did to a memory (who, when, before and after) and, for an
        opinion, how its confidence moved."""
        name = bank_of(bank, ctx)
        return call(lambda: hs.memory_history(name, memory_id, served))

    @tool(READ)
    def list_documents(
        q: Annotated[str | None, Field(description="only ids or titles containing this")] = None,
        tags: Tags = None,
        tags_match: TagsMatch = "any",
        limit: Limit = 50,
        offset: Offset = 0,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """The retained documents (conversations), oldest first."""
        name = bank_of(bank, ctx)
        return call(
            lambda: hs.list_documents(
                name, served, q=q, limit=limit, offset=offset, tags=tags, tags_match=tags_match
            )
        )

    @tool(READ)
    def get_document(
        document_id: Annotated[str, Field(description="the document's id")],
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """One document: its text (turn by turn), tags and how many memories it gave."""
        name = bank_of(bank, ctx)
        return call(lambda: hs.get_document(name, document_id, served))

    @tool(READ)
    def list_tags(
        q: Annotated[str | None, Field(description="only tags containing this")] = None,
        limit: Annotated[int, Field(ge=0, le=10_000, description="how many tags to return")] = 100,
        bank: Bank = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """The tags the bank's memories carry, most used first."""
        name = bank_of(bank, ctx)
        return call(lambda: hs_more.list_tags(name, served, q=q, limit=limit, offset=0))

    return server


class _NoOperations:
    """stdio has no asynchronous operations."""

    def pending(self, _bank: str) -> int:
        return 0

    def failed(self, _bank: str) -> int:
        return 0


# -- over HTTP ------------------------------------------------------------------------------


class McpEndpoints:
    """The ASGI app mounted at the root (after every route): `/mcp` is the
    multi-bank server, `/mcp/{bank}/` the per-bank one with the bank taken from
    the path; anything else is not found."""

    def __init__(
        self, served: ServedBanks, operations: Any = None, admission: Admission | None = None
    ) -> None:
        self.multi = build_mcp(served, operations=operations, admission=admission)
        self.single = build_mcp(served, per_bank=True, operations=operations, admission=admission)
        self._multi_app = self.multi.streamable_http_app(streamable_http_path="/mcp")
        self._single_app = self.single.streamable_http_app(streamable_http_path="/mcp-bank")

    def session(self) -> AbstractAsyncContextManager[None]:
        """What the host app's lifespan runs: both servers' session managers."""
        endpoints = self

        class _Sessions:
            async def __aenter__(self) -> None:
                self._stack = AsyncExitStack()
                await self._stack.enter_async_context(endpoints.multi.session_manager.run())
                await self._stack.enter_async_context(endpoints.single.session_manager.run())

            async def __aexit__(self, *exc: object) -> None:
                await self._stack.aclose()

        return _Sessions()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST":
            receive = await self._screened(receive, send)
            if receive is None:
                return  # answered: a message the SDK would have dropped without a word
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/mcp/") and len(path) > len("/mcp/"):
            bank = path[len("/mcp/") :].split("/", 1)[0]
            scope = {**scope, "path": "/mcp-bank", "raw_path": b"/mcp-bank", BANK_SCOPE: bank}
            await self._single_app(scope, receive, send)
            return
        if scope["type"] == "http" and path in ("/mcp", "/mcp/"):
            scope = {**scope, "path": "/mcp", "raw_path": b"/mcp"}
        await self._multi_app(scope, receive, send)

    @staticmethod
    async def _screened(receive, send):
        """The body read and screened (mcp_wire.screen): a receive replaying it
        to the SDK, or None once the refusal is answered."""
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        parsed, refusal = screen(body)
        if parsed is None:
            status = (
                202
                if refusal is None
                else (200 if refusal["error"]["code"] == INVALID_PARAMS else 400)
            )
            payload = b"" if refusal is None else json.dumps(refusal).encode()
            headers = [(b"content-length", str(len(payload)).encode())]
            if payload:
                headers.append((b"content-type", b"application/json"))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return None
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay


def streamable_http_app(
    served: ServedBanks, operations: Any = None, admission: Admission | None = None
) -> tuple[Any, Any]:
    """The MCP app to mount (its endpoints are `/mcp` and `/mcp/{bank}/`) and the
    context manager its session managers must run in (the host app's lifespan)."""
    endpoints = McpEndpoints(served, operations, admission)
    return endpoints, endpoints.session
