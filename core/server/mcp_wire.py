"""Every MCP message gets an answer, whatever arrives.

The SDK's transports parse each message with pydantic's JSON parser, and a
message it cannot take (not JSON, not UTF-8, `params` that is a string, a
lone surrogate's `\\ud800` escape, which that parser refuses) became an
exception logged inside the server: over stdio nothing was answered, and an
agent waited for ever for its call while later ones were answered.

`screen(raw)` reads a message first with Python's parser (which keeps a lone
surrogate, so the request's id is known) and says what to answer when it is
no message the SDK should see: a parse error (-32700, id null), an invalid
request (-32600), or invalid params (-32602) naming the field, for that id.
`guarded_stdio()` is the SDK's stdio transport with that screen before it;
`McpEndpoints` (mcp_tools.py) screens HTTP bodies the same way.
"""

from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
from mcp import types
from mcp.shared.message import SessionMessage

from core import limits

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


def _error(message_id: Any, code: int, text: str) -> dict[str, Any]:
    # The id as it came, if it is one JSON-RPC allows (a string or an integer).
    if isinstance(message_id, bool) or not isinstance(message_id, int | str):
        message_id = None
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": text}}


def screen(raw: bytes | str) -> tuple[Any, dict[str, Any] | None]:
    """(the parsed message, None) when it may go on to the SDK; else (None, the
    JSON-RPC error to answer, or None when it was a notification: no answer)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        message = json.loads(text)
    except (UnicodeDecodeError, ValueError) as error:
        return None, _error(None, PARSE_ERROR, f"Parse error: {error}")
    if not isinstance(message, dict):
        return None, _error(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC object")
    message_id = message.get("id")
    is_request = "method" in message
    is_response = "result" in message or "error" in message
    if message.get("jsonrpc") != "2.0" or not (is_request or is_response):
        return None, _error(
            message_id, INVALID_REQUEST, "Invalid request: needs jsonrpc '2.0' and a method"
        )
    if not isinstance(message.get("method", ""), str):
        return None, _error(message_id, INVALID_REQUEST, "Invalid request: method must be text")
    if "params" in message and not isinstance(message["params"], dict):
        kind = type(message["params"]).__name__
        return None, _answer_for(message, INVALID_PARAMS, f"Invalid params: an object, not {kind}")
    problem = limits.first_unstorable(message)
    if problem is not None:
        return None, _answer_for(message, INVALID_PARAMS, f"Invalid params: {problem}")
    return message, None


def _answer_for(message: dict, code: int, text: str) -> dict[str, Any] | None:
    """The error for a request; a notification gets none (nobody waits for it)."""
    if "id" not in message or "method" not in message:
        return None if "id" not in message else _error(message["id"], code, text)
    return _error(message["id"], code, text)


@asynccontextmanager
async def guarded_stdio():
    """The SDK's stdio transport (mcp.server.stdio), each line screened first:
    every line that is not a message the SDK takes is answered here."""
    stdin_buffer, restore_stdin = _claim(0, sys.stdin, "rb")
    stdout_buffer, restore_stdout = _claim(1, sys.stdout, "wb")
    stdin, stdout = anyio.wrap_file(stdin_buffer), anyio.wrap_file(stdout_buffer)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    lock = anyio.Lock()

    async def emit(line: str) -> None:
        async with lock:
            await stdout.write(line.encode("utf-8", "backslashreplace") + b"\n")
            await stdout.flush()

    async def reader() -> None:
        async with read_writer:
            async for raw in stdin:
                if not raw.strip():
                    continue
                message, refusal = screen(raw)
                if message is None:
                    if refusal is not None:
                        await emit(json.dumps(refusal))
                    continue
                try:
                    parsed = types.jsonrpc_message_adapter.validate_python(message, by_name=False)
                except Exception as error:  # noqa: BLE001 - answered, never swallowed
                    answer = _answer_for(message, INVALID_REQUEST, f"Invalid request: {error}")
                    if answer is not None:
                        await emit(json.dumps(answer)[:4000])
                    continue
                await read_writer.send(SessionMessage(parsed))

    async def writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                await emit(
                    session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                )

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(writer)
            yield read_stream, write_stream
            tasks.cancel_scope.cancel()
    finally:
        for restore in (restore_stdout, restore_stdin):
            if restore is not None:
                restore()


def _claim(fd: int, stream, mode: str):
    """The wire's end, with fd `fd` diverted while serving (stray output of a
    handler misses the wire) as the SDK's stdio transport does; without the SDK's
    helper, the stream's own buffer."""
    try:
        from mcp.server import stdio as sdk

        diversion = sdk._open_stdin_diversion if fd == 0 else sdk._open_stdout_diversion
        return sdk._claim_fd(fd, stream, mode, diversion)
    except (ImportError, AttributeError):
        return stream.buffer, None


async def run_guarded(server) -> None:
    """`server` (an MCPServer) on stdin/stdout through `guarded_stdio`."""
    async with guarded_stdio() as (read_stream, write_stream):
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, too
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
