"""The server and MCP run banks through `Bank`'s public operations only: no
module under core/server reaches a bank's store or its operations' handle
(import-linter keeps them from importing the modules beneath; this keeps them
from reaching those objects through a `Bank`)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "core" / "server"
BENEATH = {"store", "handle"}


def test_no_server_module_reaches_beneath_the_bank():
    reached = []
    for path in sorted(SERVER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in BENEATH:
                reached.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert not reached, reached
