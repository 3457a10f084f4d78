"""CLI rough edges: a closed pipe ends quietly, traces go to a file or a summary,
offline reflect reads as text, entities can be listed, and ingest and export
count links the same way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core import STOP_REASONS, Network, NewUnit
from core.cli import main

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo"


@pytest.fixture
def demo_home(engine, bank):
    """One demo conversation ingested (rules mode), the bank closed for the CLI."""
    bank.ingest(DEMO / "01-march-kickoff.txt", mode="rules")
    name = bank.name
    bank.close()
    return engine.home, name


def run(home, *argv: str) -> int:
    return main(["--home", str(home), *argv])


@pytest.mark.slow
def test_listing_into_a_closed_pipe_ends_quietly(engine, bank):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3000, bank.store.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bank.add_units(
        [
            NewUnit(f"Fact number {i} about the long listing", Network.WORLD,
                    vector=tuple(vectors[i].tolist()))
            for i in range(3000)
        ]
    )  # fmt: skip
    name = bank.name
    bank.close()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # Like `engram memories list BANK --limit 3000 | head -1`: the reader leaves early.
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; from core.cli import main; sys.exit(main())",
         "--home", str(engine.home),
         "memories", "list", name, "--limit", "3000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    first = child.stdout.readline()
    child.stdout.close()
    err = child.stderr.read().decode()
    child.wait(timeout=120)
    assert b"Fact number" in first
    assert "BrokenPipeError" not in err and "Traceback" not in err, err
    assert child.returncode == 0


@pytest.mark.slow
def test_recall_trace_goes_to_a_file_or_a_short_summary(demo_home, tmp_path, capsys):
    home, name = demo_home
    trace = tmp_path / "trace.json"
    assert run(home, "recall", name, "Where does Maya work?", "--trace", str(trace)) == 0
    out = capsys.readouterr().out
    assert f"trace written to {trace}" in out and '"channels"' not in out
    data = json.loads(trace.read_text("utf-8"))
    assert {"channels", "fused", "packing", "timings_ms"} <= set(data)

    assert run(home, "recall", name, "Where does Maya work?", "--trace") == 0
    out = capsys.readouterr().out
    summary = out[out.index("-- trace:") :].splitlines()
    assert 3 <= len(summary) <= 12
    assert any(line.strip().startswith("semantic") and "candidates" in line for line in summary)
    assert "{" not in out
    # The time window the question was read as, and how surely.
    assert "window   none: the query names no time" in out
    assert run(home, "recall", name, "What happened in the last week of March 2025?", "--trace") == 0
    out = capsys.readouterr().out
    assert "window   2025-03-25 to 2025-03-31 (read from 'the last week of March 2025'" in out
    assert "confidence 0.90" in out
    # The graph line counts waves (not the nodes each lit) and says in words why it stopped.
    query = "What caused the Atlas outage on June 23?"
    assert run(home, "recall", name, query, "--trace", str(trace)) == 0
    activation = json.loads(trace.read_text("utf-8"))["activation"]
    waves = len(activation["waves"])
    assert 1 <= waves < len(activation["steps"])
    capsys.readouterr()
    assert run(home, "recall", name, query, "--trace") == 0
    out = capsys.readouterr().out
    graph = next(line for line in out.splitlines() if " seeds, " in line)
    assert f" {waves} wave{'' if waves == 1 else 's'} of spreading, " in graph
    assert "steps" not in graph
    why = STOP_REASONS[activation["stopped"]]
    assert graph.endswith(f"lit; stopped: {why}")
    channel = next(line for line in out.splitlines() if " candidates, " in line and "graph" in line)
    assert channel.endswith(f"; stopped: {why}")  # the channel's note, in the same words


@pytest.mark.slow
def test_offline_reflect_prints_readable_evidence(demo_home, capsys, monkeypatch):
    for var in ("ENGRAM_OLLAMA_HOST", "ENGRAM_OLLAMA_MODEL"):
        monkeypatch.delenv(var, raising=False)
    home, name = demo_home
    assert run(home, "reflect", name, "What did Maya say about Lisbon?", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "Left out" in out
    left = out[out.index("Left out") :].split("\n\n")[0].splitlines()[1:]
    assert left and all(line.startswith("- “") and "” — " in line for line in left)
    # No line is a bare id.
    assert not re.search(r"^- \[[0-9a-f]{16}\]", out, re.MULTILINE)


@pytest.mark.slow
def test_entities_are_listed(demo_home, capsys):
    home, name = demo_home
    assert run(home, "entities", name) == 0
    out = capsys.readouterr().out
    assert "Maya" in out and "mentions" in out and "entities" in out.splitlines()[-1]
    assert run(home, "entities", name, "--search", "lisb", "--json") == 0
    found = json.loads(capsys.readouterr().out)
    assert found and all("lisb" in e["name"].lower() for e in found)
    # Merge hints: pairs that may be one, with why; the command merges nothing.
    assert run(home, "entities", name, "--hints") == 0
    out = capsys.readouterr().out
    assert "“Atlas” is part of “Project Atlas”" in out and "nothing was merged" in out
    assert run(home, "entities", name, "--hints", "--json") == 0
    hints = json.loads(capsys.readouterr().out)
    assert {"source_name", "target_name", "score", "reason"} <= set(hints[0])


@pytest.mark.slow
def test_ingest_and_export_report_the_same_link_count(engine, bank, tmp_path, capsys):
    name = bank.name
    bank.close()
    assert run(engine.home, "ingest", name, str(DEMO / "01-march-kickoff.txt"),
               "--mode", "rules", "--quiet", "--json") == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    ingested = sum(report["files"][0]["links"].values())
    assert run(engine.home, "export", name, str(tmp_path / "b.engram"), "--quiet") == 0
    exported = int(re.search(r"(\d+) links", capsys.readouterr().out).group(1))
    assert ingested == exported > 0
