"""Concurrent clients on one `engram serve`: 8 retain 2,000 messages in total
(one request per message, LoCoMo turns with their speakers and times) while 2
others recall. Reports retain throughput, each retain's latency, recall p50/p95
under that load, and whether anything acknowledged was lost: every message
answered 200 must be in the bank afterwards (checked with the server stopped),
and `verify` must pass.

    .venv/bin/python benchmarks/server_load.py [--messages 2000] [--writers 8]
        [--readers 2] [--mode rules]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from server_common import ServeProcess, summary_ms  # noqa: E402

from core import Engine, load_documents  # noqa: E402
from tests.shared_data import LOCOMO_DEV  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "server_load"
BANK = "load"


def messages(count: int) -> list[dict]:
    """LoCoMo turns as Hindsight retain items, one document each."""
    items = []
    for document in load_documents(LOCOMO_DEV, "locomo"):
        for turn in document.turns:
            items.append(
                {
                    "content": turn.text,
                    "timestamp": turn.timestamp.isoformat() if turn.timestamp else None,
                    "metadata": {"speaker": turn.speaker},
                    "context": document.title,
                    "document_id": f"m{len(items)}",
                }
            )
            if len(items) == count:
                return items
    raise SystemExit(f"only {len(items)} turns in the LoCoMo development split")


def questions() -> list[str]:
    data = json.loads(LOCOMO_DEV.read_text("utf-8"))
    return [qa["question"] for conv in data for qa in conv["qa"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--mode", default="rules", choices=["auto", "rules", "verbatim"])
    args = parser.parse_args()

    home = OUT / "home"
    if home.exists():
        shutil.rmtree(home)
    items = messages(args.messages)
    for item in items:
        item["strategy"] = args.mode
    asked = questions()
    server = ServeProcess(home)
    acknowledged: list[str] = []
    failures: list[str] = []
    retain_times: list[float] = []
    recall_times: list[float] = []
    done = threading.Event()
    lock = threading.Lock()

    def client() -> httpx.Client:
        return httpx.Client(base_url=server.url, headers=server.headers, timeout=300)

    def write(share: list[dict]) -> None:
        with client() as http:
            for item in share:
                started = time.perf_counter()
                r = http.post(f"/v1/default/banks/{BANK}/memories", json={"items": [item]})
                elapsed = time.perf_counter() - started
                with lock:
                    if r.status_code == 200:
                        acknowledged.append(item["document_id"])
                        retain_times.append(elapsed)
                    else:
                        failures.append(f"{r.status_code} {r.text[:200]}")

    def read(offset: int) -> None:
        with client() as http:
            n = offset
            while not done.is_set():
                started = time.perf_counter()
                r = http.post(
                    f"/v1/default/banks/{BANK}/memories/recall",
                    json={"query": asked[n % len(asked)], "max_tokens": 1024},
                )
                elapsed = time.perf_counter() - started
                with lock:
                    if r.status_code == 200:
                        recall_times.append(elapsed)
                    else:
                        failures.append(f"recall {r.status_code} {r.text[:200]}")
                n += args.readers

    try:
        with client() as http:
            http.put(f"/v1/default/banks/{BANK}", json={}).raise_for_status()
            # Warm: the bank opens and the first extraction runs before the clock starts.
            http.post(
                f"/v1/default/banks/{BANK}/memories",
                json={"items": [{"content": "Warm-up.", "document_id": "warm-up"}]},
            ).raise_for_status()
        shares = [items[i :: args.writers] for i in range(args.writers)]
        writers = [threading.Thread(target=write, args=(s,)) for s in shares]
        readers = [threading.Thread(target=read, args=(i,)) for i in range(args.readers)]
        started = time.perf_counter()
        for thread in writers + readers:
            thread.start()
        for thread in writers:
            thread.join()
        wall = time.perf_counter() - started
        done.set()
        for thread in readers:
            thread.join()
    finally:
        server.stop()

    with Engine(home) as engine:
        bank = engine.open_bank(BANK)
        stored = {d.id for d in bank.documents()}
        lost = [doc for doc in acknowledged if doc not in stored]
        verified = bank.verify().ok
        units = bank.count()

    result = {
        "messages": len(items),
        "writers": args.writers,
        "readers": args.readers,
        "mode": args.mode,
        "acknowledged": len(acknowledged),
        "failures": len(failures),
        "first_failures": failures[:3],
        "lost": len(lost),
        "verify_ok": verified,
        "units": units,
        "wall_s": round(wall, 1),
        "retains_per_s": round(len(acknowledged) / wall, 1),
        "retain": summary_ms(retain_times),
        "recall_under_load": summary_ms(recall_times) if recall_times else None,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
