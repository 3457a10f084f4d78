"""A fresh Python interpreter on this checkout, for what only a new process can
show: which modules a command loads, how the studio starts. Its environment is
bare (a PATH, the checkout on PYTHONPATH, Qt offscreen) plus what the caller
adds, so nothing from the test process leaks in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_python(args: list[str], **env: str) -> subprocess.CompletedProcess:
    """`python ARGS` in the checkout, with `env` added; output captured as text."""
    base = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, *args],
        env={**base, **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
