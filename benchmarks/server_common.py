"""Shared by the server benchmarks: run `engram serve` as its own process, and
summarise latencies."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "benchmark-token-0123456789abcdef"


class ServeProcess:
    """`engram serve --port 0` on `home`, as a separate process (as a user runs it).

    `root`: the checkout whose code serves (default this one; a benchmark passes
    another checkout to time a baseline against the change in the same run)."""

    def __init__(self, home: Path, root: Path = ROOT) -> None:
        env = {
            **os.environ,
            "ENGRAM_API_TOKEN": TOKEN,
            "PYTHONPATH": str(root),
            "QT_QPA_PLATFORM": "offscreen",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.main", "--home", str(home), "serve", "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )
        started = time.perf_counter()
        for line in self.process.stdout:
            if line.startswith("engram: serving"):
                self.url = line.strip().rsplit(" at ", 1)[1]
                break
        else:
            self.stop()  # it closed its output without serving: make sure it is gone
            raise RuntimeError("engram serve did not start")
        self.start_seconds = time.perf_counter() - started
        self.headers = {"Authorization": f"Bearer {TOKEN}"}

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary_ms(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
    }
