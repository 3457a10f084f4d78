"""What the activity journal costs a recall over HTTP: journal on against off,
interleaved in one run.

Two copies of one LoCoMo-sized bank (built as benchmarks/server_recall.py
builds it, ~600 units in rules mode) are served by one `engram serve`
process; one records its activity (the default), the other has
`journal.record` off. Each question is recalled on both, in ABBA order (on,
off, off, on, ...), through Hindsight's recall route with a keep-alive client,
so drift on a busy machine falls on both alike. Reported: median and p95 of
each, the median of the per-question ratio on/off, and the bytes the journal
keeps per recall (its entries' own count, and journal.duckdb's growth).

    .venv/bin/python benchmarks/journal_cost.py [--queries 100] [--rebuild]

The journal must cost under 10% of recall time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from server_common import ServeProcess, summary_ms  # noqa: E402
from server_recall import BANK, BUDGET, build, questions  # noqa: E402

from core import Engine  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "journal_cost"
ON, OFF = "journal-on", "journal-off"


def prepare(home: Path, rebuild: bool) -> None:
    source = OUT / "source-home"
    if rebuild or not _built(source):
        build(source)
    if home.exists():
        shutil.rmtree(home)
    with Engine(source) as engine:
        folder = engine.open_bank(BANK).folder
    with Engine(home) as engine:
        for name in (ON, OFF):
            bank = engine.create_bank(name)
            target = bank.folder
            bank.close()
            label = (target / "bank.json").read_text("utf-8")  # its own name (and id)
            shutil.rmtree(target)
            shutil.copytree(
                folder, target, ignore=shutil.ignore_patterns("journal.duckdb*", "bank.lock")
            )
            (target / "bank.json").write_text(label, "utf-8")
        engine.open_bank(OFF).set_profile(config={"journal.record": False})
        for name in (ON, OFF):  # each starts with an empty journal
            for path in engine.open_bank(name).folder.glob("journal.duckdb*"):
                path.unlink()


def _built(home: Path) -> bool:
    if not (home / "banks").exists():
        return False
    with Engine(home) as engine:
        return BANK in {b.name for b in engine.banks()} and engine.open_bank(BANK).count() > 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rebuild", action="store_true", help="build the source bank again")
    args = parser.parse_args()
    home = OUT / "home"
    prepare(home, args.rebuild)
    asked = questions(args.queries)
    server = ServeProcess(home)
    times: dict[str, list[float]] = {ON: [], OFF: []}
    ratios = []
    try:
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=120) as http:

            def recall(bank: str, query: str) -> float:
                body = {"query": query, "max_tokens": BUDGET, "budget": "mid"}
                started = time.perf_counter()
                r = http.post(f"/v1/default/banks/{bank}/memories/recall", json=body)
                elapsed = time.perf_counter() - started
                r.raise_for_status()
                return elapsed

            for bank in (ON, OFF):  # warm each: the link graph, the first embedding
                for query in asked[:3]:
                    recall(bank, query)
            journal = home / "banks"
            before = _journal_bytes(journal, ON)
            entries_before = _entries(http, ON)
            for i, query in enumerate(asked):
                order = (ON, OFF) if i % 2 == 0 else (OFF, ON)
                took = {bank: recall(bank, query) for bank in order}
                for bank, seconds in took.items():
                    times[bank].append(seconds)
                ratios.append(took[ON] / took[OFF])
            entries = _entries(http, ON)[len(entries_before) :]
            recorded = [e for e in entries if e["operation"] == "recall"]
            kept = sum(e["size"] for e in recorded)
            assert not _entries(http, OFF), "the journal of the bank with recording off is not empty"
    finally:
        server.stop()
    grown = _journal_bytes(home / "banks", ON) - before
    on, off = summary_ms(times[ON]), summary_ms(times[OFF])
    cost = statistics.median(ratios) - 1
    report = {
        "queries": len(asked),
        "journal_on": on,
        "journal_off": off,
        "median_ratio_on_off": round(statistics.median(ratios), 3),
        "journal_cost_percent": round(100 * cost, 1),
        "recalls_journaled": len(recorded),
        "bytes_per_recall_entry": round(kept / max(1, len(recorded))),
        "journal_file_growth_per_recall": round(grown / max(1, len(asked))),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report.json").write_text(json.dumps(report, indent=2), "utf-8")
    print(json.dumps(report, indent=2))
    print(
        f"journal on {on['median_ms']} ms, off {off['median_ms']} ms (medians);"
        f" median on/off per question {report['median_ratio_on_off']}"
        f" -> the journal costs {report['journal_cost_percent']}% of a recall"
        f" ({'within' if cost < 0.10 else 'OVER'} the 10% bound);"
        f" {report['bytes_per_recall_entry']:,} bytes kept per recall"
    )


def _entries(http: httpx.Client, bank: str) -> list[dict]:
    out, before = [], None
    while True:
        params = {"limit": 1000, **({"before": before} if before else {})}
        page = http.get(f"/engram/v1/banks/{bank}/activity", params=params).json()
        out += page["entries"]
        before = page["next_before"]
        if before is None:
            return list(reversed(out))


def _journal_bytes(banks: Path, name: str) -> int:
    for folder in banks.iterdir():
        label = folder / "bank.json"
        if label.exists() and json.loads(label.read_text("utf-8")).get("name") == name:
            return sum(p.stat().st_size for p in folder.glob("journal.duckdb*"))
    return 0


if __name__ == "__main__":
    main()
