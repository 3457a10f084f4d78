"""The hostile-request corpus over MCP (tests/data/hostile/requests.py): each
tool call is a tool error naming the argument, never a hang nor a crash, and
the bank is exactly as it was (issue 27, item 9) — over streamable HTTP and
over stdio, where unparsable lines and bad params get JSON-RPC errors too.

Raw JSON-RPC, not the SDK's client: a client's own serializer would refuse a
lone surrogate before it left (an agent's may not), and only raw lines can be
unparsable. A surrogate travels as the `\\ud800` escape (json.dumps's ASCII).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import pytest

from core import Engine
from tests.data.hostile import requests as corpus
from tests.server.conftest import TOKEN
from tests.support.curation import dump

BANK = "hostile-mcp"
# `engram mcp BANK` serves one bank: it offers no create_bank.
STDIO_TOOLS = [name for name, case in corpus.MCP_TOOLS.items() if not case.many_banks]
# The version desktop agents speak (the newest asks an envelope in every _meta).
PROTOCOL_VERSION = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "hostile-corpus", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(n: int, case: corpus.ToolCase, bank: str | None) -> dict:
    arguments = dict(case.arguments)
    if bank is not None:
        arguments.setdefault("bank", bank)
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": case.tool, "arguments": arguments},
    }


def refused_naming(answer: dict, case: corpus.ToolCase, n: int) -> None:
    """A tool error (or a JSON-RPC error) for request `n` whose text names the argument."""
    assert answer.get("id") == n, answer
    if "error" in answer:
        text = json.dumps(answer["error"])
    else:
        result = answer["result"]
        assert result.get("isError"), result
        text = " ".join(c.get("text", "") for c in result["content"])
    assert case.names in text, (case, text[:300])
    assert len(text) < 4000  # the megabyte is not echoed back


# -- streamable HTTP ----------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_http(served):
    with served.client() as http:
        http.put(f"/v1/default/banks/{BANK}", json={}).raise_for_status()
        http.post(
            f"/v1/default/banks/{BANK}/memories",
            json={"items": [{"content": "Ann keeps bees.", "strategy": "verbatim"}]},
        ).raise_for_status()
        headers = {"Accept": "application/json, text/event-stream"}
        r = http.post("/mcp", json=INITIALIZE, headers=headers)
        r.raise_for_status()
        headers["mcp-session-id"] = r.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = PROTOCOL_VERSION
        http.post("/mcp", json=INITIALIZED, headers=headers)

        def send(message: dict) -> dict:
            body = json.dumps(message).encode()  # ASCII: surrogates as \\ud800 escapes
            answer = http.post(
                "/mcp", content=body, headers={**headers, "content-type": "application/json"}
            )
            assert answer.status_code < 500, answer.text[:300]
            text = answer.text
            if answer.headers.get("content-type", "").startswith("text/event-stream"):
                data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
                text = data[-1]
            return json.loads(text)

        yield send


@pytest.mark.parametrize("name", sorted(corpus.MCP_TOOLS))
def test_hostile_tool_call_over_http(served, mcp_http, name):
    case = corpus.MCP_TOOLS[name]
    bank = served.banks.get(BANK)
    before, banks = dump(bank), served.banks.names()
    n = 100 + sorted(corpus.MCP_TOOLS).index(name)
    refused_naming(mcp_http(call(n, case, None if case.many_banks else BANK)), case, n)
    assert dump(bank) == before
    assert served.banks.names() == banks  # no bank made by a refused call


# -- stdio --------------------------------------------------------------------------


class Stdio:
    """`engram mcp BANK` as a desktop agent runs it: lines in, lines out."""

    def __init__(self, home) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.main", "--home", str(home), "mcp", BANK],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "ENGRAM_API_TOKEN": TOKEN},
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 120) -> dict:
        """The next answer (notifications and log lines skipped); fails on silence."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("no answer: the server hung on that line") from None
            message = json.loads(line)
            if "id" in message:  # an answer (a parse error's id is null)
                return message

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def stdio(tmp_path_factory, embedder):
    home = tmp_path_factory.mktemp("stdio-home")
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank(BANK).ingest(_seed(), mode="verbatim")
    server = Stdio(home)
    server.send(json.dumps(INITIALIZE).encode())
    assert "result" in server.answer()
    server.send(json.dumps(INITIALIZED).encode())
    yield server, home
    server.close()


def _seed():
    from core import Document, Turn

    return [Document("seed", "seed", (Turn("s0", "Ann", "I keep bees."),))]


@pytest.mark.slow
def test_every_stdio_line_is_answered(stdio):
    """Unparsable lines, params that are no object, a surrogate in a tool call:
    each gets its JSON-RPC error (or tool error), and the next call is answered."""
    server, _home = stdio
    for name, (raw, code, wanted) in sorted(corpus.STDIO_LINES.items()):
        server.send(raw)
        answer = server.answer()
        assert answer.get("id") == wanted, (name, answer)
        if code == 0:
            assert answer.get("result", {}).get("isError"), (name, answer)
        else:
            assert answer["error"]["code"] == code, (name, answer)
        # And the server still answers.
        server.send(json.dumps({"jsonrpc": "2.0", "id": 999, "method": "tools/list"}).encode())
        assert server.answer()["id"] == 999, name


@pytest.mark.slow
def test_hostile_tool_calls_over_stdio(stdio):
    server, home = stdio
    for n, name in enumerate(sorted(STDIO_TOOLS), start=2000):
        case = corpus.MCP_TOOLS[name]
        server.send(json.dumps(call(n, case, None)).encode())
        refused_naming(server.answer(), case, n)
    server.send(
        json.dumps(call(5000, corpus.ToolCase("recall", {"query": "bees"}, ""), None)).encode()
    )
    assert not server.answer()["result"].get("isError")
    server.close()
    with Engine(home) as engine:
        units = engine.open_bank(BANK).units(limit=None)
    assert [u.text for u in units] == ["Ann: I keep bees."]  # nothing was written
