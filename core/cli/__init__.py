"""`engram <command>`: everything the studio does, headless.

Each command group lives in its own module with a `register(subparsers)`
function that adds its commands; a command's handler takes the parsed
arguments and an `Engine` and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from core.types import EngramError

# Command-group modules under core.cli, in the order `engram --help` lists them.
COMMAND_MODULES = [
    "banks",
    "ingest",
    "recall",
    "reflect",
    "curate",
    "documents",
    "jobs",
    "snapshot",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="engram",
        description="Engram Studio: inspect and curate agent memory. "
        "Without a command, the studio opens.",
    )
    parser.add_argument("--home", help="data folder (default: ENGRAM_HOME or the user data dir)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"core.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    from core.engine import Engine

    engine = Engine(args.home)
    try:
        return int(args.handler(args, engine) or 0)
    except EngramError as error:
        print(f"engram: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("engram: interrupted", file=sys.stderr)
        return 130
    finally:
        engine.close()


if __name__ == "__main__":
    sys.exit(main())
