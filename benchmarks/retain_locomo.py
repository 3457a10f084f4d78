"""Rules-mode retain of the whole LoCoMo dev split, each conversation its own bank.

Prints, per conversation and in total: turns/s, facts/s, the share of the
time spent embedding, and the process's peak RSS (resource.getrusage). The
embedding model is loaded (and warmed) before the clock starts; the
observation jobs retain queues are run after it, timed separately.

    .venv/bin/python benchmarks/retain_locomo.py [--data PATH] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import Engine  # noqa: E402
from core.providers.embedder import shared_embedder  # noqa: E402
from core.retain.importers import load_documents  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev" / "locomo-dev.json"


def peak_rss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    embedder = shared_embedder()
    embedder.embed(["warm up the model"])
    documents = load_documents(args.data)
    rows = []
    totals = {"turns": 0, "facts": 0, "seconds": 0.0, "embed": 0.0, "jobs": 0.0}
    with tempfile.TemporaryDirectory(prefix="retain-bench-") as home:
        engine = Engine(home, embedder=embedder)
        for document in documents:
            bank = engine.create_bank(document.title)
            start = time.perf_counter()
            report = bank.ingest(document, mode="rules")
            seconds = time.perf_counter() - start
            start = time.perf_counter()
            jobs = bank.process_jobs()
            job_seconds = time.perf_counter() - start
            row = {
                "conversation": document.title,
                "turns": report.turns,
                "facts": report.facts_total,
                "entities": report.entities_new,
                "links": sum(report.links.values()),
                "seconds": round(seconds, 2),
                "turns_per_s": round(report.turns / seconds, 1),
                "facts_per_s": round(report.facts_total / seconds, 1),
                "embed_share": round(report.timings.get("embed", 0.0) / seconds, 3),
                "timings": {k: round(v, 2) for k, v in report.timings.items()},
                "observations": jobs.observations_written,
                "observation_seconds": round(job_seconds, 2),
            }
            rows.append(row)
            totals["turns"] += report.turns
            totals["facts"] += report.facts_total
            totals["seconds"] += seconds
            totals["embed"] += report.timings.get("embed", 0.0)
            totals["jobs"] += job_seconds
            print(
                f"{row['conversation']}: {row['turns']} turns, {row['facts']} facts, "
                f"{row['entities']} entities, {row['links']} links in {row['seconds']} s "
                f"({row['turns_per_s']} turns/s, {row['facts_per_s']} facts/s, "
                f"embedding {row['embed_share']:.0%}); "
                f"{row['observations']} observations in {row['observation_seconds']} s",
                flush=True,
            )
            bank.close()
        engine.close()
    summary = {
        "conversations": len(rows),
        "turns": totals["turns"],
        "facts": totals["facts"],
        "seconds": round(totals["seconds"], 2),
        "turns_per_s": round(totals["turns"] / totals["seconds"], 1),
        "facts_per_s": round(totals["facts"] / totals["seconds"], 1),
        "embed_share": round(totals["embed"] / totals["seconds"], 3),
        "observation_seconds": round(totals["jobs"], 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(
        f"total: {summary['turns']} turns, {summary['facts']} facts in {summary['seconds']} s — "
        f"{summary['turns_per_s']} turns/s, {summary['facts_per_s']} facts/s, "
        f"embedding {summary['embed_share']:.0%} of the time; "
        f"observations {summary['observation_seconds']} s; peak RSS {summary['peak_rss_mb']} MB"
    )
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "conversations": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
