"""Engram against Hindsight (and against a baseline checkout), pair by pair, over HTTP.

What an agent does: retain one LoCoMo conversation through Hindsight's HTTP API,
one turn per item in batches of 50 (synchronous), then recall each question.
Every server gets the same client, the same turns and the same questions; for
each question the servers are called back to back, in an order that rotates,
so a ratio per pair holds when the shared machine's speed drifts. Reported per
condition (`idle`, and `busy`: one core taken by a busy loop this script
starts): each server's median and p95, and the per-pair ratio to Engram.

- `--hs URL`: a running Hindsight (../shared/bench/hindsight-peer/ installs
  one). Without it, Engram runs alone.
- `--baseline ROOT`: another checkout (e.g. main before a change), served from
  a copy of the same bank, as a third side.

Engram serves on a free port (`engram serve --port 0`); its bank is built fresh
under benchmarks/out/side_by_side/ unless `--skip-retain`. After the HTTP part,
the bank is opened in-process and the same questions recalled once more for the
trace's own stage timings (median per stage).

    .venv/bin/python benchmarks/side_by_side.py [--hs http://127.0.0.1:8888]
        [--baseline /path/to/checkout] [--n 100] [--rounds 3] [--conditions idle busy]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from busy import condition  # noqa: E402
from server_common import ServeProcess, percentile  # noqa: E402

from tests.shared_data import LOCOMO_DEV  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "side_by_side"
BUDGET = 1024


def load_conversation(path: Path, conv: str) -> tuple[list[dict], list[str]]:
    """(turns as retain items' parts, questions of categories 1-4) of one
    conversation, as the Hindsight peer's own script reads them."""
    sample = next(s for s in json.loads(path.read_text("utf-8")) if s["sample_id"] == conv)
    c = sample["conversation"]
    turns = []
    n = 1
    while f"session_{n}" in c:
        when = datetime.strptime(
            c[f"session_{n}_date_time"].strip(), "%I:%M %p on %d %B, %Y"
        ).isoformat()
        for t in c[f"session_{n}"]:
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [image: {t['blip_caption']}]"
            turns.append({"text": text, "date": when, "dia_id": t["dia_id"]})
        n += 1
    questions = [q["question"] for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
    return turns, questions


class Side:
    """One server: its client and its bank's API path."""

    def __init__(self, name: str, base: str, bank: str, headers: dict | None = None) -> None:
        self.name = name
        self.http = httpx.Client(base_url=base, headers=headers or {}, timeout=900)
        self.api = f"/v1/default/banks/{bank}"
        self.bank = bank

    def retain(self, turns: list[dict], conv: str, batch: int) -> dict:
        self.http.delete(self.api)
        self.http.put(self.api, json={"name": self.bank}).raise_for_status()
        started = time.perf_counter()
        for i in range(0, len(turns), batch):
            items = [
                {"content": t["text"], "timestamp": t["date"], "document_id": f"{conv}:{t['dia_id']}"}
                for t in turns[i : i + batch]
            ]
            r = self.http.post(f"{self.api}/memories", json={"items": items, "async": False})
            if r.status_code != 200:
                raise SystemExit(f"{self.name} retain failed {r.status_code}: {r.text[:400]}")
        seconds = time.perf_counter() - started
        return {"seconds": round(seconds, 1), "turns_per_s": round(len(turns) / seconds, 1)}

    def recall(self, query: str) -> float:
        started = time.perf_counter()
        r = self.http.post(
            f"{self.api}/memories/recall",
            json={"query": query, "max_tokens": BUDGET, "budget": "mid"},
        )
        ms = (time.perf_counter() - started) * 1000
        if r.status_code != 200:
            raise SystemExit(f"{self.name} recall failed {r.status_code}: {r.text[:400]}")
        return ms


def summary(ms: list[float]) -> dict:
    return {
        "median_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
    }


def time_pairs(sides: list[Side], questions: list[str], rounds: int) -> dict:
    """Each question on every side back to back, the first side rotating; per side
    its median and p95, and per other side the median of its ratio to Engram."""
    for side in sides:  # warm-up, untimed
        side.recall(questions[0])
    times: dict[str, list[float]] = {s.name: [] for s in sides}
    ratios: dict[str, list[float]] = {s.name: [] for s in sides if s.name != "engram"}
    k = 0
    for _ in range(rounds):
        for query in questions:
            order = sides[k % len(sides) :] + sides[: k % len(sides)]
            k += 1
            got = {side.name: side.recall(query) for side in order}
            for name, ms in got.items():
                times[name].append(ms)
            for name in ratios:
                ratios[name].append(got["engram"] / got[name])
    out = {name: summary(ms) for name, ms in times.items()}
    for name, values in ratios.items():
        ordered = sorted(values)
        out[f"engram_over_{name}"] = {
            "median": round(statistics.median(values), 3),
            "p10": round(ordered[len(ordered) // 10], 3),
            "p90": round(ordered[9 * len(ordered) // 10], 3),
            "engram_faster_share": round(sum(r < 1 for r in values) / len(values), 3),
        }
    return out


def stages(home: Path, bank_name: str, questions: list[str]) -> dict:
    """Median of each stage in the recall trace, in-process, over the questions."""
    from core import Engine

    with Engine(home) as engine:
        bank = engine.open_bank(bank_name)
        bank.prepare_recall()
        bank.recall(questions[0], BUDGET, count_access=False)
        timings: dict[str, list[float]] = {}
        index = ""
        for query in questions:
            result = bank.recall(query, BUDGET, level="mid", count_access=False)
            for stage, ms in result.trace.timings_ms.items():
                timings.setdefault(stage, []).append(ms)
            semantic = result.trace.channels.get("semantic")
            index = semantic.details.get("index", "") if semantic else index
        medians = {k: round(statistics.median(v), 2) for k, v in timings.items()}
        return {
            "units": bank.count(),
            "semantic_index": index,
            "median_ms": dict(sorted(medians.items(), key=lambda kv: -kv[1])),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hs", help="a running Hindsight's URL (optional)")
    parser.add_argument("--baseline", type=Path, help="another checkout, served as a third side")
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DEV)
    parser.add_argument("--conv", default="conv-26")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--conditions", nargs="+", default=["idle", "busy"])
    parser.add_argument("--skip-retain", action="store_true", help="re-time recall on the banks there")
    parser.add_argument("--home", type=Path, default=OUT / "home")
    args = parser.parse_args()
    turns, questions = load_conversation(args.locomo, args.conv)
    questions = questions[: args.n]
    bank = f"sbs-{args.conv}"
    result: dict = {"conv": args.conv, "turns": len(turns), "questions": len(questions)}
    if not args.skip_retain and args.home.exists():
        shutil.rmtree(args.home)
    args.home.mkdir(parents=True, exist_ok=True)
    servers = [ServeProcess(args.home)]
    try:
        sides = [Side("engram", servers[0].url, bank, servers[0].headers)]
        if args.hs:
            sides.append(Side("hindsight", args.hs, bank))
        if not args.skip_retain:
            for side in sides:
                result[f"{side.name}_retain"] = side.retain(turns, args.conv, args.batch)
                print(side.name, "retained", result[f"{side.name}_retain"], flush=True)
        if args.baseline:
            base_home = OUT / "baseline-home"
            servers[0].stop()  # copied while no one writes it
            shutil.rmtree(base_home, ignore_errors=True)
            shutil.copytree(args.home, base_home)
            # One at a time into `servers`: if the baseline fails to start, the
            # Engram server already running is still stopped by the `finally`.
            servers = [ServeProcess(args.home)]
            servers.append(ServeProcess(base_home, args.baseline.resolve()))
            sides[0] = Side("engram", servers[0].url, bank, servers[0].headers)
            sides.append(Side("baseline", servers[1].url, bank, servers[1].headers))
        for name in args.conditions:
            with condition(name):
                result[name] = time_pairs(sides, questions, args.rounds)
                result[name]["load_average"] = round(os.getloadavg()[0], 2)
            print(name, json.dumps(result[name]), flush=True)
    finally:
        for server in servers:
            server.stop()
    result["engram_stages"] = stages(args.home, bank, questions)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
