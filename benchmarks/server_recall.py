"""Recall over HTTP against in-process `Bank.recall`, on a LoCoMo-sized bank.

The bank is LoCoMo development conversations retained in rules mode until it
holds ~600 units (conv-26 and conv-30), built once under benchmarks/out/. The same questions are
recalled in-process (the bank open here), then over HTTP from `engram serve`
running as its own process (Hindsight's recall route, a keep-alive client).
Both include the query's embedding; the budget is the same (1024 tokens,
level mid). Reported: median and p95 of each, and their ratio.

    .venv/bin/python benchmarks/server_recall.py [--queries 100] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from server_common import ServeProcess, summary_ms  # noqa: E402

from core import Engine, load_documents  # noqa: E402
from tests.shared_data import LOCOMO_DEV  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "server_recall"
BANK = "locomo-dev"
BUDGET = 1024
UNITS = 600


def build(home: Path) -> None:
    if home.exists():
        shutil.rmtree(home)
    with Engine(home) as engine:
        bank = engine.create_bank(BANK)
        started = time.perf_counter()
        turns = 0
        for conversation in load_documents(LOCOMO_DEV, "locomo"):
            turns += bank.ingest(conversation, mode="rules").turns
            if bank.count() >= UNITS:
                break
        print(
            f"built {BANK}: {bank.count()} units from {turns} turns "
            f"in {time.perf_counter() - started:.0f} s",
            flush=True,
        )


def questions(limit: int) -> list[str]:
    data = json.loads(LOCOMO_DEV.read_text("utf-8"))
    return [qa["question"] for qa in data[0]["qa"]][:limit]


def in_process(home: Path, queries: list[str]) -> tuple[list[float], int]:
    with Engine(home) as engine:
        bank = engine.open_bank(BANK)
        bank.prepare_recall()
        bank.recall(queries[0], BUDGET)  # the model's first call is not the measured one
        times = []
        for query in queries:
            started = time.perf_counter()
            bank.recall(query, BUDGET, level="mid")
            times.append(time.perf_counter() - started)
        return times, bank.count()


def over_http(home: Path, queries: list[str]) -> tuple[list[float], float]:
    server = ServeProcess(home)
    try:
        path = f"/v1/default/banks/{BANK}/memories/recall"
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=120) as http:
            http.post(path, json={"query": queries[0], "max_tokens": BUDGET}).raise_for_status()
            times = []
            for query in queries:
                started = time.perf_counter()
                r = http.post(path, json={"query": query, "max_tokens": BUDGET, "budget": "mid"})
                times.append(time.perf_counter() - started)
                r.raise_for_status()
        return times, server.start_seconds
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    home = OUT / "home"
    if args.rebuild or not (home / "banks").exists():
        build(home)
    queries = questions(args.queries)
    local, units = in_process(home, queries)
    remote, start_seconds = over_http(home, queries)
    local_s, remote_s = summary_ms(local), summary_ms(remote)
    result = {
        "units": units,
        "queries": len(queries),
        "in_process": local_s,
        "http": remote_s,
        "ratio_median": round(remote_s["median_ms"] / local_s["median_ms"], 2),
        "ratio_p95": round(remote_s["p95_ms"] / local_s["p95_ms"], 2),
        "engram_serve_start_s": round(start_seconds, 1),
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
