"""Wall time of a whole `engram recall` command: routed to a running `engram serve`,
against the same command opening the bank itself, and `python -c pass`, all in one
run (ratios are what to compare; absolute times depend on the machine's load).

Builds a bank from the demo conversations (rules mode) in a temporary data folder,
times N direct runs, starts `engram serve` on a free port, times N routed runs,
stops the server and deletes the folder. Prints JSON.

    .venv/bin/python benchmarks/routed_recall.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGRAM = [sys.executable, "-c", "import sys; from app.main import main; sys.exit(main())"]
BANK = "bench"
QUERY = "Where did Maya move?"


def timed(command: list[str], env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return elapsed


def summary(times: list[float]) -> dict:
    return {"median_s": round(statistics.median(times), 3), "runs_s": [round(t, 3) for t in times]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="engram-routed-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ENGRAM_API_TOKEN": "routed-recall-benchmark-" + "x" * 16,
    }
    recall = [*ENGRAM, "--home", str(home), "recall", BANK, QUERY]
    server = None
    try:
        subprocess.run([*ENGRAM, "--home", str(home), "bank", "create", BANK], env=env, check=True)
        demo = sorted(str(p) for p in (REPO / "resources" / "demo").glob("0*"))
        subprocess.run(
            [*ENGRAM, "--home", str(home), "ingest", BANK, *demo, "--mode", "rules", "--quiet"],
            env=env,
            check=True,
            capture_output=True,
        )
        python = [timed([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
        direct = [timed(recall, env) for _ in range(args.runs)]
        server = subprocess.Popen(
            [*ENGRAM, "--home", str(home), "serve", "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        url = next(m.group(0) for line in server.stdout if (m := re.search(r"http://\S+", line)))
        opened = urllib.request.Request(
            f"{url}/engram/v1/banks/{BANK}",
            headers={"Authorization": f"Bearer {env['ENGRAM_API_TOKEN']}"},
        )
        urllib.request.urlopen(opened, timeout=120).read()  # the server opens (owns) the bank
        routed = [timed(recall, env) for _ in range(args.runs)]
        load = os.getloadavg()
        print(
            json.dumps(
                {
                    "python_pass": summary(python),
                    "direct_recall": summary(direct),
                    "routed_recall": summary(routed),
                    "routed_over_direct": round(
                        statistics.median(routed) / statistics.median(direct), 3
                    ),
                    "routed_over_python": round(
                        statistics.median(routed) / statistics.median(python), 1
                    ),
                    "load_average_1_5_15": [round(x, 1) for x in load],
                    "cpus": os.cpu_count(),
                },
                indent=2,
            )
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=60)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
