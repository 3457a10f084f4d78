"""Snapshot export and import of a 100,000-unit bank: time and peak RSS.

Builds a bank of random unit vectors (fixed seed; no model is loaded: the
vectors are given), then exports it and imports it back, each in its own
child process so each peak RSS is its own. The target is < 500 MB peak RSS
for both, which streaming (record batches, never a whole table) makes
independent of the bank's size.

    .venv/bin/python benchmarks/snapshot_roundtrip.py [--units 100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODEL = ("sentence-transformers/all-MiniLM-L6-v2", 384)
WORDS = (
    "alice bob carol dave office garden concert cello bike paris lisbon river mountain "
    "coffee meeting project deadline holiday music book film dinner train school friend"
).split()


class GivenVectors:
    """Stands in for the embedder: the default model's name and size, never called."""

    name, dim = MODEL

    def embed(self, texts, batch_size=64):
        raise AssertionError("the benchmark gives every vector; nothing should embed")

    def embed_one(self, text):
        return self.embed([text])


def build(home: Path, units: int) -> None:
    import numpy as np

    from core import Engine, NewUnit

    rng = np.random.default_rng(7)
    with Engine(home, embedder=GivenVectors()) as engine:
        bank = engine.create_bank("bench")
        batch = 5000
        for start in range(0, units, batch):
            n = min(batch, units - start)
            vectors = rng.standard_normal((n, MODEL[1])).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            words = rng.integers(0, len(WORDS), size=(n, 8))
            bank.add_units(
                [
                    NewUnit(
                        text=f"fact {start + i}: " + " ".join(WORDS[w] for w in words[i]),
                        vector=tuple(vectors[i].tolist()),
                    )
                    for i in range(n)
                ]
            )
        bank.store.vectors.compact()


def peak_rss_kb() -> int:
    """This process's peak RSS. VmHWM starts afresh at exec; ru_maxrss would carry
    the parent's peak over into the child on Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(mode: str, home: str, path: str) -> None:
    """Run one side in this process and print its time and peak RSS as JSON."""
    from core import Engine

    with Engine(home, embedder=GivenVectors()) as engine:
        start = time.perf_counter()
        if mode == "export":
            engine.open_bank("bench").export_snapshot(path)
        else:
            bank = engine.import_snapshot(path, name="bench copy")
        seconds = time.perf_counter() - start
        # The peak of the operation itself; the full verify below loads every
        # vector at once (the store's check, not the import's) and is not counted.
        peak_kb = peak_rss_kb()
        out = {"mode": mode, "seconds": round(seconds, 2), "peak_rss_mb": round(peak_kb / 1024, 1)}
        if mode == "import":
            out["units"] = bank.count(status=None)
            out["verify_ok"] = bank.verify().ok
    print(json.dumps(out))


def run_child(mode: str, home: Path, path: Path) -> dict:
    result = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(home), str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--keep", help="build in this folder and keep it")
    parser.add_argument(
        "--child", nargs=3, metavar=("MODE", "HOME", "PATH"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="engram-bench-"))
    try:
        home, path = folder / "home", folder / "bench.engram"
        start = time.perf_counter()
        build(home, args.units)
        print(f"built {args.units:,} units in {time.perf_counter() - start:.1f} s")
        export = run_child("export", home, path)
        size = path.stat().st_size / (1 << 20)
        print(
            f"export: {export['seconds']} s, peak RSS {export['peak_rss_mb']} MB, {size:.1f} MB file"
        )
        imported = run_child("import", home, path)
        print(
            f"import: {imported['seconds']} s, peak RSS {imported['peak_rss_mb']} MB,"
            f" {imported['units']:,} units, verify {'ok' if imported['verify_ok'] else 'FAILED'}"
        )
        ok = max(export["peak_rss_mb"], imported["peak_rss_mb"]) < 500
        print("OK: both under 500 MB peak RSS" if ok else "OVER the 500 MB target")
        return 0 if ok and imported["units"] == args.units and imported["verify_ok"] else 1
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
