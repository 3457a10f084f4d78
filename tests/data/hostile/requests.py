"""The hostile-request corpus: what an agent (or an attacker with the token) can
send the server over HTTP and MCP, and what each must get back.

Every case is refused with a 4xx that names the field (a JSON-RPC or tool
error with the reason over MCP) and leaves the bank exactly as it was. Bodies
are raw JSON bytes, so a lone surrogate travels as the `\\ud800` escape a
client would send (a Python str holding one cannot even be encoded).

`HTTP` is the HTTP corpus, `MCP_TOOLS` the tool calls both MCP transports
get, `STDIO_LINES` the raw lines only stdio can send.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from core.server.client import encode
from core.types import Document, Turn

SURROGATE = "\\ud800"  # as it appears inside a JSON string
LONE_LOW = "\\udfff"


@dataclass(frozen=True)
class HttpCase:
    method: str
    path: str  # "{bank}" is the test's bank
    body: bytes | None = None
    params: dict[str, Any] = field(default_factory=dict)
    status: int = 422
    # What the answer must name: a field of FastAPI's `loc` (or the detail text).
    names: str = ""


def _raw(text: str) -> bytes:
    """JSON written by hand, where `\\ud800` stays an escape."""
    json.loads(text)  # the corpus itself is valid JSON
    return text.encode()


def _item(**fields: Any) -> dict:
    return {"content": "Ann keeps bees.", "strategy": "verbatim", **fields}


def _retain(*items: dict, marker: str = "", escape: str = SURROGATE) -> bytes:
    body = json.dumps({"items": list(items)})
    return _raw(body.replace(marker, escape) if marker else body)


def _call_body(args: list, kwargs: dict | None = None, marker: str = "", raw: str = "") -> bytes:
    body = json.dumps({"args": encode(args), "kwargs": encode(kwargs or {})})
    return _raw(body.replace(marker, raw) if marker else body)


def _document(text: str = "Ann keeps bees.", speaker: str = "Ann", doc_id: str = "d1") -> Document:
    return Document(doc_id, "a chat", (Turn("t1", speaker, text),), format="hindsight")


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


RETAIN = "/v1/default/banks/{bank}/memories"
RECALL = "/v1/default/banks/{bank}/memories/recall"
CALL = "/engram/v1/banks/{bank}/call/"
MEMORY = "/v1/default/banks/{bank}/memories/m1"  # no such memory: refused before it is looked for
BIG = 100_001
MB = 2**20

HTTP: dict[str, HttpCase] = {
    # -- lone surrogates (issue 27, item 9) --
    "surrogate-content": HttpCase(
        "POST", RETAIN, _retain(_item(content="a MARK b"), marker="MARK"), names="content"
    ),
    "surrogate-low-content": HttpCase(
        "POST",
        RETAIN,
        _retain(_item(content="MARK"), marker="MARK", escape=LONE_LOW),
        names="content",
    ),
    "surrogate-speaker": HttpCase(
        "POST",
        RETAIN,
        _retain(_item(metadata={"speaker": "AnnMARK"}), marker="MARK"),
        names="metadata",
    ),
    "surrogate-metadata-key": HttpCase(
        "POST", RETAIN, _retain(_item(metadata={"MARK": "x"}), marker="MARK"), names="metadata"
    ),
    "surrogate-document-id": HttpCase(
        "POST", RETAIN, _retain(_item(document_id="doc-MARK"), marker="MARK"), names="document_id"
    ),
    "surrogate-context": HttpCase(
        "POST", RETAIN, _retain(_item(context="ctx MARK"), marker="MARK"), names="context"
    ),
    "surrogate-query": HttpCase("POST", RECALL, _raw('{"query": "bees \\ud800"}'), names="query"),
    "surrogate-mission": HttpCase(
        "PUT", "/v1/default/banks/{bank}", _raw('{"mission": "keep \\ud800"}'), names="mission"
    ),
    "surrogate-agent-name": HttpCase(
        "PUT", "/v1/default/banks/{bank}", _raw('{"name": "\\udfff"}'), names="name"
    ),
    "surrogate-config-value": HttpCase(
        "PATCH",
        "/v1/default/banks/{bank}/config",
        _raw('{"updates": {"reflect_mission": "\\ud800"}}'),
        names="updates",
    ),
    "surrogate-engram-recall": HttpCase(
        "POST", "/engram/v1/banks/{bank}/recall", _raw('{"query": "\\ud800"}'), names="query"
    ),
    "surrogate-engram-reflect": HttpCase(
        "POST", "/engram/v1/banks/{bank}/reflect", _raw('{"query": "why \\ud800"}'), names="query"
    ),
    "nul-content": HttpCase("POST", RETAIN, _retain(_item(content="a\u0000b")), names="content"),
    "surrogate-call-ingest": HttpCase(
        "POST",
        CALL + "ingest",
        _call_body([[_document(text="bees MARK")]], marker="MARK", raw=SURROGATE),
        names="text",
    ),
    "surrogate-call-kwarg": HttpCase(
        "POST",
        CALL + "units",
        _call_body([], {"text": "MARK"}, marker="MARK", raw=SURROGATE),
        names="kwargs.text",
    ),
    # -- times whose offset overflows, huge offsets, bad pages (item 9) --
    "timestamp-overflow-late": HttpCase(
        "POST", RETAIN, _retain(_item(timestamp="9999-12-31T23:00:00-14:00")), names="timestamp"
    ),
    "timestamp-overflow-early": HttpCase(
        "POST", RETAIN, _retain(_item(timestamp="0001-01-01T01:00:00+14:00")), names="timestamp"
    ),
    "recall-timestamp-overflow": HttpCase(
        "POST",
        RECALL,
        _raw('{"query": "bees", "query_timestamp": "9999-12-31T23:00:00-14:00"}'),
        names="query_timestamp",
    ),
    "engram-recall-now-overflow": HttpCase(
        "POST",
        "/engram/v1/banks/{bank}/recall",
        _raw('{"query": "bees", "now": "0001-01-01T01:00:00+14:00"}'),
        names="now",
    ),
    "list-start-overflow": HttpCase(
        "GET",
        "/v1/default/banks/{bank}/memories/list",
        params={"start_date": "9999-12-31T23:00:00-14:00"},
        names="start_date",
    ),
    "list-offset-huge": HttpCase(
        "GET", "/v1/default/banks/{bank}/memories/list", params={"offset": 10**21}, names="offset"
    ),
    "reflections-offset-huge": HttpCase(
        "GET", "/engram/v1/banks/{bank}/reflections", params={"offset": 10**21}, names="offset"
    ),
    "documents-offset-huge": HttpCase(
        "GET", "/v1/default/banks/{bank}/documents", params={"offset": 10**21}, names="offset"
    ),
    "call-offset-huge": HttpCase(
        "POST", CALL + "units", _call_body([], {"offset": 10**21}), names="offset"
    ),
    "call-limit-negative": HttpCase(
        "POST", CALL + "units", _call_body([], {"limit": -1}), names="limit"
    ),
    "call-order-bad": HttpCase(
        "POST", CALL + "units", _call_body([], {"order": "text; DROP TABLE units"}), names="order"
    ),
    "call-args-deep": HttpCase(
        "POST", CALL + "units", _raw('{"args": ' + _deep(900) + ', "kwargs": {}}'), names="args"
    ),
    "call-kwargs-deep": HttpCase(
        "POST",
        CALL + "units",
        _raw('{"args": [], "kwargs": {"text": ' + _deep(900) + "}}"),
        names="kwargs",
    ),
    "call-set-profile-list-config": HttpCase(
        "POST", CALL + "set_profile", _call_body([], {"config": ["retain.mode"]}), names="config"
    ),
    "call-set-profile-number-background": HttpCase(
        "POST", CALL + "set_profile", _call_body([], {"background": 7}), names="background"
    ),
    "config-deep": HttpCase(
        "PATCH",
        "/engram/v1/banks/{bank}/config",
        _raw('{"settings": {"recall.rrf_k": ' + _deep(900) + "}}"),
        names="settings",
    ),
    # -- the same limits as the importer's (item 4) --
    "content-over-turn-limit": HttpCase(
        "POST", RETAIN, _retain(_item(content="x" * BIG)), names="content"
    ),
    "speaker-over-name-limit": HttpCase(
        "POST", RETAIN, _retain(_item(metadata={"speaker": "S" * 201})), names="metadata"
    ),
    "speaker-megabyte": HttpCase(
        "POST", RETAIN, _retain(_item(metadata={"speaker": "S" * 2**20})), names="metadata"
    ),
    "document-id-over-limit": HttpCase(
        "POST", RETAIN, _retain(_item(document_id="d" * 201)), names="document_id"
    ),
    "context-over-limit": HttpCase(
        "POST", RETAIN, _retain(_item(context="c" * 1001)), names="context"
    ),
    "operation-id-over-limit": HttpCase(
        "POST",
        RETAIN,
        _raw(json.dumps({"items": [_item()], "async": True, "operation_id": "o" * 201})),
        names="operation_id",
    ),
    "query-over-limit": HttpCase(
        "POST", RECALL, _raw(json.dumps({"query": "q" * BIG})), names="query"
    ),
    "mission-over-limit": HttpCase(
        "PUT",
        "/v1/default/banks/{bank}",
        _raw(json.dumps({"mission": "m" * 20_001})),
        names="mission",
    ),
    "call-ingest-speaker-megabyte": HttpCase(
        "POST", CALL + "ingest", _call_body([[_document(speaker="S" * 2**20)]]), names="speaker"
    ),
    "call-ingest-turn-over-limit": HttpCase(
        "POST", CALL + "ingest", _call_body([[_document(text="x" * BIG)]]), names="text"
    ),
    "call-recall-query-over-limit": HttpCase(
        "POST", CALL + "recall", _call_body(["q" * BIG]), names="query"
    ),
    "call-background-over-limit": HttpCase(
        "POST",
        CALL + "set_profile",
        _call_body([], {"background": "b" * 20_001}),
        names="background",
    ),
    "call-agent-name-over-limit": HttpCase(
        "POST", CALL + "set_profile", _call_body([], {"agent_name": "a" * 201}), names="agent_name"
    ),
    "update-text-over-unit-limit": HttpCase(
        "PATCH", MEMORY, _raw(json.dumps({"text": "x" * 20_001})), names="text"
    ),
    "update-reason-megabyte": HttpCase(
        "PATCH",
        MEMORY,
        _raw(json.dumps({"state": "invalidated", "reason": "r" * MB})),
        names="reason",
    ),
    "update-entity-megabyte": HttpCase(
        "PATCH", MEMORY, _raw(json.dumps({"entities": ["E" * MB]})), names="entities"
    ),
    # -- refusals quote what they refused briefly, never a megabyte back --
    "strategy-megabyte": HttpCase(
        "POST", RETAIN, _retain(_item(strategy="s" * MB)), names="strategy"
    ),
    "timestamp-megabyte": HttpCase(
        "POST", RETAIN, _retain(_item(timestamp="2" * MB)), names="timestamp"
    ),
    "config-key-megabyte": HttpCase(
        "PATCH",
        "/v1/default/banks/{bank}/config",
        _raw(json.dumps({"updates": {"k" * MB: 1}})),
        names="updates",
    ),
    "engram-config-key-megabyte": HttpCase(
        "PATCH",
        "/engram/v1/banks/{bank}/config",
        _raw(json.dumps({"settings": {"k" * MB: 1}})),
        names="unknown setting",
    ),
    "engram-config-value-megabyte": HttpCase(
        "PATCH",
        "/engram/v1/banks/{bank}/config",
        _raw(json.dumps({"settings": {"recall.rrf_k": "k" * MB}})),
        names="recall.rrf_k",
    ),
    "call-kwarg-name-megabyte": HttpCase(
        "POST", CALL + "units", _call_body([], {"k" * MB: 1}), names="keyword argument"
    ),
    "body-over-limit": HttpCase(
        "POST", RETAIN, _retain(_item(content="x" * (9 * 2**20))), status=413, names="limit"
    ),
}


@dataclass(frozen=True)
class ToolCase:
    tool: str
    arguments: dict[str, Any]
    names: str  # what the error must name
    # A tool only a server of many banks offers (`engram mcp BANK` serves one).
    many_banks: bool = False


MCP_TOOLS: dict[str, ToolCase] = {
    "content-surrogate": ToolCase("retain", {"content": "bees \ud800"}, "content"),
    "speaker-surrogate": ToolCase(
        "retain", {"content": "bees", "metadata": {"speaker": "\udfff"}}, "speaker"
    ),
    "metadata-key-surrogate": ToolCase(
        "retain", {"content": "bees", "metadata": {"\ud800": "x"}}, "metadata"
    ),
    "document-id-surrogate": ToolCase(
        "retain", {"content": "bees", "document_id": "d\ud800"}, "document_id"
    ),
    "context-surrogate": ToolCase("retain", {"content": "bees", "context": "\ud800"}, "context"),
    "tag-surrogate": ToolCase("retain", {"content": "bees", "tags": ["a\udfff"]}, "tags"),
    "bank-surrogate": ToolCase("retain", {"content": "bees", "bank": "b\ud800"}, "bank"),
    "content-over-limit": ToolCase("retain", {"content": "x" * BIG}, "content"),
    "speaker-over-limit": ToolCase(
        "retain", {"content": "bees", "metadata": {"speaker": "S" * 201}}, "speaker"
    ),
    "document-id-over-limit": ToolCase(
        "retain", {"content": "bees", "document_id": "d" * 201}, "document_id"
    ),
    "timestamp-overflow": ToolCase(
        "retain", {"content": "bees", "timestamp": "9999-12-31T23:00:00-14:00"}, "timestamp"
    ),
    "timestamp-overflow-early": ToolCase(
        "retain", {"content": "bees", "timestamp": "0001-01-01T01:00:00+14:00"}, "timestamp"
    ),
    "timestamp-garbage": ToolCase(
        "retain", {"content": "bees", "timestamp": "last tuesday-ish"}, "timestamp"
    ),
    "recall-query-surrogate": ToolCase("recall", {"query": "\ud800"}, "query"),
    "recall-query-over-limit": ToolCase("recall", {"query": "q" * BIG}, "query"),
    "recall-max-tokens-negative": ToolCase(
        "recall", {"query": "bees", "max_tokens": -5}, "max_tokens"
    ),
    "recall-timestamp-overflow": ToolCase(
        "recall", {"query": "bees", "query_timestamp": "0001-01-01T01:00:00+14:00"}, "timestamp"
    ),
    "reflect-query-surrogate": ToolCase("reflect", {"query": "why \ud800"}, "query"),
    "list-offset-huge": ToolCase("list_memories", {"offset": 10**21}, "offset"),
    "list-offset-negative": ToolCase("list_memories", {"offset": -1}, "offset"),
    "list-limit-huge": ToolCase("list_memories", {"limit": 10**6}, "limit"),
    "list-q-surrogate": ToolCase("list_memories", {"q": "\ud800"}, "q"),
    "documents-offset-huge": ToolCase("list_documents", {"offset": 10**21}, "offset"),
    "update-text-surrogate": ToolCase(
        "update_memory", {"memory_id": "m1", "text": "bees \ud800"}, "text"
    ),
    "update-text-over-limit": ToolCase(
        "update_memory", {"memory_id": "m1", "text": "x" * BIG}, "text"
    ),
    "invalidate-reason-megabyte": ToolCase(
        "invalidate_memory", {"memory_id": "m1", "reason": "r" * MB}, "reason"
    ),
    "delete-document-surrogate": ToolCase(
        "delete_document", {"document_id": "d\udfff"}, "document_id"
    ),
    "create-bank-name-surrogate": ToolCase(
        "create_bank", {"bank": "new\ud800"}, "bank", many_banks=True
    ),
    "create-bank-mission-surrogate": ToolCase(
        "create_bank", {"bank": "new", "mission": "keep \ud800"}, "mission", many_banks=True
    ),
    "create-bank-agent-name-surrogate": ToolCase(
        "create_bank", {"bank": "new", "name": "\udfff"}, "name", many_banks=True
    ),
    "create-bank-mission-over-limit": ToolCase(
        "create_bank", {"bank": "new", "mission": "m" * 20_001}, "mission", many_banks=True
    ),
}

# Raw stdin lines for `engram mcp` (after the handshake): each must be answered
# with a JSON-RPC error of this code for this id (None: the line had none, or
# could not be read), or, code 0, a tool error for that id.
STDIO_LINES: dict[str, tuple[bytes, int, int | None]] = {
    "not-json": (b"this is not json", -32700, None),
    "truncated-json": (b'{"jsonrpc": "2.0", "id": 901, "method": "tools/list"', -32700, None),
    "invalid-utf8": (b'{"jsonrpc": "2.0", "id": 902, "method": "tools/\xff"}', -32700, None),
    "string-params": (
        b'{"jsonrpc": "2.0", "id": 903, "method": "tools/call", "params": "x"}',
        -32602,
        903,
    ),
    "number-params": (
        b'{"jsonrpc": "2.0", "id": 904, "method": "tools/call", "params": 7}',
        -32602,
        904,
    ),
    "no-method": (b'{"jsonrpc": "2.0", "id": 905}', -32600, 905),
    "array": (b"[1, 2, 3]", -32600, None),
    "bare-number": (b"42", -32600, None),
    "surrogate-in-call": (
        b'{"jsonrpc": "2.0", "id": 906, "method": "tools/call", "params": {"name": "retain",'
        b' "arguments": {"content": "bees \\ud800"}}}',
        -32602,
        906,
    ),
    "unknown-method": (b'{"jsonrpc": "2.0", "id": 907, "method": "no/such"}', -32601, 907),
    "unknown-tool": (
        b'{"jsonrpc": "2.0", "id": 908, "method": "tools/call", "params": {"name": "nope",'
        b' "arguments": {}}}',
        0,
        908,
    ),
}


def sizes() -> dict[str, int]:
    return {"http": len(HTTP), "mcp_tools": len(MCP_TOOLS), "stdio_lines": len(STDIO_LINES)}
