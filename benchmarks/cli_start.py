"""Cold start of the `engram` command, against `python -c pass` in the same run.

Each command runs in a fresh interpreter (`python -m app.main ...` with the
repository on PYTHONPATH), `--runs` times; the table gives the median wall
time and its ratio to `python -c pass` measured alongside, and the median CPU
time (user + system) of the process (the machine is shared: ratios and CPU
seconds compare across runs, wall seconds do not):

- `engram --help`
- `engram banks`
- `engram recall BANK QUERY` on a LoCoMo-sized bank (one LoCoMo dev
  conversation, verbatim, built under --home on the first run)

    .venv/bin/python benchmarks/cli_start.py [--runs 5] [--repo DIR]

--repo measures another checkout with the same interpreter (e.g. before a change).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
BANK = "locomo conv-26"
QUERY = "When did Caroline go to the LGBTQ support group?"


def ensure_bank(home: Path, repo: Path) -> None:
    """A LoCoMo conversation as a verbatim bank, built once (with `repo`'s code)."""
    code = f"""
import sys
from core import Engine, load_documents
with Engine({str(home)!r}) as engine:
    if {BANK!r} not in [b.name for b in engine.banks()]:
        [doc] = [d for d in load_documents({str(DATA)!r}, "locomo") if d.title == "conv-26"]
        with engine.create_bank({BANK!r}) as bank:
            bank.ingest(doc, mode="verbatim")
"""
    subprocess.run([sys.executable, "-c", code], env=_env(repo, home), check=True)


def _env(repo: Path, home: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(repo), "ENGRAM_HOME": str(home)}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict, cwd: Path, runs: int) -> dict[str, float]:
    """Median wall and CPU seconds of `argv` in a fresh process."""
    wall, cpu = [], []
    for _ in range(runs):
        c, t = _children_cpu(), time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
        wall.append(time.perf_counter() - t)
        cpu.append(_children_cpu() - c)
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed: {done.stderr[-2000:]}")
    return {"wall": statistics.median(wall), "cpu": statistics.median(cpu)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repo", type=Path, default=ROOT, help="checkout to measure")
    parser.add_argument("--home", type=Path, default=ROOT / "benchmarks" / "out" / "cli-home")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    home = args.home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    ensure_bank(home, repo)
    env = _env(repo, home)
    engram = [sys.executable, "-m", "app.main"]
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "engram --help": [*engram, "--help"],
        "engram banks": [*engram, "banks"],
        "engram recall (LoCoMo bank)": [*engram, "recall", BANK, QUERY],
    }
    results = {name: timed(cmd, env, repo, args.runs) for name, cmd in commands.items()}
    baseline = results["python -c pass"]["wall"]
    print(f"\n{repo}  (median of {args.runs} runs, cores: {os.cpu_count()})")
    print(f"{'command':<30}| {'wall s':>8} | {'x python -c pass':>16} | {'CPU s':>7}")
    for name, r in results.items():
        print(f"{name:<30}| {r['wall']:>8.3f} | {r['wall'] / baseline:>16.1f} | {r['cpu']:>7.2f}")
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"cli_start-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"repo": str(repo), "runs": args.runs, **results}, indent=2))
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
