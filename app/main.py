"""The `engram` entry point: one parser tree; a command runs headless, none opens the studio.

The engine's commands come from core.cli, the studio's own (`screenshot`) from
app; every command module imports lazily, so `engram --help` and argument
errors load neither Qt nor the stores nor the embedding model.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    from app import screenshot
    from core.cli import DESCRIPTION
    from core.cli import build_parser as engine_parser

    parser, sub = engine_parser(f"{DESCRIPTION} Without a command, the studio opens.")
    parser.add_argument(
        "--no-demo", action="store_true", help="do not build the demo bank on a first start"
    )
    # The desktop launcher runs `engram --open %f`; from the menu %f is nothing, and
    # then it opens the studio.
    parser.add_argument(
        "--open",
        metavar="FILE",
        nargs="?",
        help="open the studio; with a .engram snapshot, offer to import it as a bank",
    )
    screenshot.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    if args.command is None:
        from app.studio import run_studio

        return run_studio(args)
    if getattr(args, "standalone", None):  # a studio command: no Engine of ours
        return int(args.standalone(args) or 0)
    from core.cli import run

    return run(args, parser)


if __name__ == "__main__":
    sys.exit(main())
