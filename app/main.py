"""The `engram` entry point: a subcommand runs headless, no arguments opens the studio.

Kept free of Qt imports at module level so headless commands start fast and
work on machines without a display.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # `screenshot` renders the studio, so it lives in `app` (core never imports app).
    if args and args[0] == "screenshot":
        from app.screenshot import main as screenshot_main

        return screenshot_main(args[1:])
    if any(not a.startswith("-") for a in args) or "-h" in args or "--help" in args:
        from core.cli import main as cli_main

        return cli_main(args)
    from app.studio import run_studio

    return run_studio(args)


if __name__ == "__main__":
    sys.exit(main())
