"""Where the project's shared data lives: `shared/` beside the checkout (as CI
lays it out), or wherever ENGRAM_SHARED points."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("ENGRAM_SHARED") or Path(__file__).resolve().parents[2] / "shared")
LOCOMO_DEV = SHARED / "data" / "locomo-dev" / "locomo-dev.json"
