"""The public-index dry run, started in the background when a run's collection ends.

`pip install --dry-run` against the public index resolves every dependency of
the wheel over the network: tens of seconds of which most is waiting on HTTP.
Run inside its test, that wait held one of the two workers; started as soon as
the run knows the test is in it (by whichever worker collects first, under a
file lock), it overlaps the rest of the suite, and the test, ordered last
(`late`), reads what it found. The command and what the test checks are the
same as when it ran inline.

`python -m tests.packaging.public_index FOLDER REQUIREMENT...` is the child:
it writes pip's report, its stderr and, last, its exit code (a file renamed
into place, so a reader sees either nothing or the whole code).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PUBLIC_INDEX = "https://pypi.org/simple"
# What the child's pip may take (the inline run had the same limit), and a
# margin for the child's own start.
PIP_TIMEOUT = 600
WAIT = PIP_TIMEOUT + 60


@dataclass(frozen=True)
class DryRun:
    returncode: int
    stderr: str
    report: Path


def start(folder: Path, requirements: list[str]) -> None:
    """Start the dry run into `folder` (once: a second call finds it started)."""
    from filelock import FileLock

    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / "start.lock")):
        started = folder / "started"
        if started.exists():
            return
        # Its own session: the run's Ctrl-C or a worker's exit does not cut it
        # short; it ends by itself when pip does (bounded by PIP_TIMEOUT).
        subprocess.Popen(
            [sys.executable, "-m", "tests.packaging.public_index", str(folder), *requirements],
            cwd=Path(__file__).resolve().parents[2],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        started.touch()


def result(folder: Path) -> DryRun:
    """What the dry run started into `folder` found, waiting for it to finish."""
    code = folder / "returncode"
    deadline = time.monotonic() + WAIT
    while not code.exists():
        assert time.monotonic() < deadline, f"the dry run in {folder} did not finish"
        time.sleep(0.2)
    stderr = folder / "stderr.txt"
    return DryRun(int(code.read_text()), stderr.read_text(errors="replace"), folder / "report.json")


def run(folder: Path, requirements: list[str]) -> None:
    # Only the public index: no local wheel folders or extra indexes from pip's config.
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""}
    env.pop("PIP_EXTRA_INDEX_URL", None)
    command = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
        "--report", str(folder / "report.json"), "--index-url", PUBLIC_INDEX, *requirements,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=PIP_TIMEOUT)
        returncode, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired as timeout:
        returncode, stderr = -1, f"pip did not finish in {PIP_TIMEOUT} s: {timeout}"
    (folder / "stderr.txt").write_text(stderr)
    partial = folder / "returncode.partial"
    partial.write_text(str(returncode))
    partial.replace(folder / "returncode")


if __name__ == "__main__":
    run(Path(sys.argv[1]), sys.argv[2:])
