"""The `engram` entry point: a subcommand runs headless, no arguments opens the studio.

Kept free of Qt imports at module level so headless commands start fast and
work on machines without a display.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def command_of(args: Sequence[str]) -> str | None:
    """The subcommand in `args`, if any: the first word that is not an option
    (nor the value of `--home`, which the studio takes too)."""
    words = iter(args)
    for word in words:
        if word == "--home":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command = command_of(args)
    # `screenshot` renders the studio, so it lives in `app` (core never imports app).
    if command == "screenshot":
        from app.screenshot import main as screenshot_main

        rest = list(args)
        rest.remove("screenshot")
        return screenshot_main(rest)
    if command is not None or "-h" in args or "--help" in args:
        from core.cli import main as cli_main

        return cli_main(args)
    from app.studio import run_studio

    return run_studio(args)


if __name__ == "__main__":
    sys.exit(main())
