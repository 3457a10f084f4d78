"""What the activity journal costs a recall and a retain over HTTP: journal on
against off, interleaved in one run.

Two copies of one LoCoMo-sized bank (built as benchmarks/server_recall.py
builds it, ~600 units in rules mode) are served by one `engram serve`
process; one records its activity (the default), the other has
`journal.record` off. Each question is recalled on both, in ABBA order (on,
off, off, on, ...), through Hindsight's recall route with a keep-alive client,
so drift on a busy machine falls on both alike. Then as many retains (one
LoCoMo turn each, rules mode) in the same ABBA order. Reported: median and
p95 of each, the median of the per-call ratio on/off, the bytes the journal
keeps per recall and per retain (its entries' own count), journal.duckdb's
size once closed, and a recall's trace raw (its JSON) and compressed (as
stored: zlib level 3).

    .venv/bin/python benchmarks/journal_cost.py [--queries 100] [--retains 100] [--rebuild]

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
import zlib
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from server_common import ServeProcess, summary_ms  # noqa: E402
from server_recall import BANK, BUDGET, build, questions  # noqa: E402

from core import Engine, load_documents  # noqa: E402
from tests.shared_data import LOCOMO_DEV  # noqa: E402

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
    parser.add_argument("--retains", type=int, default=100)
    parser.add_argument("--rebuild", action="store_true", help="build the source bank again")
    args = parser.parse_args()
    home = OUT / "home"
    prepare(home, args.rebuild)
    asked = questions(args.queries)
    said = turns(args.retains)
    server = ServeProcess(home)
    try:
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=120) as http:

            def recall(bank: str, query: str) -> None:
                body = {"query": query, "max_tokens": BUDGET, "budget": "mid"}
                r = http.post(f"/v1/default/banks/{bank}/memories/recall", json=body)
                r.raise_for_status()

            def retain(bank: str, text: str) -> None:
                body = {"items": [{"content": text, "strategy": "rules"}]}
                r = http.post(f"/v1/default/banks/{bank}/memories", json=body)
                r.raise_for_status()

            for bank in (ON, OFF):  # warm each: the link graph, the first embedding
                for query in asked[:3]:
                    recall(bank, query)
                retain(bank, said[0])
            measured = {}
            for name, call, inputs in (("recall", recall, asked), ("retain", retain, said[1:])):
                seen = _entries(http, ON)[-1]["id"]
                measured[name] = interleaved(call, inputs)
                entries = [e for e in _entries(http, ON) if e["id"] > seen]
                measured[name]["entries"] = [e for e in entries if e["kind"] == name]
            traces = [
                http.get(f"/engram/v1/banks/{ON}/activity/{e['id']}").json()["entry"]["detail"]
                for e in measured["recall"]["entries"][:20]
            ]
            journaled = len(_entries(http, ON))
            assert not _entries(http, OFF), (
                "the journal of the bank with recording off is not empty"
            )
    finally:
        server.stop()
    report: dict = {}
    for name, m in measured.items():
        n = len(m["ratios"])
        kept = [e["size"] for e in m["entries"]]
        report[name] = {
            "calls": n,
            "journal_on": summary_ms(m[ON]),
            "journal_off": summary_ms(m[OFF]),
            "median_ratio_on_off": round(statistics.median(m["ratios"]), 3),
            "journal_cost_percent": round(100 * (statistics.median(m["ratios"]) - 1), 1),
            "journaled": len(kept),
            "bytes_per_entry": round(statistics.mean(kept)) if kept else 0,
        }
    # The file once closed (checkpointed: while it runs, its write-ahead log holds
    # each commit's blocks as well), against every entry it holds.
    size = _journal_bytes(home / "banks", ON)
    report["journal_file"] = {
        "bytes": size,
        "entries": journaled,
        "bytes_per_entry": round(size / max(1, journaled)),
    }
    raw = [json.dumps(t, ensure_ascii=False, separators=(",", ":")).encode() for t in traces]
    report["recall_trace"] = {
        "sampled": len(raw),
        "raw_bytes_median": round(statistics.median(len(r) for r in raw)),
        "zlib3_bytes_median": round(statistics.median(len(zlib.compress(r, 3)) for r in raw)),
        "zlib6_bytes_median": round(statistics.median(len(zlib.compress(r, 6)) for r in raw)),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "report.json").write_text(json.dumps(report, indent=2), "utf-8")
    print(json.dumps(report, indent=2))
    for name in measured:
        r = report[name]
        cost = r["journal_cost_percent"]
        print(
            f"{name}: journal on {r['journal_on']['median_ms']} ms,"
            f" off {r['journal_off']['median_ms']} ms (medians); median on/off per call"
            f" {r['median_ratio_on_off']} -> the journal costs {cost}%"
            f" ({'within' if cost < 10 else 'OVER'} the 10% bound);"
            f" {r['bytes_per_entry']:,} bytes kept per entry"
        )
    t = report["recall_trace"]
    print(
        f"a recall's trace: {t['raw_bytes_median']:,} bytes raw, {t['zlib3_bytes_median']:,} stored;"
        f" journal.duckdb {size:,} bytes for {journaled} entries"
    )


def interleaved(call, inputs: list[str]) -> dict:
    """Each input on both banks, in ABBA order; the seconds of each, and the ratios."""
    out: dict = {ON: [], OFF: [], "ratios": []}
    for i, value in enumerate(inputs):
        took = {}
        for bank in (ON, OFF) if i % 2 == 0 else (OFF, ON):
            started = time.perf_counter()
            call(bank, value)
            took[bank] = time.perf_counter() - started
            out[bank].append(took[bank])
        out["ratios"].append(took[ON] / took[OFF])
    return out


def turns(limit: int) -> list[str]:
    """Turns of the last LoCoMo conversation (the banks hold the first ones)."""
    [conversation] = list(load_documents(LOCOMO_DEV, "locomo"))[-1:]
    said = [t.text for t in conversation.turns if len(t.text) > 40]
    return said[: limit + 1]


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
