"""Hindsight's framework integrations, unchanged, against `engram serve` (issue 23).

Installs `hindsight-langgraph`, `hindsight-openai-agents`, `hindsight-pydantic-ai`
and `hindsight-crewai` from PyPI into a scratch virtualenv (they pull in their
frameworks: LangChain, the OpenAI Agents SDK, Pydantic AI, CrewAI — too heavy
for `make test`), starts `engram serve` on a free port over an empty data
folder, and calls each package's own retain, recall and reflect tools the way
an agent's model would call them. No language model anywhere: Engram answers in
rules mode. Prints one table row per package and tool.

    .venv/bin/python benchmarks/hindsight_frameworks.py [--venv build/frameworks-venv]
        [--skip-install]

Exit status 0 when every call succeeded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "hindsight-langgraph",
    "hindsight-openai-agents",
    "hindsight-pydantic-ai",
    "hindsight-crewai",
]
TOKEN = "frameworks-" + "k" * 24

# Runs in the scratch virtualenv: each package's tools, called as the framework calls them.
CHILD = r"""
import asyncio, json, sys, traceback
from importlib.metadata import version

url, token = sys.argv[1], sys.argv[2]
FACT = "Mina's favourite hiking trail is the Cinque Terre coastal path."
QUERY = "Which trail does Mina like?"
rows = []

def row(package, tool, ok, detail):
    rows.append({"package": package, "version": version(package), "tool": tool, "ok": ok,
                 "detail": " ".join(str(detail).split())[:90]})

async def call(package, tool, coro, check):
    try:
        out = await coro if asyncio.iscoroutine(coro) else coro
        ok = check(out)
        row(package, tool, ok, out if ok else f"unexpected: {out!r}")
    except Exception as error:
        row(package, tool, False, f"{type(error).__name__}: {error}")

def found(out):
    return "Cinque Terre" in str(out)

def answered(out):
    return bool(str(out).strip()) and "failed" not in str(out).lower()

async def langgraph():
    from hindsight_langgraph import create_hindsight_tools
    tools = {t.name: t for t in create_hindsight_tools(
        bank_id="fw-langgraph", hindsight_api_url=url, api_key=token)}
    config = {"configurable": {}}
    await call("hindsight-langgraph", "retain",
               tools["hindsight_retain"].ainvoke({"content": FACT}, config=config), answered)
    await call("hindsight-langgraph", "recall",
               tools["hindsight_recall"].ainvoke({"query": QUERY}, config=config), found)
    await call("hindsight-langgraph", "reflect",
               tools["hindsight_reflect"].ainvoke({"query": QUERY}, config=config), answered)

async def openai_agents():
    from agents.tool_context import ToolContext
    from hindsight_openai_agents import create_hindsight_tools
    tools = {t.name: t for t in create_hindsight_tools(
        bank_id="fw-openai-agents", hindsight_api_url=url, api_key=token)}

    def invoke(name, args):
        payload = json.dumps(args)
        ctx = ToolContext(context=None, tool_name=name, tool_call_id="call-1", tool_arguments=payload)
        return tools[name].on_invoke_tool(ctx, payload)

    await call("hindsight-openai-agents", "retain", invoke("hindsight_retain", {"content": FACT}), answered)
    await call("hindsight-openai-agents", "recall", invoke("hindsight_recall", {"query": QUERY}), found)
    await call("hindsight-openai-agents", "reflect", invoke("hindsight_reflect", {"query": QUERY}), answered)

async def pydantic_ai():
    from hindsight_pydantic_ai import create_hindsight_tools
    tools = {t.name: t for t in create_hindsight_tools(
        bank_id="fw-pydantic-ai", hindsight_api_url=url, api_key=token)}
    await call("hindsight-pydantic-ai", "retain", tools["hindsight_retain"].function(content=FACT), answered)
    await call("hindsight-pydantic-ai", "recall", tools["hindsight_recall"].function(query=QUERY), found)
    await call("hindsight-pydantic-ai", "reflect", tools["hindsight_reflect"].function(query=QUERY), answered)

async def crewai():
    from hindsight_crewai import HindsightReflectTool, HindsightStorage
    storage = HindsightStorage(bank_id="fw-crewai", hindsight_api_url=url, api_key=token)
    await call("hindsight-crewai", "retain (storage.save)",
               asyncio.to_thread(lambda: storage.save(FACT, {"task": "notes"}, agent="researcher") or "saved"),
               answered)
    await call("hindsight-crewai", "recall (storage.search)",
               asyncio.to_thread(storage.search, QUERY), found)
    tool = HindsightReflectTool(bank_id="fw-crewai", hindsight_api_url=url, api_key=token)
    await call("hindsight-crewai", "reflect (HindsightReflectTool)",
               asyncio.to_thread(tool._run, QUERY), answered)

async def main():
    for run in (langgraph, openai_agents, pydantic_ai, crewai):
        try:
            await run()
        except Exception as error:
            rows.append({"package": run.__name__, "version": "?", "tool": "import", "ok": False,
                         "detail": f"{type(error).__name__}: {error}"})
    print(json.dumps(rows))

asyncio.run(main())
"""


def install(venv: Path) -> None:
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        # hindsight-crewai 0.4.20 imports crewai.memory.storage.interface, which
        # crewai 1.x no longer has: the newest crewai it works with.
        [
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            "hindsight-client==1.1.0",
            *PACKAGES,
            "crewai<1.0",
        ],
        check=True,
    )


def start_server(home: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "ENGRAM_HOME": str(home), "ENGRAM_API_TOKEN": TOKEN}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.main", "serve", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 180
    assert process.stdout is not None
    for line in process.stdout:
        found = re.search(r" at (http://\S+)", line)
        if found:
            return process, found.group(1)
        if time.monotonic() > deadline:
            break
    process.kill()
    raise SystemExit("engram serve did not start")


def table(rows: list[dict]) -> str:
    lines = ["| package | version | tool | result | answer |", "|---|---|---|---|---|"]
    for r in rows:
        detail = r["detail"].replace("|", "\\|")
        lines.append(
            f"| {r['package']} | {r['version']} | {r['tool']} | {'ok' if r['ok'] else 'FAILED'} "
            f"| {detail} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=ROOT / "build" / "frameworks-venv")
    parser.add_argument("--skip-install", action="store_true")
    args = parser.parse_args()
    if not args.skip_install:
        install(args.venv)
    with tempfile.TemporaryDirectory(prefix="engram-frameworks-") as home:
        server, url = start_server(Path(home))
        try:
            child = subprocess.run(
                [str(args.venv / "bin" / "python"), "-c", CHILD, url, TOKEN],
                capture_output=True,
                text=True,
                timeout=1200,
            )
        finally:
            server.terminate()
            server.wait(timeout=60)
    if child.returncode != 0 or not child.stdout.strip():
        print(child.stderr[-3000:], file=sys.stderr)
        return 2
    rows = json.loads(child.stdout.strip().splitlines()[-1])
    print(table(rows))
    return 0 if rows and all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
